-- One row a job: its retry chain (docs/metric.md "Retry chains"), in job id order.  attempts and interruptions (its
-- attempts ended by an interrupting end reason) to the as-of time; restarts: the interruptions another attempt
-- followed (restart_waits); outcome: how its last attempt ended, 'completed', 'cancelled', 'running' or
-- 'interrupted' (no attempt followed it by the as-of time); restart_wait_s: the seconds from those interruptions to
-- the next attempts' starts, in all and their median (NULL without a restart).
WITH chains AS (
    SELECT
        job_key,
        count(*) AS attempts,
        sum(CASE WHEN end_reason IN ({{interruptions}}) THEN 1 ELSE 0 END) AS interruptions,
        arg_max(end_reason, attempt) AS last_end_reason
    FROM metric_attempts
    GROUP BY job_key
),
waited AS (
    SELECT
        job_key,
        count(*) AS restarts,
        sum(wait_ms) / 1000.0 AS restart_wait_s,
        median(wait_ms) / 1000.0 AS median_restart_wait_s
    FROM restart_waits
    GROUP BY job_key
)
SELECT
    j.job_id,
    j.model,
    CAST(c.attempts AS BIGINT) AS attempts,
    CAST(c.interruptions AS BIGINT) AS interruptions,
    CAST(coalesce(w.restarts, 0) AS BIGINT) AS restarts,
    CASE
        WHEN c.last_end_reason IN ({{interruptions}}) THEN 'interrupted'
        WHEN c.last_end_reason IN ({{cancel_end_reason}}) THEN 'cancelled'
        WHEN c.last_end_reason IN ({{open_end_reason}}) THEN 'running'
        ELSE 'completed'
    END AS outcome,
    coalesce(w.restart_wait_s, 0.0) AS restart_wait_s,
    w.median_restart_wait_s
FROM chains AS c
JOIN metric_jobs AS j ON j.job_key = c.job_key
LEFT JOIN waited AS w ON w.job_key = c.job_key
ORDER BY j.job_id
