-- One row a restart (docs/metric.md "Retry chains"): an interruption followed by another attempt of its job, with the
-- wait in ms from the interruption (the attempt's end) to the next attempt's start.  Attempts in attempt order,
-- clipped to the as-of time.
WITH ordered AS (
    SELECT
        job_key,
        attempt,
        end_ms,
        end_reason,
        lead(start_ms) OVER (PARTITION BY job_key ORDER BY attempt) AS next_start_ms
    FROM metric_attempts
)
SELECT
    j.job_id,
    o.attempt,
    o.next_start_ms - o.end_ms AS wait_ms
FROM ordered AS o
JOIN metric_jobs AS j ON j.job_key = o.job_key
WHERE o.end_reason IN ({{interruptions}}) AND o.next_start_ms IS NOT NULL
ORDER BY j.job_id, o.attempt
