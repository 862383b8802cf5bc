-- The stored stalls of the default threshold (res_train_stalls) in train_stalls.sql's order (a stored table keeps its
-- rows in the order they were written), job ids named by ett_job_id.
SELECT *
FROM (
    SELECT ett_job_id(r.source, r.job_id) AS job_id, * EXCLUDE (source, ingest_id, job_id)
    FROM st.res_train_stalls AS r
)
ORDER BY job_id, "start"
