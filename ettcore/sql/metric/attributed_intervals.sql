-- Every instant of the selected jobs' wall time as intervals [start_ms, end_ms), each with the L1 bucket, the phase
-- and the attempt in force: what a timeline draws.  $jobs is a list of job ids.
--
-- The per-interval form of the attribution in attributed_time.sql (the rules are in docs/metric.md), written as
-- an interval query instead of an event sweep: the wall time [T0, T1) of each job is cut at every boundary
-- (attempt starts and ends, span starts and ends, replay splits), and each elementary segment is classified
-- directly: productive if a productive part covers it; otherwise scheduling between attempts, the covering span
-- that ends last (ties: later phase) inside one, or unattributed; its L1 bucket from the non-productive stretch
-- it lies in.  Neighbouring segments of one bucket, phase and attempt are merged.  The tests hold the sums per
-- (job, bucket, phase) equal to attributed_time's, so the picture and the numbers cannot disagree.
WITH ids AS (
    SELECT
        (SELECT phase_id FROM ett_phases WHERE is_train) AS train_id,
        (SELECT phase_id FROM ett_phases WHERE phase = 'scheduling') AS scheduling_id
),
jobs AS (
    SELECT job_key, job_id FROM metric_jobs WHERE list_contains($jobs, job_id)
),
attempts AS (
    SELECT a.job_key, a.attempt, a.start_ms, a.end_ms, a.end_reason
    FROM metric_attempts AS a SEMI JOIN jobs AS j ON j.job_key = a.job_key
),
train AS (
    -- the replay high-water mark: the largest end cursor of the job's train spans that start earlier
    SELECT s.job_key, s.start_ms AS s, s.end_ms AS e, s.cursor_start AS c0, s.cursor_end AS c1,
           max(s.cursor_end) OVER (
               PARTITION BY s.job_key ORDER BY s.start_ms, s.end_ms
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
           ) AS hwm
    FROM metric_spans AS s SEMI JOIN jobs AS j ON j.job_key = s.job_key
    WHERE s.is_train
),
parts AS (
    -- covering parts: non-train spans, the replay part [s, split) of each train span as a train span ending at
    -- split, and the productive part [split, e)
    SELECT job_key, s, e,
           CASE
               WHEN hwm IS NULL THEN s
               WHEN c1 > c0 THEN s + CAST(least(CAST(e - s AS DOUBLE), greatest(0.0, floor(((hwm - c0) * (e - s)) / (c1 - c0)))) AS BIGINT)
               WHEN c0 <= hwm THEN e
               ELSE s
           END AS split
    FROM train
),
productive AS (
    SELECT job_key, split AS a, e AS b FROM parts WHERE e > split
),
covering AS (
    SELECT s.job_key, s.start_ms AS a, s.end_ms AS b, s.phase_id
    FROM metric_spans AS s SEMI JOIN jobs AS j ON j.job_key = s.job_key
    WHERE NOT s.is_train AND s.end_ms > s.start_ms
    UNION ALL
    SELECT p.job_key, p.s, p.split, ids.train_id FROM parts AS p, ids WHERE p.split > p.s
),
interruptions AS (
    SELECT job_key, end_ms AS t FROM attempts WHERE end_reason IN ('failure', 'preemption')
),
job_span AS (
    SELECT job_key, min(start_ms) AS t0, max(end_ms) AS t1 FROM attempts GROUP BY job_key
),
cuts AS (
    SELECT job_key, start_ms AS t FROM attempts
    UNION SELECT job_key, end_ms FROM attempts
    UNION SELECT job_key, a FROM covering UNION SELECT job_key, b FROM covering
    UNION SELECT job_key, a FROM productive UNION SELECT job_key, b FROM productive
),
segments AS (
    SELECT c.job_key, c.t AS a, lead(c.t) OVER (PARTITION BY c.job_key ORDER BY c.t) AS b
    FROM cuts AS c JOIN job_span AS w ON w.job_key = c.job_key AND c.t BETWEEN w.t0 AND w.t1
),
classified AS (
    SELECT g.job_key, g.a, g.b,
           EXISTS (SELECT 1 FROM productive AS p WHERE p.job_key = g.job_key AND p.a <= g.a AND g.b <= p.b) AS is_productive,
           (SELECT max(x.attempt) FROM attempts AS x WHERE x.job_key = g.job_key AND x.start_ms <= g.a AND g.b <= x.end_ms) AS attempt,
           (SELECT max(c.b * 1024 + c.phase_id) FROM covering AS c
             WHERE c.job_key = g.job_key AND c.a <= g.a AND g.b <= c.b) AS c_key,
           (SELECT max(p.b) FROM productive AS p WHERE p.job_key = g.job_key AND p.b <= g.a) AS prev_end,
           (SELECT min(p.a) FROM productive AS p WHERE p.job_key = g.job_key AND p.a >= g.b) AS next_start
    FROM segments AS g
    WHERE g.b > g.a
),
bucketed AS (
    SELECT c.job_key, c.a, c.b, c.attempt,
           CASE
               WHEN c.is_productive THEN ids.train_id
               WHEN c.attempt IS NULL THEN ids.scheduling_id
               WHEN c.c_key IS NOT NULL THEN c.c_key % 1024
               ELSE 0
           END AS phase_id,
           CASE
               WHEN c.is_productive THEN 'productive'
               WHEN c.prev_end IS NULL THEN
                   CASE WHEN EXISTS (SELECT 1 FROM interruptions AS i WHERE i.job_key = c.job_key AND i.t <= c.a)
                        THEN 'recovery' ELSE 'tts' END
               WHEN EXISTS (SELECT 1 FROM interruptions AS i, job_span AS w
                             WHERE i.job_key = c.job_key AND w.job_key = c.job_key
                               AND i.t BETWEEN c.prev_end AND coalesce(c.next_start, w.t1)) THEN 'recovery'
               WHEN c.next_start IS NULL THEN 'shutdown_tail'
               ELSE 'in_training_loss'
           END AS bucket
    FROM classified AS c, ids
),
islands AS (
    -- a new interval starts where the bucket, phase or attempt changes, or where the previous segment does not touch
    SELECT *,
           sum(CASE WHEN same THEN 0 ELSE 1 END) OVER (PARTITION BY job_key ORDER BY a) AS island
    FROM (
        SELECT *,
               coalesce(lag(b) OVER w = a AND lag(bucket) OVER w = bucket AND lag(phase_id) OVER w = phase_id
                        AND lag(attempt) OVER w IS NOT DISTINCT FROM attempt, false) AS same
        FROM bucketed
        WINDOW w AS (PARTITION BY job_key ORDER BY a)
    )
)
SELECT
    j.job_id,
    min(i.a) AS start_ms,
    max(i.b) AS end_ms,
    i.attempt,
    i.bucket,
    p.phase,
    CASE WHEN i.bucket = 'productive' THEN 'effective_training' ELSE p.component END AS component,
    CASE WHEN i.bucket = 'productive' THEN '(effective training)' ELSE p.owner END AS owner
FROM islands AS i
JOIN jobs AS j ON j.job_key = i.job_key
JOIN ett_phases AS p ON p.phase_id = i.phase_id
GROUP BY j.job_id, i.job_key, i.island, i.attempt, i.bucket, p.phase, p.component, p.owner
ORDER BY j.job_id, start_ms
