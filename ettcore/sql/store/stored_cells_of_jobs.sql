-- attributed_time as a view of the stored cells of the jobs of {{keys}} (source, job_key; one source), read once into
-- ett_old_attributed (stored_cells.sql).
CREATE TEMP VIEW attributed_time AS
SELECT r.* EXCLUDE (ett_rowid, source, ingest_id)
FROM ett_old_attributed AS r
SEMI JOIN {{keys}} AS k ON k.source = r.source AND k.job_key = r.job_key
