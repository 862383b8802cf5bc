-- The label columns $source brought, no longer listed.
DELETE FROM st.ett_labels WHERE source = $source
