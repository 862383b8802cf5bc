-- One row a job running at the as-of time: its current attempt, when its data cursor last advanced in that attempt,
-- how long before the as-of time (progress_age_s; the as-of time is where metric_attempts ends the running
-- attempt), the threshold it is judged by (train_pace.stall_after_s, or the job's own from
-- ett_job_stall_after), its median step time (1 / the job's pace) and its recent step time (seconds per cursor unit
-- over the attempt's last ett_live_params.recent_spans train spans that advanced), and its state:
--   starting   the current attempt has not advanced yet (not judged);
--   hung       no advance for longer than the threshold;
--   slow       not hung, and the recent step time exceeds slow_factor x the median step time;
--   advancing  otherwise.
-- Reporting only; the metric's definitions do not use it.  Windows and exclusions do not apply: it is about now.
WITH current_attempt AS (
    -- end_ms: where metric_attempts clipped the running attempt, the analysis time its job is measured to (a fleet
    -- store's stored results measure each source's running jobs to that source's own horizon)
    SELECT job_key, attempt, start_ms, end_ms
    FROM metric_attempts
    WHERE end_reason = {{open_end_reason}}
    QUALIFY row_number() OVER (PARTITION BY job_key ORDER BY attempt DESC) = 1
),
advancing AS (
    SELECT s.job_key, s.start_ms, s.end_ms, s.cursor_start, s.cursor_end,
           row_number() OVER (PARTITION BY s.job_key ORDER BY s.end_ms DESC, s.start_ms DESC) AS recency
    FROM live_spans AS s
    JOIN current_attempt AS c ON c.job_key = s.job_key AND c.attempt = s.attempt
    WHERE s.is_train AND s.cursor_end > s.cursor_start
),
recent AS (
    SELECT a.job_key,
           max(a.end_ms) AS last_advance_ms,
           max(a.cursor_end) AS cursor,
           sum(CASE WHEN a.recency <= p.recent_spans THEN (a.end_ms - a.start_ms) / 1000.0 END)
               / sum(CASE WHEN a.recency <= p.recent_spans THEN a.cursor_end - a.cursor_start END) AS recent_step_s
    FROM advancing AS a
    CROSS JOIN ett_live_params AS p
    GROUP BY a.job_key
),
judged AS (
    SELECT c.job_key, c.attempt, c.start_ms, r.last_advance_ms, r.cursor, r.recent_step_s,
           1.0 / t.pace_per_s AS median_step_s,
           coalesce(o.stall_after_s, t.stall_after_s) AS stall_threshold_s,
           (c.end_ms - coalesce(r.last_advance_ms, c.start_ms)) / 1000.0 AS progress_age_s
    FROM current_attempt AS c
    JOIN train_pace AS t ON t.job_key = c.job_key
    JOIN metric_jobs AS j ON j.job_key = c.job_key
    LEFT JOIN ett_job_stall_after AS o ON o.job_id = j.job_id
    LEFT JOIN recent AS r ON r.job_key = c.job_key
)
SELECT
    j.job_id,
    j.model,
    g.attempt,
    epoch_ms(g.start_ms) AS attempt_start,
    epoch_ms(g.last_advance_ms) AS last_advance,
    g.cursor,
    g.progress_age_s,
    g.stall_threshold_s,
    g.median_step_s,
    g.recent_step_s,
    CASE
        WHEN g.last_advance_ms IS NULL THEN 'starting'
        WHEN g.progress_age_s > g.stall_threshold_s THEN 'hung'
        WHEN g.recent_step_s > p.slow_factor * g.median_step_s THEN 'slow'
        ELSE 'advancing'
    END AS state
FROM judged AS g
JOIN metric_jobs AS j ON j.job_key = g.job_key
CROSS JOIN ett_live_params AS p
ORDER BY j.job_id
