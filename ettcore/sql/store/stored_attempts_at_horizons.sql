-- clean_attempts of a store of several sources, each measured to its own horizon (ett_horizons: source_horizons.sql),
-- as the loader's clean rows of a trace: an attempt still open (no end) ends at its source's horizon with the open
-- end reason, as metric_attempts.sql clips it at that as-of, so that an attribution at the store's analysis time (the
-- latest horizon) measures each source's running jobs to the source's own (no start or end of a source lies after
-- its horizon, so nothing else moves).  Job ids named by ett_job_id.
CREATE TEMP VIEW clean_attempts AS
SELECT
    ett_job_id(r.source, r.job_id) AS job_id,
    r.* EXCLUDE (source, ingest_id, job_id) REPLACE (
        coalesce(r.end_ms, h.as_of_ms) AS end_ms,
        CASE WHEN r.end_ms IS NULL THEN {{open_end_reason}} ELSE r.end_reason END AS end_reason
    )
FROM st.rows_attempts AS r
JOIN ett_horizons AS h ON h.source = r.source
