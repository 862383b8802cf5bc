-- One row a span as read (every row, with or without problems), in the compact typed form the span checks' screen
-- and the attribution share: the job key (NULL without a job id), the phase id (NULL for a phase the vocabulary
-- lacks; train spans are those of ett_phases' train id), integer-ms times, finite cursors, and `suspect`: true
-- where any span check could reject the row.
--
-- `suspect` is the union of the failing conditions of the span checks in sql/checks/ (spans_bad_values,
-- spans_end_before_start, spans_unknown_attempt, spans_outside_attempt, spans_unknown_phase, train_spans_bad_cursor),
-- written so that a NULL counts as suspect: a row no check would reject may be suspect, a rejected row always is.
-- train_spans_overlapping needs the spans of a job in order: train_overlap_suspects.sql screens it per batch.
WITH attempt_keys AS (
    -- one row an (job_id, attempt) key; a key given twice is suspect (attempts_duplicate_keys rejects it)
    SELECT job_id, attempt, min(start_ms) AS a_start, max(end_ms) AS a_end, count(end_ms) AS n_end, count(*) AS n
    FROM typed_attempts
    WHERE job_id IS NOT NULL AND attempt IS NOT NULL
    GROUP BY job_id, attempt
)
SELECT
    CASE WHEN s.job_id IS NOT NULL THEN hash(s.job_id) END AS job_key,
    s.attempt,
    CAST(ph.phase_id AS SMALLINT) AS phase_id,
    s.start_ms,
    s.end_ms,
    s.cursor_start,
    s.cursor_end,
    coalesce(
        s.job_id IS NULL OR s.attempt IS NULL OR s.phase IS NULL OR s.start_ms IS NULL OR s.end_ms IS NULL
        OR (s.cursor_start IS NULL AND s.cursor_start_raw IS NOT NULL) OR (s.cursor_end IS NULL AND s.cursor_end_raw IS NOT NULL)
        OR s.end_ms < s.start_ms
        OR a.n IS NULL OR a.n > 1
        OR s.start_ms < a.a_start OR (a.n_end > 0 AND s.end_ms > a.a_end)
        OR ph.phase_id IS NULL OR ph.phase_id = 0
        OR (s.phase = 'train' AND (s.cursor_start IS NULL OR s.cursor_end IS NULL OR s.cursor_end < s.cursor_start)),
        true
    ) AS suspect
FROM typed_spans AS s
LEFT JOIN ett_phases AS ph ON ph.phase = s.phase
LEFT JOIN attempt_keys AS a ON a.job_id = s.job_id AND a.attempt = s.attempt
