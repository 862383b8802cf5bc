-- attempts that start before the previous attempt of their job ended, or whose numbers do not increase with time
WITH ordered AS (
    SELECT _file, _row, job_id, attempt, start_ms, end_ms,
           lag(end_ms) OVER w AS prev_end,
           lag(attempt) OVER w AS prev_attempt,
           lag(start_ms) OVER w AS prev_start,
           count(*) OVER (PARTITION BY job_id) AS n,
           row_number() OVER w AS rn
    FROM typed_attempts
    WHERE job_id IS NOT NULL AND attempt IS NOT NULL AND start_ms IS NOT NULL
    WINDOW w AS (PARTITION BY job_id ORDER BY start_ms, attempt)
),
bad AS (
    SELECT _file, _row, 'start' AS field, job_id,
           'attempt ' || attempt || ' starts before attempt ' || prev_attempt || ' ended' AS message
    FROM ordered WHERE prev_start IS NOT NULL AND (prev_end IS NULL OR start_ms < prev_end)
    UNION ALL
    SELECT _file, _row, 'attempt', job_id,
           'attempt numbers do not increase with start time (' || prev_attempt || ' then ' || attempt || ')'
    FROM ordered WHERE prev_attempt IS NOT NULL AND attempt <= prev_attempt
    UNION ALL
    SELECT _file, _row, 'end', job_id, 'only the last attempt of a job may be running (end empty)'
    FROM ordered WHERE end_ms IS NULL AND rn < n
)
SELECT 'attempts' AS table_name, _file, _row, field, job_id, message FROM bad
