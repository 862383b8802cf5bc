-- One row a restart storm (docs/metric.md "Restart storms"), per group of jobs (job_groups: the fleet, or one value
-- of a column such as a Slurm partition): at least $storm_n interruptions of the group's jobs within $storm_window_ms.
-- An interruption whose window [t, t + window) holds at least $storm_n interruptions is dense; a storm is the union of
-- the dense windows that overlap, from its first to its last interruption.  Attempts clipped to the as-of time.
WITH interrupted AS (
    SELECT g.group_key, a.job_key, a.attempt, a.end_ms AS t_ms
    FROM metric_attempts AS a
    JOIN metric_jobs AS j ON j.job_key = a.job_key
    JOIN job_groups AS g ON g.job_id = j.job_id
    WHERE a.end_reason IN ({{interruptions}})
),
dense AS (  -- each dense interruption's window, to the last interruption in it
    SELECT i.group_key, i.t_ms AS start_ms, max(o.t_ms) AS end_ms
    FROM interrupted AS i
    JOIN interrupted AS o
        ON o.group_key = i.group_key AND o.t_ms >= i.t_ms AND o.t_ms < i.t_ms + $storm_window_ms
    GROUP BY i.group_key, i.job_key, i.attempt, i.t_ms
    HAVING count(*) >= $storm_n
),
marked AS (  -- a window that starts after every earlier one ended starts a storm
    SELECT
        *,
        CASE
            WHEN start_ms <= max(end_ms) OVER (
                PARTITION BY group_key ORDER BY start_ms, end_ms ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
            ) THEN 0
            ELSE 1
        END AS starts_storm
    FROM dense
),
numbered AS (
    SELECT
        *,
        sum(starts_storm) OVER (
            PARTITION BY group_key ORDER BY start_ms, end_ms ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        ) AS storm
    FROM marked
),
storms AS (
    SELECT group_key, storm, min(start_ms) AS start_ms, max(end_ms) AS end_ms
    FROM numbered
    GROUP BY group_key, storm
)
SELECT
    s.group_key,
    epoch_ms(s.start_ms) AS first_interruption,
    epoch_ms(s.end_ms) AS last_interruption,
    CAST(count(*) AS BIGINT) AS interruptions,
    CAST(count(DISTINCT i.job_key) AS BIGINT) AS jobs
FROM storms AS s
JOIN interrupted AS i ON i.group_key = s.group_key AND i.t_ms >= s.start_ms AND i.t_ms <= s.end_ms
GROUP BY s.group_key, s.storm, s.start_ms, s.end_ms
ORDER BY s.group_key, s.start_ms
