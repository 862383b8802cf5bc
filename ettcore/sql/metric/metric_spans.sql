-- One row a span, clipped to the as-of time (a train span's end cursor prorated to the clipped end), with its phase id.
WITH params AS (
    SELECT as_of_ms, cut_ms FROM ett_params
),
started AS (
    SELECT s.job_id, s.attempt, s.start_ms, s.end_ms, s.cursor_start, s.cursor_end,
           ph.phase_id, ph.is_train, p.as_of_ms
    FROM clean_spans AS s
    JOIN ett_phases AS ph ON ph.phase = s.phase
    CROSS JOIN params AS p
    WHERE s.start_ms < p.cut_ms
)
SELECT
    hash(job_id) AS job_key,
    attempt,
    phase_id,
    is_train,
    start_ms,
    least(end_ms, as_of_ms) AS end_ms,
    CAST(cursor_start AS DOUBLE) AS cursor_start,
    CASE
        WHEN end_ms <= as_of_ms THEN CAST(cursor_end AS DOUBLE)
        ELSE cursor_start + (cursor_end - cursor_start) * (as_of_ms - start_ms) / (end_ms - start_ms)
    END AS cursor_end
FROM started
