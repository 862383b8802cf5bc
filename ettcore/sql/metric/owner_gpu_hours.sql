-- GPU-hours lost per group, component and owner (measured non-productive time only), largest first.
WITH lost AS (
    SELECT g.group_key, p.component, p.owner, sum(t.ms * j.gpus) / 3.6e6 AS gpu_h
    FROM measured_time AS t
    JOIN ett_phases AS p ON p.phase_id = t.phase_id
    JOIN metric_jobs AS j ON j.job_key = t.job_key
    JOIN job_groups AS g ON g.job_id = j.job_id
    WHERE t.bucket <> 'productive'
    GROUP BY ALL
)
SELECT group_key, component, owner, gpu_h
FROM lost
ORDER BY group_key, gpu_h DESC, component
