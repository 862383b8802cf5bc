-- How the views over a store's rows name a job: by its id, as its one source gave it.
CREATE OR REPLACE TEMP MACRO ett_job_id(source, job_id) AS job_id
