-- The store's metadata, key and value (the keys: metadata.sql).
CREATE TABLE st.ett_store (key VARCHAR PRIMARY KEY, value VARCHAR)
