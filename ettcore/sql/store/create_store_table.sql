-- A store table {{target}} (rows_<table> or a result table) with the columns of the relation {{relation}} after
-- source and ingest_id, and no row.
CREATE TABLE st.{{target}} AS
SELECT ''::VARCHAR AS source, 0::BIGINT AS ingest_id, *
FROM {{relation}}
LIMIT 0
