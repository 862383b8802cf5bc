-- The temporary views and tables of the connection whose names are among $names, each with its kind.
SELECT view_name AS name, 'VIEW' AS kind FROM duckdb_views() WHERE temporary AND list_contains($names, view_name)
UNION ALL
SELECT table_name AS name, 'TABLE' AS kind FROM duckdb_tables() WHERE temporary AND list_contains($names, table_name)
