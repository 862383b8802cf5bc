-- The measured interruptions (NoF) and lost time of each job by interruption cause: one row a job and cause with
-- either.  lost_s is the job's measured recovery time that goes to the cause (attributed_segments: each recovery
-- instant, re-queue, restart and replayed work included, goes to one interruption's cause), so a job's lost_s add up
-- to its ttr_total_s and its nof to its nof.  Causes are ett_causes' (ettcore/defaults/causes.yaml).
WITH counted AS (
    SELECT job_key, cause_id, CAST(count(*) AS BIGINT) AS nof
    FROM measured_interruptions
    GROUP BY job_key, cause_id
),
lost AS (
    SELECT job_key, cause_id, sum(CAST(ms AS DOUBLE)) AS lost_ms
    FROM measured_time
    WHERE bucket = 'recovery'
    GROUP BY job_key, cause_id
),
per_cause AS (
    SELECT coalesce(c.job_key, l.job_key) AS job_key,
           coalesce(c.cause_id, l.cause_id) AS cause_id,
           coalesce(c.nof, 0) AS nof,
           coalesce(l.lost_ms, 0) AS lost_ms
    FROM counted AS c
    FULL OUTER JOIN lost AS l ON l.job_key = c.job_key AND l.cause_id = c.cause_id
)
SELECT
    j.job_id,
    k.cause_id,
    k.cause,
    p.nof,
    p.lost_ms / 1000.0 AS lost_s
FROM per_cause AS p
JOIN ett_causes AS k ON k.cause_id = p.cause_id
JOIN metric_jobs AS j ON j.job_key = p.job_key
