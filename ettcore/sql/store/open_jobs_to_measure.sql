-- The stored jobs with an open attempt (an attempt without an end), less those of {{replaced}} (just attributed, or
-- just removed): measured again when the store's analysis time moved.
CREATE OR REPLACE TEMP TABLE ett_attr AS
SELECT k.source, k.job_id, k.job_key
FROM st.ett_jobs AS k
ANTI JOIN {{replaced}} AS x ON x.source = k.source AND x.job_id = k.job_id
WHERE k.open
