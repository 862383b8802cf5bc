-- The interruptions that are measured: attempts ended by failure or preemption at an instant outside the job's
-- unmeasured time (inside the analysis window and outside the exclusion windows that apply to the job).  All of
-- them by default.
SELECT a.job_key, a.end_ms, a.end_reason, a.cause_id
FROM metric_attempts AS a
ANTI JOIN unmeasured_time AS x ON x.job_key = a.job_key AND x.start_ms <= a.end_ms AND a.end_ms < x.end_ms
WHERE a.end_reason IN ({{interruptions}})
