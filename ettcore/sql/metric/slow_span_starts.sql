-- One row a slow span (train_slow): its start (epoch ms) and its slow time in GPU-seconds (gpus x slow_s), the events
-- a rolling trend counts (rolling_starts.sql).
SELECT s.start_ms, m.gpus * s.slow_s AS gpu_s
FROM train_slow AS s
JOIN job_metrics AS m ON m.job_id = s.job_id
