-- attempts rows whose (job_id, attempt) appears more than once
WITH counted AS (
    SELECT _file, _row, job_id, attempt, count(*) OVER (PARTITION BY job_id, attempt) AS n
    FROM typed_attempts WHERE job_id IS NOT NULL AND attempt IS NOT NULL
)
SELECT 'attempts' AS table_name, _file, _row, 'attempt' AS field, job_id,
       'duplicate attempt ' || attempt || ' of job ' || job_id || ' (' || n || ' rows)' AS message
FROM counted WHERE n > 1
