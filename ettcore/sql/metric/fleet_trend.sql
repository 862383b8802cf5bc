-- One row a calendar bucket ($every: day, week or month, UTC) and Level 2 component, for every bucket holding
-- measured time or an interruption: the bucket's GPU-time-weighted ETT%, GPU-hours of wall and productive time and
-- interruptions, and the component's GPU-hours (component NULL for a bucket without lost time).  Each job's
-- measured time is prorated into the buckets it overlaps (fleet_slots) and interruptions are counted in the bucket
-- where they happen (interruption_slots).  ettcore.metric places the components in one column each.
WITH time_slots AS (
    SELECT CAST(date_trunc($every, CAST(epoch_ms(slot_ms) AS DATE)) AS DATE) AS bucket_start, component, gpu_ms
    FROM fleet_slots
),
lost AS (
    SELECT bucket_start, component, sum(gpu_ms) AS gpu_ms
    FROM time_slots
    WHERE component <> 'effective_training'
    GROUP BY ALL
),
totals AS (
    SELECT bucket_start,
           sum(gpu_ms) AS wall_gpu_ms,
           coalesce(sum(gpu_ms) FILTER (WHERE component = 'effective_training'), 0) AS productive_gpu_ms
    FROM time_slots
    GROUP BY bucket_start
),
interruptions AS (
    SELECT CAST(date_trunc($every, CAST(epoch_ms(slot_ms) AS DATE)) AS DATE) AS bucket_start,
           sum(nof) AS nof, {{each nof: sum(@) AS @}}
    FROM interruption_slots
    GROUP BY 1
),
buckets AS (
    SELECT bucket_start FROM totals UNION SELECT bucket_start FROM interruptions
)
SELECT
    b.bucket_start,
    100.0 * t.productive_gpu_ms / nullif(t.wall_gpu_ms, 0) AS ett_pct,
    coalesce(t.wall_gpu_ms, 0) / 3.6e6 AS wall_gpu_h,
    coalesce(t.productive_gpu_ms, 0) / 3.6e6 AS productive_gpu_h,
    CAST(coalesce(i.nof, 0) AS BIGINT) AS nof,
    {{each nof: CAST(coalesce(i.@, 0) AS BIGINT) AS @}},
    l.component,
    l.gpu_ms / 3.6e6 AS gpu_h
FROM buckets AS b
LEFT JOIN totals AS t ON t.bucket_start = b.bucket_start
LEFT JOIN interruptions AS i ON i.bucket_start = b.bucket_start
LEFT JOIN lost AS l ON l.bucket_start = b.bucket_start
ORDER BY b.bucket_start, l.component
