-- 'VIEW' or 'TABLE' where the connection has a temporary view or table named $name (no row: it has neither).
SELECT 'VIEW' AS kind FROM duckdb_views() WHERE view_name = $name AND temporary
UNION ALL
SELECT 'TABLE' AS kind FROM duckdb_tables() WHERE table_name = $name AND temporary
