-- The job key each stored job has on a store of several sources (hash of source/job_id, the id the views show)
-- beside its key within its source.
CREATE TEMP TABLE ett_rekey AS
SELECT source, job_key, hash(source || '/' || job_id) AS read_key
FROM st.ett_jobs
