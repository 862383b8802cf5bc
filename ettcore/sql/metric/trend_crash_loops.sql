-- One row a calendar bucket ($every: day, week or month, UTC) holding the start of a crash loop's restart (a repeating
-- attempt of attempt_repeats, docs/metric.md "Crash loops"): those restarts and the GPU-hours they held (the job's
-- GPUs x the attempt's time, clipped to the as-of time).  A restart counts, whole, in the bucket where it starts, as a
-- slow span does (trend_slow.sql).  Read beside fleet_trend (ettcore.metric.restarts.trend).
SELECT
    CAST(date_trunc($every, CAST(epoch_ms(r.start_ms) AS DATE)) AS DATE) AS bucket_start,
    CAST(count(*) AS BIGINT) AS crash_loop_restarts,
    sum(j.gpus * (r.end_ms - r.start_ms)) / 3600000.0 AS crash_loop_gpu_h
FROM attempt_repeats AS r
JOIN metric_jobs AS j ON j.job_key = r.job_key
WHERE r.repeats
GROUP BY 1
ORDER BY 1
