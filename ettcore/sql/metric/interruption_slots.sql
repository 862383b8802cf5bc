-- The fleet's measured interruptions, as rows to be summed per bucket (fleet_trend, fleet_rolling): one a grid slot
-- (slot_ms: the slot's start, a UTC day or an hour on the hourly grid) with interruptions, with their counts
-- (nof_<end reason>: one count an interrupting end reason of the vocabulary).
SELECT
    i.end_ms - i.end_ms % g.grid_ms AS slot_ms,
    CAST(count(*) AS BIGINT) AS nof,
    {{nof_by_end_reason}}
FROM measured_interruptions AS i
CROSS JOIN ett_grid AS g
GROUP BY 1
