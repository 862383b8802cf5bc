-- One row a node: its exposure and its interruptions.  Reads node_attempts (job_key, attempt, node, k: one row a
-- node an attempt held, k the attempt's node count), attempt_held (attempt_held.sql), attempt_causes
-- and $causes (the causes that count against a node).
--   exposure_gpu_h: the node's share of the attempt's GPU-hours (gpus / k GPUs held for held_ms);
--   attempt_gpu_h: the whole GPU-hours of the attempts the node was in (the Poisson test's exposure);
--   interruptions: counted interruptions, each shared 1/k across the attempt's k nodes;
--   involved: counted interruptions of attempts the node was in, whole.
WITH counted AS (
    SELECT job_key, attempt, 1 AS n
    FROM attempt_causes
    WHERE list_contains($causes, cause)
)
SELECT
    n.node,
    count(*) AS attempts,
    count(DISTINCT n.job_key) AS jobs,
    sum(h.held_ms * h.gpus / n.k) / 3600000.0 AS exposure_gpu_h,
    sum(h.held_ms) / 3600000.0 AS held_h,
    sum(h.held_ms * h.gpus) / 3600000.0 AS attempt_gpu_h,
    coalesce(sum(c.n / n.k), 0) AS interruptions,
    coalesce(sum(c.n), 0)::BIGINT AS involved
FROM node_attempts AS n
JOIN attempt_held AS h ON h.job_key = n.job_key AND h.attempt = n.attempt
LEFT JOIN counted AS c ON c.job_key = n.job_key AND c.attempt = n.attempt
GROUP BY n.node
ORDER BY n.node
