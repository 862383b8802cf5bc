-- train spans without both cursors, or whose cursor decreases within the span
WITH suspect AS MATERIALIZED (
    -- one scan: the rows with any of the problems below (few), then one branch a problem
    SELECT * FROM typed_spans
    WHERE phase = 'train' AND ((cursor_start IS NULL AND cursor_start_raw IS NULL) OR (cursor_end IS NULL AND cursor_end_raw IS NULL)
                              OR cursor_end < cursor_start)
),
bad AS (
    SELECT _file, _row, 'cursor_start' AS field, job_id, 'train span needs cursor_start' AS message
    FROM suspect WHERE phase = 'train' AND cursor_start_raw IS NULL
    UNION ALL
    SELECT _file, _row, 'cursor_end', job_id, 'train span needs cursor_end'
    FROM suspect WHERE phase = 'train' AND cursor_end_raw IS NULL
    UNION ALL
    SELECT _file, _row, 'cursor_end', job_id,
           'cursor decreases within the span (' || cursor_start || ' -> ' || cursor_end || ')'
    FROM suspect WHERE phase = 'train' AND cursor_end < cursor_start
)
SELECT 'spans' AS table_name, _file, _row, field, job_id, message FROM bad
