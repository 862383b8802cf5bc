-- The metadata of a new store: the pairs of $keys and $values.
INSERT INTO st.ett_store
SELECT unnest($keys::VARCHAR[]), unnest($values::VARCHAR[])
