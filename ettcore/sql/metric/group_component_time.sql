-- GPU-hours of measured non-productive time per group of jobs and Level 2 component (job_component_time, through
-- job_groups): one row a group and component with time.  ettcore.metric places them in the group summary as one
-- column a component.  Each job's seconds are whole milliseconds / 1000, so round(s * 1000) gives them back exactly
-- and the sums (of whole numbers) are the same in any order.
SELECT
    g.group_key,
    c.component,
    sum(m.gpus * CAST(round(c.seconds * 1000) AS BIGINT)) / 3.6e6 AS gpu_h
FROM job_component_time AS c
JOIN job_metrics AS m ON m.job_id = c.job_id
JOIN job_groups AS g ON g.job_id = c.job_id
GROUP BY ALL
