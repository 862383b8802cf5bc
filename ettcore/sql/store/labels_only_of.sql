-- The label columns only $source brought (no other source lists them).
SELECT label FROM st.ett_labels WHERE source = $source
EXCEPT
SELECT label FROM st.ett_labels WHERE source <> $source
