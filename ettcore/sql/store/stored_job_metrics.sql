-- The stored per-job results (res_job_metrics) as job_summary.sql writes them: in job id order.
SELECT * EXCLUDE (source, ingest_id) FROM st.res_job_metrics ORDER BY job_id
