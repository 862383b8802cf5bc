-- One row an exclusion window: what it took out of the measurement.  Per exclusion, of the jobs it applies to
-- (ett_exclusion_jobs), inside the analysis window: how many jobs' wall time it overlaps, the GPU-hours of their
-- wall time and of their productive time it covers, and the interruptions it left out.  Time inside two
-- overlapping exclusions counts in both rows (the jobs' excluded_s counts it once).
WITH job_span AS (
    SELECT job_key, min(start_ms) AS t0_ms, max(end_ms) AS t1_ms FROM metric_attempts GROUP BY job_key
),
covered AS (
    -- the part of each applicable job's wall time inside both the exclusion and the analysis window
    SELECT x.exclusion_id, m.job_key, j.gpus,
           greatest(x.start_ms, s.t0_ms, coalesce(w.since_ms, s.t0_ms)) AS a_ms,
           least(x.end_ms, s.t1_ms, coalesce(w.until_ms, s.t1_ms)) AS b_ms,
           greatest(x.start_ms, coalesce(w.since_ms, x.start_ms)) AS lo_ms,
           least(x.end_ms, coalesce(w.until_ms, x.end_ms)) AS hi_ms
    FROM ett_exclusions AS x
    JOIN ett_exclusion_jobs AS m ON m.exclusion_id = x.exclusion_id
    JOIN job_span AS s ON s.job_key = m.job_key
    JOIN metric_jobs AS j ON j.job_key = m.job_key
    CROSS JOIN ett_window AS w
),
wall AS (
    SELECT exclusion_id, CAST(count(*) AS BIGINT) AS jobs, sum((b_ms - a_ms) * gpus) AS gpu_ms
    FROM covered
    WHERE b_ms > a_ms
    GROUP BY exclusion_id
),
productive AS (
    -- the attribution cuts every job at the exclusion's and the window's bounds, so each cell lies wholly inside or
    -- outside [lo, hi); a cell's cell_ms is the cut or grid mark at or before its start (a job's first cell may start
    -- before the job), so cells are selected by those bounds, not by the job's own span
    SELECT c.exclusion_id, sum(t.ms * c.gpus) AS gpu_ms
    FROM covered AS c
    JOIN attributed_time AS t ON t.job_key = c.job_key AND t.cell_ms >= c.lo_ms AND t.cell_ms < c.hi_ms
    WHERE c.b_ms > c.a_ms AND t.bucket = 'productive'
    GROUP BY c.exclusion_id
),
stops AS (
    SELECT c.exclusion_id, CAST(count(*) AS BIGINT) AS nof
    FROM covered AS c
    JOIN metric_attempts AS a ON a.job_key = c.job_key AND a.end_ms >= c.lo_ms AND a.end_ms < c.hi_ms
    WHERE a.end_reason IN ({{interruptions}})
    GROUP BY c.exclusion_id
)
SELECT
    x.exclusion_id,
    epoch_ms(x.start_ms) AS start,
    epoch_ms(x.end_ms) AS "end",
    x.reason,
    x.job_filter AS job,
    x.label_filter AS label,
    coalesce(w.jobs, 0) AS jobs,
    coalesce(w.gpu_ms, 0) / 3.6e6 AS wall_gpu_h,
    coalesce(p.gpu_ms, 0) / 3.6e6 AS productive_gpu_h,
    coalesce(s.nof, 0) AS nof
FROM ett_exclusions AS x
LEFT JOIN wall AS w ON w.exclusion_id = x.exclusion_id
LEFT JOIN productive AS p ON p.exclusion_id = x.exclusion_id
LEFT JOIN stops AS s ON s.exclusion_id = x.exclusion_id
ORDER BY x.exclusion_id
