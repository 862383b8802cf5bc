-- DuckDB's hash() of a fixed text ($probe): kept in the metadata when a store is made; a DuckDB whose hash() gives
-- another value is refused (the store keys jobs and compares rows by it).
SELECT hash($probe) AS hash_probe
