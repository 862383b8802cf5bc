-- The row ids of the stored rows of {{table}} of the jobs of {{keys}} (source, job_id, ingest_id), found reading
-- only the key columns, and only in the row groups of the ingests that stored those jobs (a table's rows lie in
-- ingest order, so a running job replaced yesterday is found among yesterday's rows).
CREATE OR REPLACE TEMP TABLE ett_old_{{table}} AS
SELECT r.rowid AS ett_rowid
FROM st.rows_{{table}} AS r
SEMI JOIN {{keys}} AS k ON k.source = r.source AND k.job_id = r.job_id
WHERE r.ingest_id IN (SELECT DISTINCT ingest_id FROM {{keys}})
