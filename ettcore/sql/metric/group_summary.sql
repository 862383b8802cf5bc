-- One row a group of jobs (a model, any label, or the whole fleet): GPU-time-weighted ETT%, the unweighted mean,
-- and GPU-hours of measured wall time, productive time, each component and the time exclusion windows left out.
SELECT
    g.group_key,
    CAST(count(*) AS BIGINT) AS jobs,
    100.0 * sum(m.gpus * m.productive_s) / nullif(sum(m.gpus * m.wall_s), 0) AS ett_pct,
    avg(m.ett_pct) AS ett_mean_pct,
    sum(m.gpus * m.wall_s) / 3600.0 AS wall_gpu_h,
    sum(m.gpus * m.productive_s) / 3600.0 AS productive_gpu_h,
    CAST(sum(m.nof) AS BIGINT) AS nof,
    sum(m.gpus * m.tts_s) / 3600.0 AS tts_gpu_h,
    sum(m.gpus * m.ttr_total_s) / 3600.0 AS ttr_total_gpu_h,
    sum(m.gpus * m.in_training_loss_s) / 3600.0 AS in_training_loss_gpu_h,
    sum(m.gpus * m.shutdown_tail_s) / 3600.0 AS shutdown_tail_gpu_h,
    sum(m.gpus * m.scheduling_s) / 3600.0 AS scheduling_gpu_h,
    sum(m.gpus * m.hardware_setup_s) / 3600.0 AS hardware_setup_gpu_h,
    sum(m.gpus * m.trainer_init_s) / 3600.0 AS trainer_init_gpu_h,
    sum(m.gpus * m.pt2_compile_s) / 3600.0 AS pt2_compile_gpu_h,
    sum(m.gpus * m.wasted_training_s) / 3600.0 AS wasted_training_gpu_h,
    sum(m.gpus * m.shutdown_s) / 3600.0 AS shutdown_gpu_h,
    sum(m.gpus * m.unattributed_s) / 3600.0 AS unattributed_gpu_h,
    sum(m.gpus * m.excluded_s) / 3600.0 AS excluded_gpu_h
FROM job_metrics AS m
JOIN job_groups AS g ON g.job_id = m.job_id
GROUP BY g.group_key
ORDER BY g.group_key
