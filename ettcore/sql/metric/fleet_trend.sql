-- One row a calendar bucket ($every: day, week or month, UTC) holding measured time or an interruption:
-- GPU-time-weighted ETT% and GPU-hours per component, each job's measured time prorated into the buckets it overlaps
-- and interruptions counted in the bucket where they happen (fleet_slots, summed per bucket).
SELECT
    CAST(date_trunc($every, CAST(epoch_ms(slot_ms) AS DATE)) AS DATE) AS bucket_start,
    100.0 * sum(productive_gpu_ms) / nullif(sum(wall_gpu_ms), 0) AS ett_pct,
    sum(wall_gpu_ms) / 3.6e6 AS wall_gpu_h,
    sum(productive_gpu_ms) / 3.6e6 AS productive_gpu_h,
    sum(scheduling_gpu_ms) / 3.6e6 AS scheduling_gpu_h,
    sum(hardware_setup_gpu_ms) / 3.6e6 AS hardware_setup_gpu_h,
    sum(trainer_init_gpu_ms) / 3.6e6 AS trainer_init_gpu_h,
    sum(pt2_compile_gpu_ms) / 3.6e6 AS pt2_compile_gpu_h,
    sum(wasted_training_gpu_ms) / 3.6e6 AS wasted_training_gpu_h,
    sum(shutdown_gpu_ms) / 3.6e6 AS shutdown_gpu_h,
    sum(unattributed_gpu_ms) / 3.6e6 AS unattributed_gpu_h,
    CAST(sum(nof) AS BIGINT) AS nof,
    CAST(sum(nof_failure) AS BIGINT) AS nof_failure,
    CAST(sum(nof_preemption) AS BIGINT) AS nof_preemption
FROM fleet_slots
GROUP BY 1
ORDER BY 1
