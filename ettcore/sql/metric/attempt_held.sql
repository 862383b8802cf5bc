-- One row a measured attempt: its GPUs and its measured time held_ms (to the as-of time, less what the analysis
-- window and the job's exclusion windows leave out: unmeasured_time's intervals are disjoint per job).
SELECT
    a.job_key,
    a.attempt,
    j.gpus,
    (a.end_ms - a.start_ms) - coalesce(sum(
        CASE WHEN x.job_key IS NOT NULL  -- least/greatest skip NULLs: an attempt without one overlaps nothing
             THEN greatest(0, least(a.end_ms, x.end_ms) - greatest(a.start_ms, x.start_ms)) END
    ), 0) AS held_ms
FROM metric_attempts AS a
JOIN metric_jobs AS j ON j.job_key = a.job_key
LEFT JOIN unmeasured_time AS x ON x.job_key = a.job_key AND x.start_ms < a.end_ms AND a.start_ms < x.end_ms
GROUP BY a.job_key, a.attempt, a.start_ms, a.end_ms, j.gpus
