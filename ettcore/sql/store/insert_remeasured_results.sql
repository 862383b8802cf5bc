-- The metric's per-job rows of {{table}} of stored jobs of $source measured again (their rows stay) stored into
-- {{result}}, each with the ingest that stored its job's rows (ett_jobs), matched by {{key}}.
INSERT INTO st.{{result}} BY NAME
SELECT $source AS source, k.ingest_id, t.*
FROM {{table}} AS t
JOIN (SELECT * FROM st.ett_jobs WHERE source = $source) AS k ON k.{{key}} = t.{{key}}
