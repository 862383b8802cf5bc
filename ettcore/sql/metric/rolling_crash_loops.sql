-- One row a bucket ($every_ms: an hour, a UTC day or a duration dividing a day) whose trailing window ($window_ms, a
-- whole number of buckets, [bucket end - window, bucket end)) holds the start of a crash loop's restart (a repeating
-- attempt of attempt_repeats, docs/metric.md "Crash loops"): the restarts starting in that window and the GPU-hours
-- they held (the job's GPUs x the attempt's time, clipped to the as-of time).  A restart starting at s is in the
-- windows of the buckets from its own, s - s % every, to window / every - 1 buckets later, as a slow span is
-- (rolling_slow.sql).  Read beside fleet_rolling (ettcore.metric.restarts.trend).
WITH restarts AS (
    SELECT r.start_ms, j.gpus * (r.end_ms - r.start_ms) AS gpu_ms
    FROM attempt_repeats AS r
    JOIN metric_jobs AS j ON j.job_key = r.job_key
    WHERE r.repeats
),
placed AS (
    SELECT unnest(range(start_ms - start_ms % $every_ms, start_ms - start_ms % $every_ms + $window_ms, $every_ms))
               AS bucket_ms,
           gpu_ms
    FROM restarts
)
SELECT
    epoch_ms(bucket_ms) AS bucket_start,
    CAST(count(*) AS BIGINT) AS crash_loop_restarts,
    sum(gpu_ms) / 3600000.0 AS crash_loop_gpu_h
FROM placed
GROUP BY bucket_ms
ORDER BY bucket_ms
