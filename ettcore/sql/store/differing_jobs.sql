-- The changed jobs that differ in {{table}} (ett_cmp: compared_jobs.sql), as a table of their ids: the jobs whose
-- incoming and stored rows field_differences.sql reads (each side a semi join on this small table).
CREATE OR REPLACE TEMP TABLE ett_diff AS
SELECT job_id
FROM ett_cmp
WHERE changed AND d_{{table}}
