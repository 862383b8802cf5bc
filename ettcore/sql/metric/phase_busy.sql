-- Busy seconds per job and phase: the plain sum of span lengths, overlaps counted twice.
SELECT
    j.job_id,
    p.phase,
    sum(s.end_ms - s.start_ms) / 1000.0 AS busy_s,
    count(*) AS spans
FROM metric_spans AS s
JOIN ett_phases AS p ON p.phase_id = s.phase_id
JOIN metric_jobs AS j ON j.job_key = s.job_key
GROUP BY ALL
ORDER BY j.job_id, p.phase
