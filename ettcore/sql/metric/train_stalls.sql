-- One row a stall: a train span in which the data cursor stood still for longer than the threshold.  Reporting
-- only; the metric's definitions do not use it.
--
-- A span's stalled time is how much longer it took than its cursor advance takes at the job's pace (train_pace;
-- all of it when the cursor did not move or the job never advanced); it is a stall above the job's threshold
-- (train_pace).  A stall counts where its span starts: outside the job's unmeasured time (inside the analysis window,
-- outside its exclusion windows).
WITH judged AS (
    SELECT s.job_key, s.attempt, s.start_ms, s.end_ms, p.pace_per_s,
           CASE
               WHEN s.cursor_end <= s.cursor_start OR p.pace_per_s IS NULL THEN (s.end_ms - s.start_ms) / 1000.0
               ELSE greatest(0.0, (s.end_ms - s.start_ms) / 1000.0 - (s.cursor_end - s.cursor_start) / p.pace_per_s)
           END AS stalled_s,
           p.stall_after_s AS threshold_s
    FROM metric_spans AS s
    JOIN train_pace AS p ON p.job_key = s.job_key
    WHERE s.is_train
)
SELECT
    j.job_id,
    s.attempt,
    epoch_ms(s.start_ms) AS start,
    epoch_ms(s.end_ms) AS "end",
    s.stalled_s,
    s.threshold_s,
    s.pace_per_s
FROM judged AS s
JOIN metric_jobs AS j ON j.job_key = s.job_key
ANTI JOIN unmeasured_time AS x ON x.job_key = s.job_key AND x.start_ms <= s.start_ms AND s.start_ms < x.end_ms
WHERE s.stalled_s > s.threshold_s
ORDER BY j.job_id, s.start_ms
