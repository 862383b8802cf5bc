-- A refresh's notes: the pairs of $jobs and $notes.
INSERT INTO st.ett_notes
SELECT $ingest_id, $source, unnest($jobs::VARCHAR[]), unnest($notes::VARCHAR[])
