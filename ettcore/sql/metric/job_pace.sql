-- One row a job with a train span that advanced: its pace, the median over those spans of cursor units per second
-- (train_pace judges its stalls by it; live_progress's median step time is its inverse).
SELECT job_key, median((cursor_end - cursor_start) / ((end_ms - start_ms) / 1000.0)) AS pace_per_s
FROM metric_spans
WHERE is_train AND end_ms > start_ms AND cursor_end > cursor_start
GROUP BY job_key
