-- One row a job that has started by the as-of time: integer job key, model, gpus, and the job's labels.
WITH started AS (
    SELECT DISTINCT a.job_id
    FROM clean_attempts AS a, ett_params AS p
    WHERE a.start_ms < p.cut_ms
)
SELECT
    hash(s.job_id) AS job_key,
    s.job_id,
    coalesce(j.model, s.job_id) AS model,
    coalesce(j.gpus, 1) AS gpus,
    j.* EXCLUDE (_file, _row, job_id, model, gpus, gpus_raw)
FROM started AS s
LEFT JOIN clean_jobs AS j ON j.job_id = s.job_id
