-- One row a group of jobs (a model, any label, or the whole fleet): GPU-time-weighted ETT%, the unweighted mean,
-- and GPU-hours of measured wall time, productive time, the L1 buckets and the time exclusion windows left out.
-- The GPU-hours of each Level 2 component are group_component_time's rows, placed before excluded_gpu_h.
-- The sums are of whole numbers (GPU-milliseconds, and each job's ETT% in billionths of a point), so they are exact
-- and the same in any order: DuckDB sums in parallel, and a sum of doubles would change in its last digits from one
-- run to the next.
WITH gpu_ms AS (
    -- a job's seconds are its whole milliseconds / 1000 (job_summary.sql), so round(s * 1000) gives them back exactly
    SELECT g.group_key,
           m.nof,
           m.cancelled,
           CAST(round(m.ett_pct * 1e9) AS BIGINT) AS ett_ppb,
           m.gpus * CAST(round(m.wall_s * 1000) AS BIGINT) AS wall,
           m.gpus * CAST(round(m.productive_s * 1000) AS BIGINT) AS productive,
           m.gpus * CAST(round(m.tts_s * 1000) AS BIGINT) AS tts,
           m.gpus * CAST(round(m.ttr_total_s * 1000) AS BIGINT) AS ttr_total,
           m.gpus * CAST(round(m.in_training_loss_s * 1000) AS BIGINT) AS in_training_loss,
           m.gpus * CAST(round(m.shutdown_tail_s * 1000) AS BIGINT) AS shutdown_tail,
           m.gpus * CAST(round(m.excluded_s * 1000) AS BIGINT) AS excluded
    FROM job_metrics AS m
    JOIN job_groups AS g ON g.job_id = m.job_id
)
SELECT
    group_key,
    CAST(count(*) AS BIGINT) AS jobs,
    100.0 * sum(productive) / nullif(sum(wall), 0) AS ett_pct,
    sum(ett_ppb) / 1e9 / nullif(count(ett_ppb), 0) AS ett_mean_pct,
    sum(wall) / 3.6e6 AS wall_gpu_h,
    sum(productive) / 3.6e6 AS productive_gpu_h,
    CAST(sum(nof) AS BIGINT) AS nof,
    CAST(sum(cancelled) AS BIGINT) AS cancelled,
    sum(tts) / 3.6e6 AS tts_gpu_h,
    sum(ttr_total) / 3.6e6 AS ttr_total_gpu_h,
    sum(in_training_loss) / 3.6e6 AS in_training_loss_gpu_h,
    sum(shutdown_tail) / 3.6e6 AS shutdown_tail_gpu_h,
    sum(excluded) / 3.6e6 AS excluded_gpu_h
FROM gpu_ms
GROUP BY group_key
ORDER BY group_key
