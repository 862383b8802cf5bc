-- One row a measured job (job_metrics): its stalls (train_stalls): how many, the longest and their total stalled
-- time; its pace (train_pace) and the threshold its spans were judged by.
WITH per_job AS (
    SELECT job_id, CAST(count(*) AS BIGINT) AS stalls, max(stalled_s) AS longest_stall_s, sum(stalled_s) AS stall_s
    FROM train_stalls
    GROUP BY job_id
)
SELECT
    m.job_id,
    m.model,
    coalesce(p.stalls, 0) AS stalls,
    coalesce(p.longest_stall_s, 0.0) AS longest_stall_s,
    coalesce(p.stall_s, 0.0) AS stall_s,
    r.pace_per_s,
    r.stall_after_s
FROM job_metrics AS m
JOIN metric_jobs AS j ON j.job_id = m.job_id
LEFT JOIN per_job AS p ON p.job_id = m.job_id
LEFT JOIN train_pace AS r ON r.job_key = j.job_key
ORDER BY m.job_id
