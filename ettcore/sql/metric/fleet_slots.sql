-- The fleet's measured time and interruptions per grid slot (slot_ms: the UTC day or, on the hourly grid, the hour
-- holding them): GPU-milliseconds of wall time, productive time and each component's non-productive time (whole
-- numbers, so that sums over slots are exact in any order), and the measured interruptions that happened in the
-- slot.  A slot with interruptions but no wall time has zero time.
WITH attributed AS (
    SELECT t.cell_ms - t.cell_ms % g.grid_ms AS slot_ms, t.bucket, p.component, t.ms * j.gpus AS gpu_ms
    FROM measured_time AS t
    JOIN ett_phases AS p ON p.phase_id = t.phase_id
    JOIN metric_jobs AS j ON j.job_key = t.job_key
    CROSS JOIN ett_grid AS g
),
time_slots AS (
    SELECT
        slot_ms,
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
    GROUP BY slot_ms
),
stop_slots AS (
    SELECT i.end_ms - i.end_ms % g.grid_ms AS slot_ms,
           CAST(count(*) AS BIGINT) AS nof,
           CAST(count_if(i.end_reason = 'failure') AS BIGINT) AS nof_failure,
           CAST(count_if(i.end_reason = 'preemption') AS BIGINT) AS nof_preemption
    FROM measured_interruptions AS i
    CROSS JOIN ett_grid AS g
    GROUP BY ALL
)
SELECT
    coalesce(t.slot_ms, s.slot_ms) AS slot_ms,
    coalesce(t.wall_gpu_ms, 0) AS wall_gpu_ms,
    coalesce(t.productive_gpu_ms, 0) AS productive_gpu_ms,
    coalesce(t.scheduling_gpu_ms, 0) AS scheduling_gpu_ms,
    coalesce(t.hardware_setup_gpu_ms, 0) AS hardware_setup_gpu_ms,
    coalesce(t.trainer_init_gpu_ms, 0) AS trainer_init_gpu_ms,
    coalesce(t.pt2_compile_gpu_ms, 0) AS pt2_compile_gpu_ms,
    coalesce(t.wasted_training_gpu_ms, 0) AS wasted_training_gpu_ms,
    coalesce(t.shutdown_gpu_ms, 0) AS shutdown_gpu_ms,
    coalesce(t.unattributed_gpu_ms, 0) AS unattributed_gpu_ms,
    coalesce(s.nof, 0) AS nof,
    coalesce(s.nof_failure, 0) AS nof_failure,
    coalesce(s.nof_preemption, 0) AS nof_preemption
FROM time_slots AS t
FULL OUTER JOIN stop_slots AS s ON s.slot_ms = t.slot_ms
