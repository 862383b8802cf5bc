-- spans that end before they start
SELECT 'spans' AS table_name, _file, _row, 'end' AS field, job_id,
       'end is before start' AS message
FROM typed_spans
WHERE end_ms < start_ms
