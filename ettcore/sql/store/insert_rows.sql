-- The incoming rows of {{table}} (ett_in_{{table}}: incoming_rows.sql; only the replaced jobs' once the unchanged
-- jobs are left out) stored with $source and this refresh's $ingest_id.
INSERT INTO st.rows_{{table}} BY NAME
SELECT $source AS source, $ingest_id::BIGINT AS ingest_id, t.*
FROM ett_in_{{table}} AS t
