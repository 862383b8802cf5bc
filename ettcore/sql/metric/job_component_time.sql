-- The measured non-productive seconds of each job per Level 2 component: one row a job and component with time.
-- ettcore.metric places them in job_summary as one column a component (<component>_s, in the phase map's order,
-- 0 where a job has none): the one pivot of the components.
SELECT
    j.job_id,
    p.component,
    sum(CAST(t.ms AS DOUBLE)) / 1000.0 AS seconds
FROM measured_time AS t
JOIN ett_phases AS p ON p.phase_id = t.phase_id
JOIN metric_jobs AS j ON j.job_key = t.job_key
WHERE t.bucket <> 'productive'
GROUP BY ALL
