-- One key of the store's metadata set to $value.
UPDATE st.ett_store SET value = $value WHERE key = $key
