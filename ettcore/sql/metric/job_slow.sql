-- One row a measured job (job_metrics): its slow spans (train_slow), their slow time in seconds and GPU-hours, its
-- ideal pace (cursor units per second: job_ideal_pace's inverse; NULL without one), its ETT% and its ETT at ideal
-- pace: the share of its wall time that trained on new data at the ideal pace, 100 * (productive_s - slow_s) / wall_s
-- (never below 0).
WITH per_job AS (
    SELECT job_id, CAST(count(*) AS BIGINT) AS slow_spans, sum(slow_s) AS slow_s
    FROM train_slow
    GROUP BY job_id
),
measured AS (
    SELECT m.job_id, m.model, m.gpus, m.wall_s, m.productive_s, m.ett_pct,
           coalesce(p.slow_spans, 0) AS slow_spans,
           coalesce(p.slow_s, 0.0) AS slow_s,
           1.0 / r.ideal_s_per_unit AS ideal_pace_per_s
    FROM job_metrics AS m
    JOIN metric_jobs AS j ON j.job_id = m.job_id
    LEFT JOIN per_job AS p ON p.job_id = m.job_id
    LEFT JOIN job_ideal_pace AS r ON r.job_key = j.job_key
)
SELECT
    job_id,
    model,
    gpus,
    slow_spans,
    slow_s,
    gpus * slow_s / 3600.0 AS slow_gpu_h,
    ideal_pace_per_s,
    ett_pct,
    100.0 * greatest(0.0, productive_s - slow_s) / nullif(wall_s, 0) AS ett_ideal_pct
FROM measured
ORDER BY job_id
