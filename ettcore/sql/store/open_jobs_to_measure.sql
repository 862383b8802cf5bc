-- The stored jobs of $source with an open attempt (an attempt without an end), less those of {{replaced}} (just
-- attributed): measured again when the source's horizon moved.
CREATE OR REPLACE TEMP TABLE ett_attr AS
SELECT k.source, k.job_id, k.job_key
FROM st.ett_jobs AS k
ANTI JOIN {{replaced}} AS x ON x.source = k.source AND x.job_id = k.job_id
WHERE k.open AND k.source = $source
