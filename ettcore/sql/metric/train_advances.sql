-- One row a train span whose data cursor advanced (end > start, cursor_end > cursor_start): its seconds and advance,
-- whether it is its attempt's warm-up (the attempt's first advancing train span) and its new-data share (the part of
-- its time that trained on new data, as attributed_segments.sql splits a span at the replay high-water mark: the
-- largest cursor_end of the job's earlier train spans).  Read by job_ideal_pace and train_slow (slow time).
WITH train AS (
    SELECT job_key, attempt, start_ms, end_ms, cursor_start, cursor_end,
           max(cursor_end) OVER (
               PARTITION BY job_key ORDER BY start_ms, end_ms
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
           ) AS hwm
    FROM metric_spans
    WHERE is_train
),
advancing AS (
    SELECT *, row_number() OVER (PARTITION BY job_key, attempt ORDER BY start_ms, end_ms) AS nth
    FROM train
    WHERE end_ms > start_ms AND cursor_end > cursor_start
)
SELECT
    job_key,
    attempt,
    start_ms,
    end_ms,
    (end_ms - start_ms) / 1000.0 AS seconds,
    cursor_end - cursor_start AS advance,
    nth = 1 AS warm_up,
    CASE
        WHEN hwm IS NULL THEN 1.0
        -- the replayed ms [start, split) as attributed_segments.sql counts them, clamped in DOUBLE
        ELSE 1.0 - least(CAST(end_ms - start_ms AS DOUBLE),
                         greatest(0.0, floor(((hwm - cursor_start) * (end_ms - start_ms)) / (cursor_end - cursor_start))))
                   / (end_ms - start_ms)
    END AS new_share
FROM advancing
