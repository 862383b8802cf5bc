-- The metric's per-job rows of {{table}} (as one attribution left them) stored into {{result}}, with $source and the
-- $ingest_id of the refresh that inserted the jobs' rows.
INSERT INTO st.{{result}} BY NAME
SELECT $source AS source, $ingest_id::BIGINT AS ingest_id, *
FROM {{table}}
