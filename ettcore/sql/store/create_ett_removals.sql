-- One row a source's removal (ett store remove-source): its id (from the sequence ingests use), the source, when
-- (UTC) and how many jobs went.
CREATE TABLE st.ett_removals (ingest_id BIGINT, source VARCHAR, removed_at TIMESTAMP, jobs BIGINT)
