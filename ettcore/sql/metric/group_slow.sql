-- One row a group of jobs (job_groups: a model, any label, or the whole fleet): its measured jobs, their slow spans
-- and slow GPU-hours (job_slow), and its GPU-time-weighted ETT at ideal pace, 100 * sum(gpus * (productive_s -
-- slow_s), not below 0 a job) / sum(gpus * wall_s), beside its ETT% (group_summary's).
SELECT
    g.group_key,
    CAST(count(*) AS BIGINT) AS jobs,
    CAST(sum(s.slow_spans) AS BIGINT) AS slow_spans,
    sum(s.slow_gpu_h) AS slow_gpu_h,
    100.0 * sum(m.gpus * m.productive_s) / nullif(sum(m.gpus * m.wall_s), 0) AS ett_pct,
    100.0 * sum(m.gpus * greatest(0.0, m.productive_s - s.slow_s)) / nullif(sum(m.gpus * m.wall_s), 0) AS ett_ideal_pct
FROM job_slow AS s
JOIN job_metrics AS m ON m.job_id = s.job_id
JOIN job_groups AS g ON g.job_id = s.job_id
GROUP BY g.group_key
ORDER BY g.group_key
