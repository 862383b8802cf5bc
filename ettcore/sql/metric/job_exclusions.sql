-- Per job, the exclusion windows that apply to it (ett_exclusion_jobs), merged where they overlap or touch:
-- one row a disjoint interval [start_ms, end_ms) of excluded time.
WITH applied AS (
    SELECT m.job_key, x.start_ms, x.end_ms
    FROM ett_exclusion_jobs AS m
    JOIN ett_exclusions AS x ON x.exclusion_id = m.exclusion_id
),
reach AS (
    -- the latest end among the job's exclusions that start earlier
    SELECT job_key, start_ms, end_ms,
           max(end_ms) OVER (PARTITION BY job_key ORDER BY start_ms, end_ms ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach_ms
    FROM applied
),
islands AS (
    SELECT job_key, start_ms, end_ms,
           sum(CASE WHEN reach_ms IS NULL OR start_ms > reach_ms THEN 1 ELSE 0 END) OVER (
               PARTITION BY job_key ORDER BY start_ms, end_ms ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
           ) AS island
    FROM reach
)
SELECT job_key, min(start_ms) AS start_ms, max(end_ms) AS end_ms
FROM islands
GROUP BY job_key, island
