-- One row a model and job size (gpus): what its checkpointing is measured to be, for the checkpoint interval that
-- maximizes its expected ETT% (ettcore.planning.checkpoint_advice).  To the as-of time:
--   held_gpu_h     GPU-hours its attempts held (gpus x their length);
--   interruptions  its attempts ended by an interrupting end reason (each loses the progress since the last save);
--   saves          its spans of phase $save_phase; blocking_s their mean length (seconds the loop was blocked);
--   intervals      the gaps between consecutive saves of one attempt; interval_s their mean (seconds from a save's
--                  end to the next one's start: today's interval).
-- blocking_s is NULL without a save, interval_s without two saves in one attempt.
WITH saves AS (
    SELECT
        s.job_key,
        s.attempt,
        s.start_ms,
        s.end_ms,
        lag(s.end_ms) OVER (PARTITION BY s.job_key, s.attempt ORDER BY s.start_ms, s.end_ms) AS previous_end_ms
    FROM metric_spans AS s
    JOIN ett_phases AS p ON p.phase_id = s.phase_id
    WHERE p.phase = $save_phase
),
save_stats AS (
    SELECT
        j.model,
        j.gpus,
        count(*) AS saves,
        avg(v.end_ms - v.start_ms) / 1000.0 AS blocking_s,
        count(v.previous_end_ms) AS intervals,
        avg(v.start_ms - v.previous_end_ms) / 1000.0 AS interval_s
    FROM saves AS v
    JOIN metric_jobs AS j ON j.job_key = v.job_key
    GROUP BY j.model, j.gpus
),
held AS (
    SELECT
        j.model,
        j.gpus,
        count(DISTINCT a.job_key) AS jobs,
        sum((a.end_ms - a.start_ms) * j.gpus) / 3600000.0 AS held_gpu_h,
        sum(CASE WHEN a.end_reason IN ({{interruptions}}) THEN 1 ELSE 0 END) AS interruptions
    FROM metric_attempts AS a
    JOIN metric_jobs AS j ON j.job_key = a.job_key
    GROUP BY j.model, j.gpus
)
SELECT
    h.model,
    CAST(h.gpus AS BIGINT) AS gpus,
    CAST(h.jobs AS BIGINT) AS jobs,
    CAST(h.held_gpu_h AS DOUBLE) AS held_gpu_h,
    CAST(h.interruptions AS BIGINT) AS interruptions,
    CAST(coalesce(s.saves, 0) AS BIGINT) AS saves,
    CAST(s.blocking_s AS DOUBLE) AS blocking_s,
    CAST(coalesce(s.intervals, 0) AS BIGINT) AS intervals,
    CAST(s.interval_s AS DOUBLE) AS interval_s
FROM held AS h
LEFT JOIN save_stats AS s ON s.model = h.model AND s.gpus = h.gpus
ORDER BY h.model, h.gpus
