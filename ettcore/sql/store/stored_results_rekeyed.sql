-- The stored rows of the result table {{result}} (keyed by job_key) as the metric's table of the same rows, on a store
-- of several sources: each job's key that of source/job_id (ett_rekey: rekeyed_jobs.sql).
SELECT k.read_key AS job_key, * EXCLUDE (source, ingest_id, job_key, read_key)
FROM st.{{result}} AS r
JOIN ett_rekey AS k USING (source, job_key)
