-- The stored per-job results (res_job_metrics) of a store of several sources, as job_summary.sql writes them: each
-- job named source/job_id, with its source as a label, in id order.
SELECT r.source || '/' || r.job_id AS job_id, * EXCLUDE (source, ingest_id, job_id), r.source AS source
FROM st.res_job_metrics AS r
ORDER BY 1
