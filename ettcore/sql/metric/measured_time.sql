-- The attributed time that is measured: the cells of attributed_time outside the job's unmeasured time (outside the
-- analysis window, or inside an exclusion window that applies to the job: unmeasured_time).  Every cell by default.
SELECT t.job_key, t.cell_ms, t.bucket, t.phase_id, t.cause_id, t.ms
FROM attributed_time AS t
ANTI JOIN unmeasured_time AS x ON x.job_key = t.job_key AND x.start_ms <= t.cell_ms AND t.cell_ms < x.end_ms
