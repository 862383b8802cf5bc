-- The ids of the store's committed refreshes, in order.
SELECT ingest_id FROM st.ett_ingests ORDER BY ingest_id
