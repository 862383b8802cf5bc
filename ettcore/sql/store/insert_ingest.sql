-- A refresh's row (create_ett_ingests.sql).
INSERT INTO st.ett_ingests VALUES (
    $ingest_id, $source, $ingested_at, $snapshot_ms, $explicit_as_of, $as_of_ms, $inputs, $jobs_read, $new,
    $changed, $unchanged, $running_remeasured, $skipped_jobs, $seconds
)
