-- spans that start before their attempt started or end after it ended
WITH joined AS (
    SELECT s._file, s._row, s.job_id, s.start_ms, s.end_ms,
           a.start_ms AS a_start, a.end_ms AS a_end, s.attempt
    FROM typed_spans AS s
    JOIN typed_attempts AS a ON a.job_id = s.job_id AND a.attempt = s.attempt
    WHERE s.start_ms IS NOT NULL AND s.end_ms IS NOT NULL AND a.start_ms IS NOT NULL
),
bad AS (
    SELECT _file, _row, 'start' AS field, job_id,
           'span starts before its attempt ' || attempt || ' started' AS message
    FROM joined WHERE start_ms < a_start
    UNION ALL
    SELECT _file, _row, 'end', job_id, 'span ends after its attempt ' || attempt || ' ended'
    FROM joined WHERE a_end IS NOT NULL AND end_ms > a_end
)
SELECT 'spans' AS table_name, _file, _row, field, job_id, message FROM bad
