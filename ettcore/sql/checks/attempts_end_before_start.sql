-- attempts that end before they start
SELECT 'attempts' AS table_name, _file, _row, 'end' AS field, job_id,
       'end is before start' AS message
FROM typed_attempts
WHERE end_ms < start_ms
