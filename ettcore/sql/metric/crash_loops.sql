-- One row a crash loop (docs/metric.md "Crash loops"): a run of consecutive repeating attempts of one job
-- (attempt_repeats: each a crash resuming from the same point as the attempt before it, or one without progress in
-- between) and the attempt before the run (its first): restarts = the repeating attempts, gpu_h = the GPU-hours they
-- held (clipped to the as-of time), began = the first attempt's end (its first crash), last_crash = the last
-- attempt's end.
WITH runs AS (  -- consecutive repeating attempts share n - (their rank among the job's repeating attempts)
    SELECT *, n - row_number() OVER (PARTITION BY job_key ORDER BY n) AS run
    FROM attempt_repeats
    WHERE repeats
),
loops AS (
    SELECT
        job_key,
        min(n) - 1 AS first_n,
        max(n) AS last_n,
        count(*) AS restarts,
        sum(end_ms - start_ms) AS restart_ms
    FROM runs
    GROUP BY job_key, run
)
SELECT
    j.job_id,
    j.model,
    f.attempt AS first_attempt,
    l.attempt AS last_attempt,
    CAST(o.restarts AS BIGINT) AS restarts,
    f.resume_cursor,  -- the first attempt always has one: a loop's first repeat follows the attempt it repeats
    epoch_ms(f.end_ms) AS began,
    epoch_ms(l.end_ms) AS last_crash,
    j.gpus * o.restart_ms / 3600000.0 AS gpu_h
FROM loops AS o
JOIN metric_jobs AS j ON j.job_key = o.job_key
JOIN attempt_repeats AS f ON f.job_key = o.job_key AND f.n = o.first_n
JOIN attempt_repeats AS l ON l.job_key = o.job_key AND l.n = o.last_n
ORDER BY j.job_id, first_attempt
