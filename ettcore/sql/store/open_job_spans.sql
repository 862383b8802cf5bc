-- The stored spans of the jobs with an open attempt (running at the store's analysis time), in the form the metric's
-- metric_spans.sql reads (keyed_spans.sql), read only from the row groups of the ingests that stored those jobs (a
-- running job is replaced by every refresh that sees it, so its rows are among the latest).
CREATE OR REPLACE TEMP VIEW ett_open_keyed AS
SELECT
    hash(ett_job_id(s.source, s.job_id)) AS job_key,
    s.attempt,
    p.phase_id,
    p.is_train,
    s.start_ms,
    s.end_ms,
    s.cursor_start,
    s.cursor_end
FROM st.rows_spans AS s
JOIN ett_phases AS p ON p.phase = s.phase
SEMI JOIN st.ett_jobs AS k ON k.source = s.source AND k.job_id = s.job_id AND k.open
WHERE s.ingest_id IN (SELECT ingest_id FROM st.ett_jobs WHERE open)
