-- The store's metadata: one row a key (format, version, grid_ms, phases, as_of_ms, synthetic, description,
-- hash_probe; parquet_mirror and parquet_mirror_id once a mirror is published).
SELECT key, value
FROM st.ett_store
