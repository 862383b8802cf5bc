-- The stored rows of {{table}} that the refresh $ingest_id inserted (and the store still holds), in every
-- column but those of DuckDB's NULL type, which Parquet cannot hold: a folder of the mirror.
SELECT {{each columns: @}}
FROM st.rows_{{table}}
WHERE ingest_id = $ingest_id
