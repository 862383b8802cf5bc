-- One row a span (of keyed_spans), clipped to the as-of time (a train span's end cursor prorated to the clipped end), with its phase id.
WITH params AS (
    SELECT as_of_ms, cut_ms FROM ett_params
),
started AS (
    SELECT s.job_key, s.attempt, s.start_ms, s.end_ms, s.cursor_start, s.cursor_end, s.phase_id, s.is_train, p.as_of_ms
    FROM keyed_spans AS s
    CROSS JOIN params AS p
    WHERE s.start_ms < p.cut_ms
)
SELECT
    job_key,
    attempt,
    CAST(phase_id AS BIGINT) AS phase_id,
    is_train,
    start_ms,
    least(end_ms, as_of_ms) AS end_ms,
    CAST(cursor_start AS DOUBLE) AS cursor_start,
    CASE
        WHEN end_ms <= as_of_ms THEN CAST(cursor_end AS DOUBLE)
        ELSE cursor_start + (cursor_end - cursor_start) * (as_of_ms - start_ms) / (end_ms - start_ms)
    END AS cursor_end
FROM started
