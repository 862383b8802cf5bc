-- One row a slow span: an advancing train span past warm-up (train_advances) that took longer than (1 + tolerance)
-- times its advance at the job's ideal pace (job_ideal_pace; the tolerance is ett_slow_params.tolerance).  Its excess
-- is the time over the ideal; its slow time the new-data share of the excess (the replayed share is wasted training
-- already), and a span is listed when that is positive.  A slow span counts where it starts: outside the job's
-- unmeasured time (inside the analysis window, outside its exclusion windows), as stalls do.  Its start is also
-- given in epoch ms (start_ms) for the trend's buckets (slow_span_starts).
WITH judged AS (
    SELECT a.job_key, a.attempt, a.start_ms, a.end_ms, a.seconds, a.new_share,
           a.advance * p.ideal_s_per_unit AS ideal_s
    FROM train_advances AS a
    JOIN job_ideal_pace AS p ON p.job_key = a.job_key
    CROSS JOIN ett_slow_params AS c
    WHERE NOT a.warm_up AND a.seconds > (1.0 + c.tolerance) * a.advance * p.ideal_s_per_unit
)
SELECT
    j.job_id,
    s.attempt,
    epoch_ms(s.start_ms) AS start,
    epoch_ms(s.end_ms) AS "end",
    s.start_ms,
    s.seconds,
    s.ideal_s,
    (s.seconds - s.ideal_s) * s.new_share AS slow_s
FROM judged AS s
JOIN metric_jobs AS j ON j.job_key = s.job_key
ANTI JOIN unmeasured_time AS x ON x.job_key = s.job_key AND x.start_ms <= s.start_ms AND s.start_ms < x.end_ms
WHERE s.new_share > 0
ORDER BY j.job_id, s.start_ms
