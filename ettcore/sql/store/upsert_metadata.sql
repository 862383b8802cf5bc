-- One key of the store's metadata set to $value, added where missing.
INSERT OR REPLACE INTO st.ett_store VALUES ($key, $value)
