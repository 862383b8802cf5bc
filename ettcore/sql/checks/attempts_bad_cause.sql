-- attempts rows whose cause is not one of the vocabulary (ett_causes: ettcore/defaults/causes.yaml), or that give a
-- cause to an attempt that did not interrupt its job: a cause belongs to an end by failure or preemption (a
-- completed, cancelled or running attempt has none).  An empty value is no cause (the end reason gives it).
SELECT 'attempts' AS table_name, _file, _row, 'cause' AS field, job_id,
       CASE
           WHEN cause NOT IN (SELECT c.cause FROM ett_causes AS c)
               THEN 'unknown cause ' || left(cause, 80)
                    || ' (expected preemption, user_error, time_limit, node_failure, infrastructure, hardware, unknown)'
           ELSE 'a cause is given only for an interruption (end_reason failure or preemption), not for ' || end_reason
       END AS message
FROM typed_attempts
WHERE cause IS NOT NULL AND trim(cause) <> ''
  AND (cause NOT IN (SELECT c.cause FROM ett_causes AS c) OR end_reason IN ({{not_interruptions}}))
