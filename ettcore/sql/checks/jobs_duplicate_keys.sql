-- jobs rows whose job_id appears more than once
WITH counted AS (
    SELECT _file, _row, job_id, count(*) OVER (PARTITION BY job_id) AS n
    FROM typed_jobs WHERE job_id IS NOT NULL
)
SELECT 'jobs' AS table_name, _file, _row, 'job_id' AS field, job_id,
       'duplicate job_id (' || n || ' rows)' AS message
FROM counted WHERE n > 1
