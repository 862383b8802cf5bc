-- A removal's row (create_ett_removals.sql).
INSERT INTO st.ett_removals VALUES ($ingest_id, $source, $removed_at, $jobs)
