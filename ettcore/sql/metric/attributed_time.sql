-- Every instant of every job's wall time, attributed exactly once: milliseconds per (job, cell, L1 bucket, phase, and
-- for recovery the interruption cause it goes to).
-- The attribution is attributed_segments'; this sums its segments' four pieces (productive, covered, unattributed,
-- scheduling) per cell, bucket and phase before they become rows.
WITH ids AS (
    SELECT
        (SELECT phase_id FROM ett_phases WHERE is_train) AS train_id,
        (SELECT phase_id FROM ett_phases WHERE phase = 'scheduling') AS scheduling_id
),
lengths AS (
    -- the four pieces of each segment, as lengths (each >= 0), summed per cell and kind before they are unpivoted
    -- (as DOUBLE: exact for integers below 2^53 ms, and a smaller state than the HUGEINT of an integer sum)
    SELECT job_key, cell_ms, loss_bucket, c_phase, cause_id,
           sum(CAST(b1 - t AS DOUBLE)) AS productive_ms,
           sum(CAST(b2 - b1 AS DOUBLE)) AS covered_ms,
           sum(CAST(b3 - b2 AS DOUBLE)) AS unattributed_ms,
           sum(CAST(t_next - b3 AS DOUBLE)) AS scheduling_ms
    FROM attributed_segments
    GROUP BY ALL
),
pieces AS (
    SELECT job_key, cell_ms, loss_bucket, cause_id,
           unnest([
               {'phase_id': ids.train_id, 'productive': true, 'ms': productive_ms},
               {'phase_id': c_phase, 'productive': false, 'ms': covered_ms},
               {'phase_id': 0, 'productive': false, 'ms': unattributed_ms},
               {'phase_id': ids.scheduling_id, 'productive': false, 'ms': scheduling_ms}
           ], recursive := true)
    FROM lengths, ids
)
SELECT
    job_key,
    cell_ms,
    CASE WHEN productive THEN 'productive' ELSE loss_bucket END AS bucket,
    phase_id,
    CASE WHEN productive THEN NULL ELSE cause_id END AS cause_id,  -- a recovery piece's cause (attributed_segments)
    CAST(sum(ms) AS BIGINT) AS ms
FROM pieces
WHERE ms > 0
GROUP BY ALL
