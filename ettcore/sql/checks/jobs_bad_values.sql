-- jobs rows with a missing job_id or an unusable gpus value
WITH bad AS (
    SELECT _file, _row, 'job_id' AS field, job_id, 'job_id is missing' AS message
    FROM typed_jobs WHERE job_id IS NULL
    UNION ALL
    SELECT _file, _row, 'gpus', job_id, 'gpus is not an integer: ' || gpus_raw
    FROM typed_jobs WHERE gpus_raw IS NOT NULL AND gpus IS NULL
    UNION ALL
    SELECT _file, _row, 'gpus', job_id, 'gpus must be >= 1, got ' || gpus
    FROM typed_jobs WHERE gpus < 1
)
SELECT 'jobs' AS table_name, _file, _row, field, job_id, message FROM bad
