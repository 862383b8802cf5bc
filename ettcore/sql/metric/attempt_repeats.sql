-- One row an attempt of a measured job, in the terms of docs/metric.md "Crash loops": its order n within the job, start
-- and end (clipped to the as-of time), resume point and whether it *repeats*.  An attempt's resume point is the
-- cursor_start of its first train span (NULL: it has none); a crash is an interruption whose cause is one
-- (ett_causes.crash: its group's `crash` flag, ettcore/defaults/causes.yaml).  Between two attempts with a resume point
-- (k before t, none between them has one) an attempt repeats when every attempt from k to it crashed and
--   - it is t: t resumed from k's point;
--   - it is between them (it made no progress): k repeats (it continues a loop) or t repeats (it belongs to the loop
--     t is in); with no t after it, k repeats.  It starts no loop on its own.
-- Attempts are taken in attempt order (increasing in time).  A crash loop is a run of repeating attempts and the
-- attempt before the run (crash_loops.sql); each repeating attempt is one of its restarts (trend_crash_loops.sql).
WITH first_train AS (
    SELECT
        job_key,
        attempt,
        cursor_start,
        row_number() OVER (PARTITION BY job_key, attempt ORDER BY start_ms, cursor_start) AS k
    FROM metric_spans
    WHERE is_train
),
tried AS (
    SELECT
        a.job_key,
        a.attempt,
        a.start_ms,
        a.end_ms,
        coalesce(a.end_reason IN ({{interruptions}}) AND c.crash, false) AS crashed,
        f.cursor_start AS resume_cursor,
        row_number() OVER (PARTITION BY a.job_key ORDER BY a.attempt) AS n
    FROM metric_attempts AS a
    LEFT JOIN ett_causes AS c ON c.cause_id = a.cause_id
    LEFT JOIN first_train AS f ON f.job_key = a.job_key AND f.attempt = a.attempt AND f.k = 1
),
counted AS (  -- the attempts so far that did not crash: [k, t] all crashed when k crashed and the count did not grow
    SELECT
        *,
        sum(CASE WHEN crashed THEN 0 ELSE 1 END)
            OVER (PARTITION BY job_key ORDER BY n ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS not_crashed,
        max(CASE WHEN resume_cursor IS NOT NULL THEN n END)
            OVER (PARTITION BY job_key ORDER BY n ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS k_n,
        min(CASE WHEN resume_cursor IS NOT NULL THEN n END)
            OVER (PARTITION BY job_key ORDER BY n ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS t_n
    FROM tried
),
trained AS (  -- each attempt with a resume point against the last one before it
    SELECT
        t.job_key,
        t.n,
        coalesce(k.crashed AND k.not_crashed = t.not_crashed AND t.resume_cursor = k.resume_cursor, false) AS repeats
    FROM counted AS t
    LEFT JOIN counted AS k ON k.job_key = t.job_key AND k.n = t.k_n
    WHERE t.resume_cursor IS NOT NULL
)
SELECT
    u.job_key,
    u.attempt,
    u.start_ms,
    u.end_ms,
    u.n,
    u.resume_cursor,
    CASE
        WHEN u.resume_cursor IS NOT NULL THEN r.repeats
        ELSE coalesce(k.crashed AND k.not_crashed = u.not_crashed AND (rk.repeats OR coalesce(rt.repeats, false)), false)
    END AS repeats
FROM counted AS u
LEFT JOIN trained AS r ON r.job_key = u.job_key AND r.n = u.n
LEFT JOIN counted AS k ON k.job_key = u.job_key AND k.n = u.k_n
LEFT JOIN trained AS rk ON rk.job_key = u.job_key AND rk.n = u.k_n
LEFT JOIN trained AS rt ON rt.job_key = u.job_key AND rt.n = u.t_n
