-- The stored rows of {{table}} of the jobs of {{keys}} (source, job_id), deleted.
DELETE FROM st.rows_{{table}} AS r
WHERE EXISTS (SELECT 1 FROM {{keys}} AS k WHERE k.source = r.source AND k.job_id = r.job_id)
