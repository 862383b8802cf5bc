-- The store's source removals (id and source), in id order.
SELECT ingest_id, source FROM st.ett_removals ORDER BY ingest_id
