-- One row a job: how its retry chain ended (docs/metric.md "Retry chains"), in job id order.  attempts and
-- interruptions (its attempts ended by an interrupting end reason) to the as-of time; outcome: how its last attempt
-- ended, its end reason (completed, cancelled, running: the vocabulary's) or 'interrupted' for any interrupting one
-- (no attempt followed it by the as-of time); last_ended_attempt: its last attempt that ended by the as-of time (NULL
-- when none has: a crash loop ending there is open, ettcore.metric.restarts.open_crash_loops).  Its restarts and their
-- waits are restart_waits.sql's rows (ettcore.metric.restarts joins them).
WITH chains AS (
    SELECT
        job_key,
        count(*) AS attempts,
        sum(CASE WHEN end_reason IN ({{interruptions}}) THEN 1 ELSE 0 END) AS interruptions,
        arg_max(end_reason, attempt) AS last_end_reason,
        max(CASE WHEN end_reason <> {{open_end_reason}} THEN attempt END) AS last_ended_attempt
    FROM metric_attempts
    GROUP BY job_key
)
SELECT
    j.job_id,
    j.model,
    CAST(c.attempts AS BIGINT) AS attempts,
    CAST(c.interruptions AS BIGINT) AS interruptions,
    CASE WHEN c.last_end_reason IN ({{interruptions}}) THEN 'interrupted' ELSE c.last_end_reason END AS outcome,
    c.last_ended_attempt
FROM chains AS c
JOIN metric_jobs AS j ON j.job_key = c.job_key
ORDER BY j.job_id
