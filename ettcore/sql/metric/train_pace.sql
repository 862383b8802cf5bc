-- One row a job: its pace (the median, over its train spans that advanced, of cursor units per second; NULL when
-- none did: job_pace) and the threshold its stalls are judged by: ett_stall_params.stall_after_s when set, else the time
-- of 10 cursor units at that pace but at least 60 s.
SELECT j.job_key, p.pace_per_s,
       coalesce(c.stall_after_s, greatest(60.0, coalesce(10.0 / p.pace_per_s, 0.0))) AS stall_after_s
FROM metric_jobs AS j
LEFT JOIN job_pace AS p ON p.job_key = j.job_key
CROSS JOIN ett_stall_params AS c
