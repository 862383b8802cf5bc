-- The spans (metric_spans) of the jobs with an attempt running at the as-of time: the only spans live_progress reads.
SELECT s.*
FROM metric_spans AS s
SEMI JOIN (SELECT job_key FROM metric_attempts WHERE end_reason = {{open_end_reason}}) AS r ON r.job_key = s.job_key
