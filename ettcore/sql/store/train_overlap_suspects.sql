-- How many train spans of store_batch (one batch of jobs of the span store) start before the previous train span of
-- their job, in (start, end) order, ended: zero exactly when train_spans_overlapping finds nothing in the batch.
-- (If two intervals of a job overlap, so do the first of them and the one after it in start order; a 64-bit job
-- key shared by two job ids can only add overlaps, so the count is never zero when the check would find one.)
WITH ordered AS (
    SELECT start_ms, lag(end_ms) OVER (PARTITION BY job_key ORDER BY start_ms, end_ms) AS prev_end
    FROM store_batch
    WHERE phase_id = (SELECT phase_id FROM ett_phases WHERE is_train) AND job_key IS NOT NULL AND start_ms IS NOT NULL AND end_ms IS NOT NULL
)
SELECT count(*) AS suspects
FROM ordered
WHERE start_ms < prev_end
