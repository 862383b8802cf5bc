-- The stored rows of the result table {{result}} (keyed by job_id, its first column) as the metric's table of the
-- same rows, job ids named by ett_job_id.
SELECT ett_job_id(r.source, r.job_id) AS job_id, * EXCLUDE (source, ingest_id, job_id)
FROM st.{{result}} AS r
