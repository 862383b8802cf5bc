-- attempts rows with a missing or unparsable field, or an end_reason that disagrees with end
WITH suspect AS MATERIALIZED (
    -- one scan: the rows with any of the problems below (few), then one branch a problem
    SELECT * FROM typed_attempts
    WHERE job_id IS NULL OR attempt IS NULL OR attempt < 0 OR start_ms IS NULL OR (end_raw IS NOT NULL AND end_ms IS NULL)
       OR end_reason IS NULL OR end_reason NOT IN ({{end_reasons}})
       OR (end_raw IS NULL AND end_reason IN ({{closed_end_reasons}}))
       OR (end_reason = {{open_end_reason}} AND end_raw IS NOT NULL)
),
bad AS (
    SELECT _file, _row, 'job_id' AS field, job_id, 'job_id is missing' AS message
    FROM suspect WHERE job_id IS NULL
    UNION ALL
    SELECT _file, _row, 'attempt', job_id,
           CASE WHEN attempt_raw IS NULL THEN 'attempt is missing' ELSE 'attempt is not an integer: ' || attempt_raw END
    FROM suspect WHERE attempt IS NULL
    UNION ALL
    SELECT _file, _row, 'attempt', job_id, 'attempt must be >= 0, got ' || attempt
    FROM suspect WHERE attempt < 0
    UNION ALL
    SELECT _file, _row, 'start', job_id,
           CASE WHEN start_raw IS NULL THEN 'start is missing'
                ELSE 'unparsable or implausible timestamp: ' || left(start_raw, 80) END
    FROM suspect WHERE start_ms IS NULL
    UNION ALL
    SELECT _file, _row, 'end', job_id, 'unparsable or implausible timestamp: ' || left(end_raw, 80)
    FROM suspect WHERE end_raw IS NOT NULL AND end_ms IS NULL
    UNION ALL
    SELECT _file, _row, 'end_reason', job_id,
           CASE WHEN end_reason IS NULL THEN 'end_reason is missing'
                ELSE 'unknown end_reason ' || left(end_reason, 80)
                     || ' (expected completed, failure, preemption, cancelled, running)' END
    FROM suspect
    WHERE end_reason IS NULL OR end_reason NOT IN ({{end_reasons}})
    UNION ALL
    SELECT _file, _row, 'end_reason', job_id, 'end is empty but end_reason is ' || end_reason || ' (expected running)'
    FROM suspect
    WHERE end_raw IS NULL AND end_reason IN ({{closed_end_reasons}})
    UNION ALL
    SELECT _file, _row, 'end', job_id, 'end_reason is running but end is set'
    FROM suspect WHERE end_reason = {{open_end_reason}} AND end_raw IS NOT NULL
)
SELECT 'attempts' AS table_name, _file, _row, field, job_id, message FROM bad
