-- One row a node a measured attempt held (node_attempts: job_key, attempt, node, k), with the attempt's measured time
-- (attempt_held): the node's exposure (gpus / k GPUs for held_ms) and the slow GPU-hours put on it.  A slow span's
-- GPU-hours (the job's gpus x slow_s, reading slow_attributed: job_id, attempt, node, slow_s) go to the node that held
-- it back where that is known (node not NULL), else are shared 1/k across the attempt's k nodes; slow_fraction is the
-- node's slow GPU-hours per GPU-hour of its exposure.  A holder node outside the attempt's node list is put nowhere.
WITH slow AS (
    SELECT j.job_key, s.attempt, s.node, sum(s.slow_s) AS slow_s
    FROM slow_attributed AS s
    JOIN metric_jobs AS j ON j.job_id = s.job_id
    GROUP BY j.job_key, s.attempt, s.node
),
pairs AS (
    SELECT n.node, n.job_key, n.attempt, n.k, h.gpus, h.held_ms,
           coalesce(sum(CASE WHEN s.node IS NULL THEN s.slow_s / n.k WHEN s.node = n.node THEN s.slow_s ELSE 0 END), 0)
               AS slow_s
    FROM node_attempts AS n
    JOIN attempt_held AS h ON h.job_key = n.job_key AND h.attempt = n.attempt
    LEFT JOIN slow AS s ON s.job_key = n.job_key AND s.attempt = n.attempt
    GROUP BY n.node, n.job_key, n.attempt, n.k, h.gpus, h.held_ms
)
SELECT
    node,
    job_key,
    attempt,
    held_ms * gpus / k / 3600000.0 AS exposure_gpu_h,
    gpus * slow_s / 3600.0 AS slow_gpu_h,
    (gpus * slow_s / 3600.0) / nullif(held_ms * gpus / k / 3600000.0, 0) AS slow_fraction
FROM pairs
ORDER BY node, job_key, attempt
