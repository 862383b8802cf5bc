-- One row a bucket ($every_ms: an hour, a UTC day or a duration dividing a day) and Level 2 component, from the
-- first to the last bucket that holds measured time or a measured interruption: the fleet over the trailing window
-- ($window_ms, a whole number of buckets) that ends where the bucket ends, [bucket end - window, bucket end):
-- GPU-time-weighted ETT%, GPU-hours of wall and productive time, the interruptions, and the component's GPU-hours
-- (component NULL for a window without lost time), summed over the grid slots inside it (fleet_slots,
-- interruption_slots; a slot never straddles a bucket).  ettcore.metric places the components in one column each.
WITH slots AS (
    SELECT slot_ms FROM fleet_slots UNION ALL SELECT slot_ms FROM interruption_slots
),
bucket_range AS (
    SELECT min(slot_ms) - min(slot_ms) % $every_ms AS first_ms, max(slot_ms) - max(slot_ms) % $every_ms AS last_ms
    FROM slots
),
buckets AS (
    SELECT unnest(range(first_ms, last_ms + $every_ms, $every_ms)) AS bucket_ms FROM bucket_range
),
in_window AS (
    SELECT b.bucket_ms, s.component, s.gpu_ms
    FROM buckets AS b
    JOIN fleet_slots AS s ON s.slot_ms >= b.bucket_ms + $every_ms - $window_ms AND s.slot_ms < b.bucket_ms + $every_ms
),
lost AS (
    SELECT bucket_ms, component, sum(gpu_ms) AS gpu_ms
    FROM in_window
    WHERE component <> 'effective_training'
    GROUP BY ALL
),
totals AS (
    SELECT bucket_ms,
           sum(gpu_ms) AS wall_gpu_ms,
           coalesce(sum(gpu_ms) FILTER (WHERE component = 'effective_training'), 0) AS productive_gpu_ms
    FROM in_window
    GROUP BY bucket_ms
),
interruptions AS (
    SELECT b.bucket_ms, sum(i.nof) AS nof, {{each nof: sum(i.@) AS @}}
    FROM buckets AS b
    JOIN interruption_slots AS i
        ON i.slot_ms >= b.bucket_ms + $every_ms - $window_ms AND i.slot_ms < b.bucket_ms + $every_ms
    GROUP BY b.bucket_ms
)
SELECT
    epoch_ms(b.bucket_ms) AS bucket_start,
    epoch_ms(b.bucket_ms + $every_ms - $window_ms) AS window_start,
    epoch_ms(b.bucket_ms + $every_ms) AS window_end,
    100.0 * t.productive_gpu_ms / nullif(t.wall_gpu_ms, 0) AS ett_pct,
    coalesce(t.wall_gpu_ms, 0) / 3.6e6 AS wall_gpu_h,
    coalesce(t.productive_gpu_ms, 0) / 3.6e6 AS productive_gpu_h,
    CAST(coalesce(i.nof, 0) AS BIGINT) AS nof,
    {{each nof: CAST(coalesce(i.@, 0) AS BIGINT) AS @}},
    l.component,
    l.gpu_ms / 3.6e6 AS gpu_h
FROM buckets AS b
LEFT JOIN totals AS t ON t.bucket_ms = b.bucket_ms
LEFT JOIN interruptions AS i ON i.bucket_ms = b.bucket_ms
LEFT JOIN lost AS l ON l.bucket_ms = b.bucket_ms
ORDER BY b.bucket_ms, l.component
