-- The jobs the metric leaves out: none (a store holds only rows checked when they were ingested).
CREATE OR REPLACE TEMP TABLE ett_excluded_jobs (job_id VARCHAR)
