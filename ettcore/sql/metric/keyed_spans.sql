-- One row a clean span with its 64-bit job key and phase id: what the attribution reads of a span.
-- (DuckDB reads the same columns from the span store, sql/store/span_store.sql, typed once at load.)
SELECT
    hash(s.job_id) AS job_key,
    s.attempt,
    ph.phase_id,
    ph.is_train,
    s.start_ms,
    s.end_ms,
    s.cursor_start,
    s.cursor_end
FROM clean_spans AS s
JOIN ett_phases AS ph ON ph.phase = s.phase
