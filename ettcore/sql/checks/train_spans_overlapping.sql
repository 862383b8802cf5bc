-- train spans that overlap an earlier train span of the same job
WITH ordered AS (
    SELECT _file, _row, job_id, start_ms, end_ms,
           max(end_ms) OVER (PARTITION BY job_id ORDER BY start_ms, end_ms, _file, _row
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM typed_spans
    WHERE phase = 'train' AND job_id IS NOT NULL AND start_ms IS NOT NULL AND end_ms IS NOT NULL
)
SELECT 'spans' AS table_name, _file, _row, 'start' AS field, job_id,
       'train span overlaps an earlier train span of the same job' AS message
FROM ordered
WHERE start_ms < prev_end
