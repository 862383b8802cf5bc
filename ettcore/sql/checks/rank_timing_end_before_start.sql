-- rank_timing windows that end before they start
SELECT 'rank_timing' AS table_name, _file, _row, 'end' AS field, job_id,
       'end is before start' AS message
FROM typed_rank_timing
WHERE end_ms < start_ms
