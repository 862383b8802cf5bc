-- Each source's horizon (epoch ms), the instant its running jobs are measured to: the latest instant of its stored
-- jobs (as a trace's default as-of), or a later snapshot time given to one of its ingests (--as-of, a --slurm poll's
-- sacct time) since its last removal; one row a source that holds jobs, in source order.
WITH latest AS (
    SELECT source, max(latest_ms) AS latest_ms FROM st.ett_jobs GROUP BY source
),
snapshots AS (
    SELECT i.source, max(i.snapshot_ms) AS snapshot_ms
    FROM st.ett_ingests AS i
    WHERE i.explicit_as_of
        AND NOT EXISTS (SELECT 1 FROM st.ett_removals AS r WHERE r.source = i.source AND r.ingest_id > i.ingest_id)
    GROUP BY i.source
)
SELECT l.source, greatest(l.latest_ms, s.snapshot_ms) AS as_of_ms
FROM latest AS l
LEFT JOIN snapshots AS s ON s.source = l.source
ORDER BY l.source
