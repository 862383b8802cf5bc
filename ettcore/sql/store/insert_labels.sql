-- The label columns $labels of $source that the store did not list yet.
INSERT INTO st.ett_labels
SELECT $source, unnest($labels::VARCHAR[])
EXCEPT
SELECT source, label FROM st.ett_labels
