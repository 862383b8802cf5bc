-- The stored rows of the result table {{result}} as the metric's table of the same rows.
SELECT * EXCLUDE (source, ingest_id) FROM st.{{result}}
