-- The attributed time that is measured: the cells of attributed_time inside the analysis window (ett_window) and
-- outside every exclusion window that applies to the job (job_exclusions).  Every cell when neither is set.
SELECT t.job_key, t.cell_ms, t.bucket, t.phase_id, t.ms
FROM attributed_time AS t
CROSS JOIN ett_window AS w
ANTI JOIN job_exclusions AS x ON x.job_key = t.job_key AND x.start_ms <= t.cell_ms AND t.cell_ms < x.end_ms
WHERE (w.since_ms IS NULL OR t.cell_ms >= w.since_ms)
  AND (w.until_ms IS NULL OR t.cell_ms < w.until_ms)
