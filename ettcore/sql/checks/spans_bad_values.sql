-- spans rows with a missing or unparsable field
WITH suspect AS MATERIALIZED (
    -- one scan: the rows with any of the problems below (few), then one branch a problem
    SELECT * FROM typed_spans
    WHERE job_id IS NULL OR attempt IS NULL OR phase IS NULL OR start_ms IS NULL OR end_ms IS NULL
       OR (cursor_start IS NULL AND cursor_start_raw IS NOT NULL) OR (cursor_end IS NULL AND cursor_end_raw IS NOT NULL)
),
bad AS (
    SELECT _file, _row, 'job_id' AS field, job_id, 'job_id is missing' AS message
    FROM suspect WHERE job_id IS NULL
    UNION ALL
    SELECT _file, _row, 'attempt', job_id,
           CASE WHEN attempt_raw IS NULL THEN 'attempt is missing' ELSE 'attempt is not an integer: ' || left(attempt_raw, 80) END
    FROM suspect WHERE attempt IS NULL
    UNION ALL
    SELECT _file, _row, 'phase', job_id, 'phase is missing'
    FROM suspect WHERE phase IS NULL
    UNION ALL
    SELECT _file, _row, 'start', job_id,
           CASE WHEN start_raw IS NULL THEN 'start is missing'
                ELSE 'unparsable or implausible timestamp: ' || left(start_raw, 80) END
    FROM suspect WHERE start_ms IS NULL
    UNION ALL
    SELECT _file, _row, 'end', job_id,
           CASE WHEN end_raw IS NULL THEN 'end is missing'
                ELSE 'unparsable or implausible timestamp: ' || left(end_raw, 80) END
    FROM suspect WHERE end_ms IS NULL
    UNION ALL
    SELECT _file, _row, 'cursor_start', job_id, 'cursor_start is not a finite number: ' || left(cursor_start_raw, 80)
    FROM suspect WHERE cursor_start_raw IS NOT NULL AND cursor_start IS NULL
    UNION ALL
    SELECT _file, _row, 'cursor_end', job_id, 'cursor_end is not a finite number: ' || left(cursor_end_raw, 80)
    FROM suspect WHERE cursor_end_raw IS NOT NULL AND cursor_end IS NULL
)
SELECT 'spans' AS table_name, _file, _row, field, job_id, message FROM bad
