-- One row an attempt, clipped to the as-of time: an attempt still open then is 'running' and ends at as-of.
-- cause_id (ett_causes): an interruption's cause, the attempt's own or, without one, the one its end reason gives (ett_causes'
-- derived_from: preemption -> preemption, failure -> unknown, ettcore/defaults/causes.yaml); NULL for an attempt that did not interrupt its job.
WITH params AS (
    SELECT as_of_ms, cut_ms FROM ett_params
),
started AS (
    SELECT a.job_id, a.attempt, a.start_ms, a.end_ms, a.end_reason, nullif(trim(a.cause), '') AS cause, p.as_of_ms
    FROM clean_attempts AS a, params AS p
    WHERE a.start_ms < p.cut_ms
),
clipped AS (
    SELECT
        hash(job_id) AS job_key,
        attempt,
        start_ms,
        CASE WHEN end_ms IS NULL OR end_ms > as_of_ms THEN as_of_ms ELSE end_ms END AS end_ms,
        CASE WHEN end_ms IS NULL OR end_ms > as_of_ms THEN {{open_end_reason}} ELSE end_reason END AS end_reason,
        cause
    FROM started
)
SELECT
    a.job_key,
    a.attempt,
    a.start_ms,
    a.end_ms,
    a.end_reason,
    c.cause_id
FROM clipped AS a
LEFT JOIN ett_causes AS c
    ON a.end_reason IN ({{interruptions}})
   AND (c.cause = a.cause OR (a.cause IS NULL AND c.derived_from = a.end_reason))
