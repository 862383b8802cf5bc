-- One row an attempt, clipped to the as-of time: an attempt still open then is 'running' and ends at as-of.
WITH params AS (
    SELECT as_of_ms, cut_ms FROM ett_params
),
started AS (
    SELECT a.job_id, a.attempt, a.start_ms, a.end_ms, a.end_reason, p.as_of_ms
    FROM clean_attempts AS a, params AS p
    WHERE a.start_ms < p.cut_ms
)
SELECT
    hash(job_id) AS job_key,
    attempt,
    start_ms,
    CASE WHEN end_ms IS NULL OR end_ms > as_of_ms THEN as_of_ms ELSE end_ms END AS end_ms,
    CASE WHEN end_ms IS NULL OR end_ms > as_of_ms THEN 'running' ELSE end_reason END AS end_reason
FROM started
