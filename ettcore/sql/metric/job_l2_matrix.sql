-- The Level 2 matrix of each job, long: measured seconds per (L1 bucket, phase), with the phase's component and owner.
-- Productive time is its own component, effective_training (the seventh bucket of the spec's L2 table).
SELECT
    j.job_id,
    t.bucket,
    p.phase,
    CASE WHEN t.bucket = 'productive' THEN 'effective_training' ELSE p.component END AS component,
    CASE WHEN t.bucket = 'productive' THEN '(effective training)' ELSE p.owner END AS owner,
    sum(t.ms) / 1000.0 AS seconds
FROM measured_time AS t
JOIN ett_phases AS p ON p.phase_id = t.phase_id
JOIN metric_jobs AS j ON j.job_key = t.job_key
GROUP BY ALL
ORDER BY j.job_id, t.bucket, p.phase
