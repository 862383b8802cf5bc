-- The interruptions that are measured: attempts ended by failure or preemption at an instant inside the analysis
-- window and outside every exclusion window that applies to the job.  All of them when neither is set.
SELECT a.job_key, a.end_ms, a.end_reason
FROM metric_attempts AS a
CROSS JOIN ett_window AS w
ANTI JOIN job_exclusions AS x ON x.job_key = a.job_key AND x.start_ms <= a.end_ms AND a.end_ms < x.end_ms
WHERE a.end_reason IN ('failure', 'preemption')
  AND (w.since_ms IS NULL OR a.end_ms >= w.since_ms)
  AND (w.until_ms IS NULL OR a.end_ms < w.until_ms)
