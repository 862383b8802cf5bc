-- rank_timing windows whose (job_id, attempt) is not in the attempts table
SELECT 'rank_timing' AS table_name, w._file, w._row, 'attempt' AS field, w.job_id,
       'unknown attempt ' || w.attempt || ' of job ' || left(w.job_id, 80) AS message
FROM typed_rank_timing AS w
ANTI JOIN typed_attempts AS a ON a.job_id = w.job_id AND a.attempt = w.attempt
WHERE w.job_id IS NOT NULL AND w.attempt IS NOT NULL
