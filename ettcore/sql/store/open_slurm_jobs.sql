-- The Slurm ids of the jobs of $source with an attempt without an end: the jobs table's slurm_job_id (NULL where
-- the store has no such column), else the job id.
SELECT DISTINCT coalesce(CAST({{each slurm_job_id: @}} AS VARCHAR), a.job_id) AS id
FROM st.rows_attempts AS a
LEFT JOIN st.rows_jobs AS j ON j.source = a.source AND j.job_id = a.job_id
WHERE a.source = $source AND a.end_ms IS NULL
ORDER BY id
