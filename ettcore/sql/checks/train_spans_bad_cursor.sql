-- train spans without both cursors, or whose cursor decreases within the span
WITH bad AS (
    SELECT _file, _row, 'cursor_start' AS field, job_id, 'train span needs cursor_start' AS message
    FROM typed_spans WHERE phase = 'train' AND cursor_start_raw IS NULL
    UNION ALL
    SELECT _file, _row, 'cursor_end', job_id, 'train span needs cursor_end'
    FROM typed_spans WHERE phase = 'train' AND cursor_end_raw IS NULL
    UNION ALL
    SELECT _file, _row, 'cursor_end', job_id,
           'cursor decreases within the span (' || cursor_start || ' -> ' || cursor_end || ')'
    FROM typed_spans WHERE phase = 'train' AND cursor_end < cursor_start
)
SELECT 'spans' AS table_name, _file, _row, field, job_id, message FROM bad
