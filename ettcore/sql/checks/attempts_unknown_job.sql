-- attempts whose job_id is not in the jobs table (only when a jobs table is given)
SELECT 'attempts' AS table_name, a._file, a._row, 'job_id' AS field, a.job_id,
       'unknown job ' || left(a.job_id, 80) || ' (not in the jobs table)' AS message
FROM typed_attempts AS a
ANTI JOIN typed_jobs AS j ON j.job_id = a.job_id
WHERE a.job_id IS NOT NULL
  AND (SELECT count(*) FROM typed_jobs) > 0
