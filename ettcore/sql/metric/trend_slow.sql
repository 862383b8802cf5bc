-- One row a calendar bucket ($every: day, week or month, UTC) holding the start of a slow span (train_slow): its
-- slow spans and their slow time in GPU-hours (gpus x slow_s / 3600).  A slow span counts in the bucket where it
-- starts, as slow time counts where a span starts.  Read beside fleet_trend (ettcore.metric.slow.trend).
SELECT
    CAST(date_trunc($every, CAST(s.start AS DATE)) AS DATE) AS bucket_start,
    CAST(count(*) AS BIGINT) AS slow_spans,
    sum(m.gpus * s.slow_s) / 3600.0 AS slow_gpu_h
FROM train_slow AS s
JOIN job_metrics AS m ON m.job_id = s.job_id
GROUP BY 1
ORDER BY 1
