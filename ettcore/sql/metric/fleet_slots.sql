-- The fleet's measured time and interruptions, as rows to be summed per bucket (fleet_trend, fleet_rolling): one a
-- cell with measured time (slot_ms: the cell's start; a cell never straddles a UTC midnight, nor an hour on the
-- hourly grid), with GPU-milliseconds of wall time, productive time and each component's non-productive time
-- (whole numbers, so that sums are exact in any order); and one a grid slot with measured interruptions
-- (slot_ms: the slot's start), with their counts.
WITH attributed AS (
    SELECT t.cell_ms, t.bucket, p.component, t.ms * j.gpus AS gpu_ms
    FROM measured_time AS t
    JOIN ett_phases AS p ON p.phase_id = t.phase_id
    JOIN metric_jobs AS j ON j.job_key = t.job_key
)
SELECT
    cell_ms AS slot_ms,
    sum(gpu_ms) AS wall_gpu_ms,
    coalesce(sum(gpu_ms) FILTER (WHERE bucket = 'productive'), 0) AS productive_gpu_ms,
    coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'scheduling'), 0) AS scheduling_gpu_ms,
    coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'hardware_setup'), 0) AS hardware_setup_gpu_ms,
    coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'trainer_init'), 0) AS trainer_init_gpu_ms,
    coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'pt2_compile'), 0) AS pt2_compile_gpu_ms,
    coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'wasted_training'), 0) AS wasted_training_gpu_ms,
    coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'shutdown'), 0) AS shutdown_gpu_ms,
    coalesce(sum(gpu_ms) FILTER (WHERE bucket <> 'productive' AND component = 'unattributed'), 0) AS unattributed_gpu_ms,
    CAST(0 AS BIGINT) AS nof,
    CAST(0 AS BIGINT) AS nof_failure,
    CAST(0 AS BIGINT) AS nof_preemption
FROM attributed
GROUP BY cell_ms
UNION ALL
SELECT
    i.end_ms - i.end_ms % g.grid_ms,
    0, 0, 0, 0, 0, 0, 0, 0, 0,
    CAST(count(*) AS BIGINT),
    CAST(count_if(i.end_reason = 'failure') AS BIGINT),
    CAST(count_if(i.end_reason = 'preemption') AS BIGINT)
FROM measured_interruptions AS i
CROSS JOIN ett_grid AS g
GROUP BY 1
