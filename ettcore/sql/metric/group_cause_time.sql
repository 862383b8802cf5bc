-- NoF and lost GPU-time per group of jobs and interruption cause (job_cause_time, through job_groups): one row a group
-- and cause with either, in the vocabulary's order.  Each job's seconds are whole milliseconds / 1000, so
-- round(s * 1000) gives them back exactly and the sums (of whole numbers) are the same in any order.
SELECT
    g.group_key,
    c.cause,
    CAST(sum(c.nof) AS BIGINT) AS nof,
    sum(CAST(round(c.lost_s * 1000) AS BIGINT)) / 1000.0 AS lost_s,
    sum(m.gpus * CAST(round(c.lost_s * 1000) AS BIGINT)) / 3.6e6 AS lost_gpu_h
FROM job_cause_time AS c
JOIN job_metrics AS m ON m.job_id = c.job_id
JOIN job_groups AS g ON g.job_id = c.job_id
GROUP BY g.group_key, c.cause_id, c.cause
ORDER BY g.group_key, c.cause_id
