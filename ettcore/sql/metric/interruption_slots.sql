-- The fleet's measured interruptions, as rows to be summed per bucket (fleet_trend, fleet_rolling): one a grid slot
-- (slot_ms: the slot's start, a UTC day or an hour on the hourly grid) with interruptions, with their counts.
SELECT
    i.end_ms - i.end_ms % g.grid_ms AS slot_ms,
    CAST(count(*) AS BIGINT) AS nof,
    CAST(count_if(i.end_reason = 'failure') AS BIGINT) AS nof_failure,
    CAST(count_if(i.end_reason = 'preemption') AS BIGINT) AS nof_preemption
FROM measured_interruptions AS i
CROSS JOIN ett_grid AS g
GROUP BY 1
