-- clean_jobs of a store of several sources: every stored job (ett_jobs) with its jobs row, named source/job_id and
-- carrying its source as a label (a job whose source gave no jobs table gets NULLs, which metric_jobs.sql reads as a
-- missing row), so that a figure attributed again from the rows groups by source as the stored results do.
CREATE TEMP VIEW clean_jobs AS
SELECT e.source || '/' || e.job_id AS job_id, r.* EXCLUDE (source, ingest_id, job_id), e.source AS source
FROM st.ett_jobs AS e
LEFT JOIN st.rows_jobs AS r ON r.source = e.source AND r.job_id = e.job_id
