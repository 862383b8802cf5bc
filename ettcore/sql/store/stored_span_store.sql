-- span_store over the stored spans (clean_spans): the compact form the attribution reads (the loader's span store,
-- span_store.sql, of rows checked when they were ingested: none is suspect).
CREATE TEMP VIEW span_store AS
SELECT
    hash(s.job_id) AS job_key,
    s.attempt,
    CAST(p.phase_id AS SMALLINT) AS phase_id,
    s.start_ms,
    s.end_ms,
    s.cursor_start,
    s.cursor_end,
    false AS suspect
FROM clean_spans AS s
JOIN ett_phases AS p ON p.phase = s.phase
