-- spans whose (job_id, attempt) is not in the attempts table
SELECT 'spans' AS table_name, s._file, s._row, 'attempt' AS field, s.job_id,
       'unknown attempt ' || s.attempt || ' of job ' || left(s.job_id, 80) AS message
FROM typed_spans AS s
ANTI JOIN typed_attempts AS a ON a.job_id = s.job_id AND a.attempt = s.attempt
WHERE s.job_id IS NOT NULL AND s.attempt IS NOT NULL
