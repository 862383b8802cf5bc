-- The rows of {{keys}} (jobs: source, job_id, job_key, ...) of $source alone.
CREATE OR REPLACE TEMP TABLE {{into}} AS
SELECT * FROM {{keys}} WHERE source = $source
