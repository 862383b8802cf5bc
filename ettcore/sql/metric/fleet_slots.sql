-- The fleet's measured time, as rows to be summed per bucket (fleet_trend, fleet_rolling): one a cell with measured
-- time (slot_ms: the cell's start; a cell never straddles a UTC midnight, nor an hour on the hourly grid) and
-- component (effective_training for productive time, else the phase's Level 2 component), with its GPU-milliseconds
-- (whole numbers, so that sums are exact in any order).  Interruptions are interruption_slots'.
SELECT
    t.cell_ms AS slot_ms,
    CASE WHEN t.bucket = 'productive' THEN 'effective_training' ELSE p.component END AS component,
    sum(t.ms * j.gpus) AS gpu_ms
FROM measured_time AS t
JOIN ett_phases AS p ON p.phase_id = t.phase_id
JOIN metric_jobs AS j ON j.job_key = t.job_key
GROUP BY ALL
