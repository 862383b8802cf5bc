-- The next id of the one sequence ingests and removals share: one more than the largest of either.
SELECT greatest(
    (SELECT coalesce(max(ingest_id), 0) FROM st.ett_ingests),
    (SELECT coalesce(max(ingest_id), 0) FROM st.ett_removals)
) + 1 AS next_ingest_id
