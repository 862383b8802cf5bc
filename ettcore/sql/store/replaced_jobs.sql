-- The incoming jobs a refresh stores, new or changed (ett_cmp: compared_jobs.sql), with $source and their job key.
CREATE OR REPLACE TEMP TABLE ett_replace AS
SELECT $source AS source, job_id, hash(job_id) AS job_key
FROM ett_cmp
WHERE is_new OR changed
