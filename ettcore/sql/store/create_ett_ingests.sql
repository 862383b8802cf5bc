-- One row a refresh (ett ingest): its id, source, when it ran (UTC), the snapshot time of its input and whether it
-- was given (--as-of), the store's analysis time after it (epoch ms), what it read (inputs), the jobs it read, new,
-- changed (running jobs measured again included), unchanged, measured again and left out, and its seconds.
CREATE TABLE st.ett_ingests (
    ingest_id BIGINT,
    source VARCHAR,
    ingested_at TIMESTAMP,
    snapshot_ms BIGINT,
    explicit_as_of BOOLEAN,
    as_of_ms BIGINT,
    inputs VARCHAR,
    jobs_read BIGINT,
    new BIGINT,
    changed BIGINT,
    unchanged BIGINT,
    running_remeasured BIGINT,
    skipped_jobs BIGINT,
    seconds DOUBLE
)
