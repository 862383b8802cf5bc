-- One row a measured interruption (an attempt ended by failure or preemption, inside the analysis window and
-- outside the job's exclusion windows) with its cause: the attempt's own `cause` where the trace gives one
-- (attempt_given: job_id, attempt, nodes, cause, _file, _row), else derived from the end reason as the trace format
-- says (the vocabulary's `derived`: preemption -> preemption, failure -> unknown).
SELECT
    a.job_key,
    a.attempt,
    a.end_ms,
    a.end_reason,
    coalesce(
        nullif(lower(trim(g.cause)), ''),
        CASE a.end_reason {{derived_cause}} END
    ) AS cause
FROM metric_attempts AS a
JOIN metric_jobs AS j ON j.job_key = a.job_key
LEFT JOIN attempt_given AS g ON g.job_id = j.job_id AND g.attempt = a.attempt
ANTI JOIN unmeasured_time AS x ON x.job_key = a.job_key AND x.start_ms <= a.end_ms AND a.end_ms < x.end_ms
WHERE a.end_reason IN ({{interruptions}})
