-- The attempts of the selected jobs ($jobs, a list of job ids) as the metric sees them (clipped to the as-of time),
-- with the job's T0 and T1 and whether the attempt's end is an interruption.
SELECT
    j.job_id,
    a.attempt,
    a.start_ms,
    a.end_ms,
    a.end_reason,
    a.end_reason IN ({{interruptions}}) AS interrupted,
    min(a.start_ms) OVER (PARTITION BY a.job_key) AS t0_ms,
    max(a.end_ms) OVER (PARTITION BY a.job_key) AS t1_ms
FROM metric_attempts AS a
JOIN metric_jobs AS j ON j.job_key = a.job_key
WHERE list_contains($jobs, j.job_id)
ORDER BY j.job_id, a.start_ms, a.attempt
