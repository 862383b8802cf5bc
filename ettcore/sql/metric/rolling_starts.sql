-- One row a bucket ($every_ms: an hour, a UTC day or a duration dividing a day) whose trailing window ($window_ms, a
-- whole number of buckets, [bucket end - window, bucket end)) holds the start of an event of the view event_starts
-- (start_ms, gpu_s: one row an event, each counted whole where it starts): the events starting in that window and
-- their GPU-seconds in GPU-hours.  An event starting at s is in the windows of the buckets from its own,
-- s - s % every, to window / every - 1 buckets later.  The events are a trend's slow spans (slow_span_starts.sql) or
-- crash-loop restarts (crash_loop_restart_starts.sql); read beside fleet_rolling (ettcore.metric.slow.trend,
-- ettcore.metric.restarts.trend).
WITH placed AS (
    SELECT unnest(range(start_ms - start_ms % $every_ms, start_ms - start_ms % $every_ms + $window_ms, $every_ms))
               AS bucket_ms,
           gpu_s
    FROM event_starts
)
SELECT
    epoch_ms(bucket_ms) AS bucket_start,
    CAST(count(*) AS BIGINT) AS events,
    sum(gpu_s) / 3600.0 AS gpu_h
FROM placed
GROUP BY bucket_ms
ORDER BY bucket_ms
