-- clean_{{table}}: the store's rows of {{table}} of the jobs of {{keys}} (source, job_id) alone, as the loader's clean
-- rows of a trace (job ids named by ett_job_id).
CREATE TEMP VIEW clean_{{table}} AS
SELECT ett_job_id(r.source, r.job_id) AS job_id, * EXCLUDE (source, ingest_id, job_id)
FROM st.rows_{{table}} AS r
SEMI JOIN {{keys}} AS k ON k.source = r.source AND k.job_id = r.job_id
