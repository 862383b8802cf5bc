-- metric_jobs as a view of the stored rows (res_metric_jobs).
CREATE TEMP VIEW metric_jobs AS
SELECT * EXCLUDE (source, ingest_id) FROM st.res_metric_jobs
