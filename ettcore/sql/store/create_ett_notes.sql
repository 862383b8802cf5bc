-- The notes of each refresh: a replaced job and the fields that differ.
CREATE TABLE st.ett_notes (ingest_id BIGINT, source VARCHAR, job_id VARCHAR, note VARCHAR)
