-- The stored jobs of $source that a refresh replaces because they changed (ett_cmp: compared_jobs.sql), with the
-- ingest that stored each: their rows and results are deleted, their fields compared.
CREATE OR REPLACE TEMP TABLE ett_gone AS
SELECT k.source, k.job_id, k.job_key, k.ingest_id
FROM st.ett_jobs AS k
SEMI JOIN ett_cmp AS c ON c.job_id = k.job_id AND c.changed
WHERE k.source = $source
