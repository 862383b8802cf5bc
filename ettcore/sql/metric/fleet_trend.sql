-- One row a calendar bucket ($every: day, week or month, UTC): GPU-time-weighted ETT% and GPU-hours per component,
-- each job's time prorated into the buckets it overlaps; interruptions counted in the bucket where they happen.
WITH attributed AS (
    SELECT CAST(date_trunc($every, t.day) AS DATE) AS bucket_start,
           t.bucket, p.component, t.ms * j.gpus AS gpu_ms
    FROM attributed_time AS t
    JOIN ett_phases AS p ON p.phase_id = t.phase_id
    JOIN metric_jobs AS j ON j.job_key = t.job_key
),
per_bucket AS (
    SELECT bucket_start,
           sum(gpu_ms) AS wall_gpu_ms,
           coalesce(sum(gpu_ms) FILTER (WHERE bucket = 'productive'), 0) AS productive_gpu_ms,
           coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'scheduling'), 0) AS scheduling_gpu_ms,
           coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'hardware_setup'), 0) AS hardware_setup_gpu_ms,
           coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'trainer_init'), 0) AS trainer_init_gpu_ms,
           coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'pt2_compile'), 0) AS pt2_compile_gpu_ms,
           coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'wasted_training'), 0) AS wasted_training_gpu_ms,
           coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'shutdown'), 0) AS shutdown_gpu_ms,
           coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'unattributed'), 0) AS unattributed_gpu_ms
    FROM attributed
    GROUP BY bucket_start
),
interruptions AS (
    SELECT CAST(date_trunc($every, CAST(epoch_ms(end_ms) AS DATE)) AS DATE) AS bucket_start,
           CAST(count(*) AS BIGINT) AS nof,
           CAST(count_if(end_reason = 'failure') AS BIGINT) AS nof_failure,
           CAST(count_if(end_reason = 'preemption') AS BIGINT) AS nof_preemption
    FROM metric_attempts
    WHERE end_reason IN ('failure', 'preemption')
    GROUP BY ALL
)
SELECT
    b.bucket_start,
    100.0 * b.productive_gpu_ms / nullif(b.wall_gpu_ms, 0) AS ett_pct,
    b.wall_gpu_ms / 3.6e6 AS wall_gpu_h,
    b.productive_gpu_ms / 3.6e6 AS productive_gpu_h,
    b.scheduling_gpu_ms / 3.6e6 AS scheduling_gpu_h,
    b.hardware_setup_gpu_ms / 3.6e6 AS hardware_setup_gpu_h,
    b.trainer_init_gpu_ms / 3.6e6 AS trainer_init_gpu_h,
    b.pt2_compile_gpu_ms / 3.6e6 AS pt2_compile_gpu_h,
    b.wasted_training_gpu_ms / 3.6e6 AS wasted_training_gpu_h,
    b.shutdown_gpu_ms / 3.6e6 AS shutdown_gpu_h,
    b.unattributed_gpu_ms / 3.6e6 AS unattributed_gpu_h,
    coalesce(i.nof, 0) AS nof,
    coalesce(i.nof_failure, 0) AS nof_failure,
    coalesce(i.nof_preemption, 0) AS nof_preemption
FROM per_bucket AS b
LEFT JOIN interruptions AS i ON i.bucket_start = b.bucket_start
ORDER BY b.bucket_start
