-- One row a rank's timing window (the trace's rank_timing table, docs/trace-format.md): its job, attempt, rank and
-- node, its bounds in epoch milliseconds, how many steps it holds and how long the rank worked and waited in it (s).
-- Read by ettcore.metric.slow_peers (the peers' measures of slowness, computed from the same windows).
SELECT job_id, attempt, rank, node, start_ms, end_ms, steps, work_s, wait_s
FROM clean_rank_timing
WHERE end_ms > start_ms AND steps > 0
ORDER BY job_id, attempt, rank, start_ms
