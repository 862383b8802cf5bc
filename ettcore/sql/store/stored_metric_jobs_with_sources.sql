-- metric_jobs as a view of the stored rows (res_metric_jobs) of a store of several sources: each job named and keyed
-- by source/job_id, with its source as a label.
CREATE TEMP VIEW metric_jobs AS
SELECT
    hash(r.source || '/' || r.job_id) AS job_key,
    r.source || '/' || r.job_id AS job_id,
    * EXCLUDE (source, ingest_id, job_key, job_id),
    r.source AS source
FROM st.res_metric_jobs AS r
