-- {{view}} (one of the metric's per-job tables) as a view of its stored rows {{result}} of the jobs of {{keys}}
-- (source, job_key; one source).
CREATE TEMP VIEW {{view}} AS
SELECT r.* EXCLUDE (source, ingest_id)
FROM st.{{result}} AS r
SEMI JOIN {{keys}} AS k ON k.source = r.source AND k.job_key = r.job_key
