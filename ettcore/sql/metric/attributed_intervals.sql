-- Every instant of the selected jobs' wall time as intervals [start_ms, end_ms), each with the L1 bucket, the phase
-- and the attempt in force: what a timeline draws.  $jobs is a list of job ids, $keys their job keys (a filter on
-- the key itself reaches through the attribution's window functions to its inputs, so only those jobs are cut).
--
-- The pieces of attributed_segments (the one place the attribution is written; attributed_time sums the same
-- pieces), in time order: productive [t, b1), covered [b1, b2), unattributed [b2, b3), scheduling [b3, t_next).
-- Neighbouring pieces of one bucket, phase and attempt are merged, so cuts at grid marks or windows do not show.
WITH ids AS (
    SELECT
        (SELECT phase_id FROM ett_phases WHERE is_train) AS train_id,
        (SELECT phase_id FROM ett_phases WHERE phase = 'scheduling') AS scheduling_id
),
jobs AS (
    SELECT job_key, job_id FROM metric_jobs WHERE list_contains($jobs, job_id)
),
pieces AS (
    SELECT s.job_key, s.attempt, s.c_phase, s.loss_bucket,
           unnest([
               {'kind': 0, 'a': s.t, 'b': s.b1},
               {'kind': 1, 'a': s.b1, 'b': s.b2},
               {'kind': 2, 'a': s.b2, 'b': s.b3},
               {'kind': 3, 'a': s.b3, 'b': s.t_next}
           ], recursive := true)
    FROM attributed_segments AS s
    WHERE list_contains($keys, s.job_key)
),
classified AS (
    SELECT job_key, a, b,
           CASE WHEN kind = 3 THEN NULL ELSE attempt END AS attempt,
           CASE kind WHEN 0 THEN ids.train_id WHEN 1 THEN c_phase WHEN 2 THEN 0 ELSE ids.scheduling_id END AS phase_id,
           CASE WHEN kind = 0 THEN 'productive' ELSE loss_bucket END AS bucket
    FROM pieces, ids
    WHERE b > a
),
islands AS (
    -- a new interval starts where the bucket, phase or attempt changes, or where the previous piece does not touch
    SELECT *,
           sum(CASE WHEN same THEN 0 ELSE 1 END) OVER (PARTITION BY job_key ORDER BY a) AS island
    FROM (
        SELECT *,
               coalesce(lag(b) OVER w = a AND lag(bucket) OVER w = bucket AND lag(phase_id) OVER w = phase_id
                        AND lag(attempt) OVER w IS NOT DISTINCT FROM attempt, false) AS same
        FROM classified
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
