-- How the views over a store's rows name a job when it holds several sources: source/job_id (job ids are unique
-- within a source only).
CREATE OR REPLACE TEMP MACRO ett_job_id(source, job_id) AS source || '/' || job_id
