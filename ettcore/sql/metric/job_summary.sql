-- One row a job: Level 1 (wall, productive, ETT%, TTS, NoF, TTR, in-training loss, shutdown tail), the time
-- exclusions took out, and the job's labels.  The non-productive seconds of each Level 2 component are
-- job_component_time's rows, placed before excluded_s (one column a component) by ettcore.metric.  Everything counts measured time only
-- (measured_time, measured_interruptions): inside the analysis window and outside the job's exclusion windows;
-- t0 and t1 are the job's wall time clipped to the window, and excluded_s is the time exclusions took out of it,
-- so wall_s = t1 - t0 - excluded_s.  A job is listed when its wall time overlaps the window, it started inside
-- the window, or one of its measured interruptions happened there.  Status and attempts are the whole job's.
WITH attempts AS (
    SELECT job_key,
           min(start_ms) AS t0_ms,
           max(end_ms) AS t1_ms,
           CAST(count(*) AS BIGINT) AS attempts,
           arg_max(end_reason, attempt) AS status  -- the highest attempt (numbers increase with start; a zero-length attempt can share its start)
    FROM metric_attempts
    GROUP BY job_key
),
clipped AS (
    SELECT a.*,
           greatest(a.t0_ms, coalesce(w.since_ms, a.t0_ms)) AS w0_ms,
           least(a.t1_ms, coalesce(w.until_ms, a.t1_ms)) AS w1_ms,
           (w.since_ms IS NULL OR a.t0_ms >= w.since_ms) AND (w.until_ms IS NULL OR a.t0_ms < w.until_ms) AS starts_inside
    FROM attempts AS a
    CROSS JOIN ett_window AS w
),
interruptions AS (
    SELECT job_key,
           CAST(count(*) AS BIGINT) AS nof,
           {{nof_by_end_reason}}  -- nof_failure, nof_preemption: a count an interrupting end reason
    FROM measured_interruptions
    GROUP BY job_key
),
cancels AS (
    -- a user's cancels, counted apart from NoF (not an interruption), where they happen in measured time
    SELECT a.job_key, CAST(count(*) AS BIGINT) AS cancelled
    FROM metric_attempts AS a
    ANTI JOIN unmeasured_time AS x ON x.job_key = a.job_key AND x.start_ms <= a.end_ms AND a.end_ms < x.end_ms
    WHERE a.end_reason = {{cancel_end_reason}}
    GROUP BY a.job_key
),
excluded AS (
    -- the job's unmeasured time inside its clipped wall time: what exclusion windows took (the intervals are disjoint,
    -- and the parts outside the analysis window clip to nothing)
    SELECT c.job_key, sum(greatest(0, least(x.end_ms, c.w1_ms) - greatest(x.start_ms, c.w0_ms))) AS excluded_ms
    FROM clipped AS c
    JOIN unmeasured_time AS x ON x.job_key = c.job_key
    GROUP BY c.job_key
),
per_job AS (
    -- measured ms per L1 bucket, as DOUBLE (exact below 2^53 ms; an integer sum keeps a HUGEINT state)
    SELECT job_key,
           coalesce(sum(CAST(ms AS DOUBLE)) FILTER (WHERE bucket = 'productive'), 0) AS productive_ms,
           coalesce(sum(CAST(ms AS DOUBLE)) FILTER (WHERE bucket = 'tts'), 0) AS tts_ms,
           coalesce(sum(CAST(ms AS DOUBLE)) FILTER (WHERE bucket = 'recovery'), 0) AS recovery_ms,
           coalesce(sum(CAST(ms AS DOUBLE)) FILTER (WHERE bucket = 'in_training_loss'), 0) AS in_training_loss_ms,
           coalesce(sum(CAST(ms AS DOUBLE)) FILTER (WHERE bucket = 'shutdown_tail'), 0) AS shutdown_tail_ms
    FROM measured_time
    GROUP BY job_key
),
measured AS (
    SELECT c.*, greatest(c.w1_ms, c.w0_ms) - c.w0_ms - coalesce(e.excluded_ms, 0) AS wall_ms, coalesce(e.excluded_ms, 0) AS excluded_ms,
           coalesce(i.nof, 0) AS nof, {{each nof: coalesce(i.@, 0) AS @}},
           coalesce(k.cancelled, 0) AS cancelled
    FROM clipped AS c
    LEFT JOIN excluded AS e ON e.job_key = c.job_key
    LEFT JOIN interruptions AS i ON i.job_key = c.job_key
    LEFT JOIN cancels AS k ON k.job_key = c.job_key
    WHERE c.w1_ms > c.w0_ms OR c.starts_inside OR i.nof IS NOT NULL
)
SELECT
    j.job_id,
    j.model,
    j.gpus,
    a.status,
    a.attempts,
    epoch_ms(a.w0_ms) AS t0,
    epoch_ms(greatest(a.w1_ms, a.w0_ms)) AS t1,
    a.wall_ms / 1000.0 AS wall_s,
    coalesce(p.productive_ms, 0) / 1000.0 AS productive_s,
    100.0 * coalesce(p.productive_ms, 0) / nullif(a.wall_ms, 0) AS ett_pct,
    coalesce(p.tts_ms, 0) / 1000.0 AS tts_s,
    a.nof,
    {{each nof: a.@}},
    a.cancelled,
    coalesce(p.recovery_ms, 0) / 1000.0 AS ttr_total_s,
    CASE WHEN a.nof > 0 THEN coalesce(p.recovery_ms, 0) / 1000.0 / a.nof END AS ttr_mean_s,
    coalesce(p.in_training_loss_ms, 0) / 1000.0 AS in_training_loss_s,
    coalesce(p.shutdown_tail_ms, 0) / 1000.0 AS shutdown_tail_s,
    a.excluded_ms / 1000.0 AS excluded_s,
    j.* EXCLUDE (job_key, job_id, model, gpus)
FROM metric_jobs AS j
JOIN measured AS a ON a.job_key = j.job_key
LEFT JOIN per_job AS p ON p.job_key = j.job_key
ORDER BY j.job_id
