-- rank_timing rows with a missing or unusable value: a job id, an attempt and a rank (integers >= 0), a start and an
-- end, steps (an integer >= 1: a window holds the steps a rank ended in it) and work_s, wait_s (finite seconds >= 0)
WITH suspect AS MATERIALIZED (
    -- one scan: the rows with any of the problems below (few), then one branch a problem
    SELECT * FROM typed_rank_timing
    WHERE job_id IS NULL OR attempt IS NULL OR attempt < 0 OR rank IS NULL OR rank < 0 OR start_ms IS NULL
       OR end_ms IS NULL OR steps IS NULL OR steps < 1 OR work_s IS NULL OR work_s < 0 OR wait_s IS NULL
       OR wait_s < 0
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
    SELECT _file, _row, 'rank', job_id,
           CASE WHEN rank_raw IS NULL THEN 'rank is missing' ELSE 'rank is not an integer: ' || left(rank_raw, 80) END
    FROM suspect WHERE rank IS NULL
    UNION ALL
    SELECT _file, _row, 'rank', job_id, 'rank must be >= 0, got ' || rank
    FROM suspect WHERE rank < 0
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
    SELECT _file, _row, 'steps', job_id,
           CASE WHEN steps_raw IS NULL THEN 'steps is missing' ELSE 'steps is not an integer: ' || left(steps_raw, 80) END
    FROM suspect WHERE steps IS NULL
    UNION ALL
    SELECT _file, _row, 'steps', job_id, 'steps must be >= 1, got ' || steps
    FROM suspect WHERE steps < 1
    UNION ALL
    SELECT _file, _row, 'work_s', job_id,
           CASE WHEN work_s_raw IS NULL THEN 'work_s is missing'
                ELSE 'work_s is not a finite number: ' || left(work_s_raw, 80) END
    FROM suspect WHERE work_s IS NULL
    UNION ALL
    SELECT _file, _row, 'work_s', job_id, 'work_s must be >= 0 seconds, got ' || work_s
    FROM suspect WHERE work_s < 0
    UNION ALL
    SELECT _file, _row, 'wait_s', job_id,
           CASE WHEN wait_s_raw IS NULL THEN 'wait_s is missing'
                ELSE 'wait_s is not a finite number: ' || left(wait_s_raw, 80) END
    FROM suspect WHERE wait_s IS NULL
    UNION ALL
    SELECT _file, _row, 'wait_s', job_id, 'wait_s must be >= 0 seconds, got ' || wait_s
    FROM suspect WHERE wait_s < 0
)
SELECT 'rank_timing' AS table_name, _file, _row, field, job_id, message FROM bad
