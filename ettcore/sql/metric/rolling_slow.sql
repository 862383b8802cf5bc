-- One row a bucket ($every_ms: an hour, a UTC day or a duration dividing a day) whose trailing window ($window_ms, a
-- whole number of buckets, [bucket end - window, bucket end)) holds the start of a slow span (train_slow): the slow
-- spans starting in that window and their slow time in GPU-hours (gpus x slow_s / 3600).  A span starting at s is in
-- the windows of the buckets from its own, s - s % every, to window / every - 1 buckets later.  Read beside
-- fleet_rolling (ettcore.metric.slow.trend).
WITH spans AS (
    SELECT s.start_ms, m.gpus * s.slow_s AS slow_gpu_s
    FROM train_slow AS s
    JOIN job_metrics AS m ON m.job_id = s.job_id
),
placed AS (
    SELECT unnest(range(start_ms - start_ms % $every_ms, start_ms - start_ms % $every_ms + $window_ms, $every_ms))
               AS bucket_ms,
           slow_gpu_s
    FROM spans
)
SELECT
    epoch_ms(bucket_ms) AS bucket_start,
    CAST(count(*) AS BIGINT) AS slow_spans,
    sum(slow_gpu_s) / 3600.0 AS slow_gpu_h
FROM placed
GROUP BY bucket_ms
ORDER BY bucket_ms
