-- One row a crash loop's restart (a repeating attempt of attempt_repeats, docs/metric.md "Crash loops"): its start
-- (epoch ms) and the GPU-seconds it held (the job's GPUs x the attempt's time, clipped to the as-of time), the events
-- a rolling trend counts (rolling_starts.sql).
SELECT r.start_ms, j.gpus * (r.end_ms - r.start_ms) / 1000.0 AS gpu_s
FROM attempt_repeats AS r
JOIN metric_jobs AS j ON j.job_key = r.job_key
WHERE r.repeats
