-- One row a slow span (train_slow): the rank that held the job back in it, from each rank's work and wait per window
-- (rank_windows: job_id, attempt, rank, node, start_ms, end_ms, steps, work_s, wait_s).  A window overlapping the
-- span counts in the fraction of it inside the span; per rank, its work share is work_s / (work_s + wait_s) over
-- those parts.  The holder is the rank with the largest work share (then the least wait, then the lowest rank): in a
-- synchronous job it is the one the others waited for.  NULL rank and node where no window of the span's job and
-- attempt overlaps it; ranks is how many ranks had one.
WITH spans AS (
    SELECT job_id, attempt, start, "end", epoch_ms(start) AS start_ms, epoch_ms("end") AS end_ms, slow_s
    FROM train_slow
),
parts AS (
    SELECT s.job_id, s.attempt, s.start_ms, w.rank, w.node,
           (least(s.end_ms, w.end_ms) - greatest(s.start_ms, w.start_ms)) / CAST(w.end_ms - w.start_ms AS DOUBLE) AS f,
           w.work_s, w.wait_s
    FROM spans AS s
    JOIN rank_windows AS w
      ON w.job_id = s.job_id AND w.attempt = s.attempt AND w.start_ms < s.end_ms AND s.start_ms < w.end_ms
    WHERE w.end_ms > w.start_ms
),
per_rank AS (
    SELECT job_id, attempt, start_ms, rank, min(node) AS node, sum(f * work_s) AS work_s, sum(f * wait_s) AS wait_s
    FROM parts
    GROUP BY job_id, attempt, start_ms, rank
),
ranked AS (
    SELECT *,
           work_s / nullif(work_s + wait_s, 0) AS work_share,
           row_number() OVER (
               PARTITION BY job_id, attempt, start_ms
               ORDER BY work_s / nullif(work_s + wait_s, 0) DESC NULLS LAST, wait_s, rank
           ) AS place,
           count(*) OVER (PARTITION BY job_id, attempt, start_ms) AS ranks
    FROM per_rank
)
SELECT
    s.job_id,
    s.attempt,
    s.start,
    s."end",
    s.slow_s,
    r.rank,
    r.node,
    r.work_share,
    r.work_s,
    r.wait_s,
    coalesce(r.ranks, 0) AS ranks
FROM spans AS s
LEFT JOIN ranked AS r ON r.job_id = s.job_id AND r.attempt = s.attempt AND r.start_ms = s.start_ms AND r.place = 1
ORDER BY s.job_id, s.start_ms
