-- clean_{{table}}: the store's rows of {{table}}, as the loader's clean rows of a trace (job ids named by
-- ett_job_id: job_id_within_source.sql or job_id_with_source.sql).
CREATE TEMP VIEW clean_{{table}} AS
SELECT ett_job_id(r.source, r.job_id) AS job_id, * EXCLUDE (source, ingest_id, job_id)
FROM st.rows_{{table}} AS r
