-- Per job, the time that is not measured, as disjoint intervals [start_ms, end_ms): before the analysis window's
-- since, from its until on, and inside each exclusion window that applies to the job (ett_exclusion_jobs); merged
-- where they overlap or touch.  No row at all for the default, when every instant is measured.
WITH applied AS (
    SELECT j.job_key, 0 AS start_ms, w.since_ms AS end_ms
    FROM metric_jobs AS j
    CROSS JOIN ett_window AS w
    WHERE w.since_ms IS NOT NULL
    UNION ALL
    SELECT j.job_key, w.until_ms, 9000000000000000  -- far past any plausible instant (year 2100 is 4.1e12 ms)
    FROM metric_jobs AS j
    CROSS JOIN ett_window AS w
    WHERE w.until_ms IS NOT NULL
    UNION ALL
    SELECT m.job_key, x.start_ms, x.end_ms
    FROM ett_exclusion_jobs AS m
    JOIN ett_exclusions AS x ON x.exclusion_id = m.exclusion_id
),
reach AS (
    -- the latest end among the job's intervals that start earlier
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
