-- One row a bucket ($every_ms: an hour or a UTC day), from the first to the last that holds measured time or a
-- measured interruption: the fleet over the trailing window ($window_ms, a whole number of buckets) that ends where
-- the bucket ends, [bucket end - window, bucket end): GPU-time-weighted ETT%, GPU-hours per component and the
-- interruptions, summed over the grid slots inside it (fleet_slots; a slot never straddles a bucket).
WITH bucket_range AS (
    SELECT min(slot_ms) - min(slot_ms) % $every_ms AS first_ms, max(slot_ms) - max(slot_ms) % $every_ms AS last_ms FROM fleet_slots
),
buckets AS (
    SELECT unnest(range(first_ms, last_ms + $every_ms, $every_ms)) AS bucket_ms FROM bucket_range
)
SELECT
    epoch_ms(b.bucket_ms) AS bucket_start,
    epoch_ms(b.bucket_ms + $every_ms - $window_ms) AS window_start,
    epoch_ms(b.bucket_ms + $every_ms) AS window_end,
    100.0 * sum(s.productive_gpu_ms) / nullif(sum(s.wall_gpu_ms), 0) AS ett_pct,
    coalesce(sum(s.wall_gpu_ms), 0) / 3.6e6 AS wall_gpu_h,
    coalesce(sum(s.productive_gpu_ms), 0) / 3.6e6 AS productive_gpu_h,
    coalesce(sum(s.scheduling_gpu_ms), 0) / 3.6e6 AS scheduling_gpu_h,
    coalesce(sum(s.hardware_setup_gpu_ms), 0) / 3.6e6 AS hardware_setup_gpu_h,
    coalesce(sum(s.trainer_init_gpu_ms), 0) / 3.6e6 AS trainer_init_gpu_h,
    coalesce(sum(s.pt2_compile_gpu_ms), 0) / 3.6e6 AS pt2_compile_gpu_h,
    coalesce(sum(s.wasted_training_gpu_ms), 0) / 3.6e6 AS wasted_training_gpu_h,
    coalesce(sum(s.shutdown_gpu_ms), 0) / 3.6e6 AS shutdown_gpu_h,
    coalesce(sum(s.unattributed_gpu_ms), 0) / 3.6e6 AS unattributed_gpu_h,
    CAST(coalesce(sum(s.nof), 0) AS BIGINT) AS nof,
    CAST(coalesce(sum(s.nof_failure), 0) AS BIGINT) AS nof_failure,
    CAST(coalesce(sum(s.nof_preemption), 0) AS BIGINT) AS nof_preemption
FROM buckets AS b
LEFT JOIN fleet_slots AS s ON s.slot_ms >= b.bucket_ms + $every_ms - $window_ms AND s.slot_ms < b.bucket_ms + $every_ms
GROUP BY b.bucket_ms
ORDER BY b.bucket_ms
