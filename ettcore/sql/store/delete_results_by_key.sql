-- The rows of the result table {{result}} (keyed by job_key) of the jobs of {{keys}} (source, job_key), deleted;
-- found by the integer key first, then by source too (as stored_cells.sql).
DELETE FROM st.{{result}}
WHERE rowid IN (
    SELECT r.rowid
    FROM st.{{result}} AS r
    SEMI JOIN (SELECT DISTINCT job_key FROM {{keys}}) AS k1 ON k1.job_key = r.job_key
    SEMI JOIN {{keys}} AS k ON k.source = r.source AND k.job_key = r.job_key
)
