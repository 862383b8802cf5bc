-- Whether the database $database (the store: st) holds a table named $table.
SELECT count(*) > 0 AS table_exists
FROM duckdb_tables()
WHERE database_name = $database AND table_name = $table
