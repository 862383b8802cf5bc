-- One row: the fleet's retry chains (docs/metric.md "Retry chains").  retried_jobs: the jobs with an interruption;
-- retried_ended: those whose chain has an outcome (not running); retried_completed: those that completed;
-- retry_completion_pct: 100 * completed / ended (NULL when none ended); restarts and their median wait in seconds
-- (restart_waits: every restart of every job, not a median of medians).
WITH chains AS (
    SELECT
        count_if(interruptions > 0) AS retried_jobs,
        count_if(interruptions > 0 AND outcome <> 'running') AS retried_ended,
        count_if(interruptions > 0 AND outcome = 'completed') AS retried_completed
    FROM job_retry_chains
),
waits AS (
    SELECT count(*) AS restarts, median(wait_ms) / 1000.0 AS median_restart_wait_s
    FROM restart_waits
)
SELECT
    CAST(c.retried_jobs AS BIGINT) AS retried_jobs,
    CAST(c.retried_ended AS BIGINT) AS retried_ended,
    CAST(c.retried_completed AS BIGINT) AS retried_completed,
    CASE WHEN c.retried_ended > 0 THEN 100.0 * c.retried_completed / c.retried_ended END AS retry_completion_pct,
    CAST(w.restarts AS BIGINT) AS restarts,
    w.median_restart_wait_s
FROM chains AS c, waits AS w
