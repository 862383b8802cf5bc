-- The store's analysis time (epoch ms): the latest instant of its jobs (as a trace's default as-of), or a later
-- snapshot time: $given (this ingest's --as-of), or an earlier ingest's of a source not removed since.
SELECT greatest(
    (SELECT max(latest_ms) FROM st.ett_jobs),
    (
        SELECT max(i.snapshot_ms)
        FROM st.ett_ingests AS i
        WHERE i.explicit_as_of
            AND NOT EXISTS (SELECT 1 FROM st.ett_removals AS r WHERE r.source = i.source AND r.ingest_id > i.ingest_id)
    ),
    $given::BIGINT
) AS as_of_ms
