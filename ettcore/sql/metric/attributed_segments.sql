-- Every job's wall time cut into segments, each attributed exactly once: the one place the attribution's rules are
-- written (docs/metric.md).  attributed_time sums the segments' pieces per (job, cell, L1 bucket, phase);
-- attributed_intervals draws them for a timeline.
--
-- How: one start event per attempt of positive length, covering span and productive part, one event per
-- interruption, at the job's start and end and at each cut inside the job: each grid mark (UTC midnights, or hours for an
-- hourly trend: ett_grid) and each instant where the analysis window or an exclusion window starts or ends
-- (analysis_cuts).  Five functions over one window sorted per job give, between two consecutive events: the next
-- event's time, the end and number of the attempt in force, the covering span that ends last (its end and phase
-- packed in one key) and the productive part in force (its end and its stretch's L1 flags packed in one key).  Each
-- segment [t, t_next) therefore splits, in time order, into at most four pieces: productive [t, b1), covered (that
-- span's phase) [b1, b2), unattributed (inside the attempt) [b2, b3) and scheduling (between attempts) [b3, t_next).
-- Its non-productive pieces share one L1 bucket (loss_bucket), found from the flags of the productive part in force:
-- those are found beforehand on the small per-attempt table (whether the non-productive stretch after the part holds
-- an interruption, and whether it is the job's last productive part).  No segment crosses a cut, so each lies in one
-- cell: cell_ms is the latest cut at or before it (the grid mark, or a later analysis cut); measured_time keeps the
-- cells inside the windows.
-- Causes: a recovery segment's time goes to one interruption's cause (cause_id, ett_causes): the last interruption at or
-- before the segment (an interruption's event carries its cause; of several at one instant, the last attempt's), or,
-- for the stretch's time before its first interruption (the lost tail of the interrupted attempt), that first one
-- (the productive part's event carries it, found on the per-attempt table with the part's flags).
WITH ids AS (
    SELECT
        (SELECT phase_id FROM ett_phases WHERE is_train) AS train_id,
        (SELECT grid_ms FROM ett_grid) AS grid_ms,
        (SELECT list(t) FROM analysis_cuts) AS cuts  -- NULL when there is no analysis cut (the default)
),
train AS (
    -- train spans in time order (they never overlap within a job): the replay high-water mark and an ordinal
    SELECT job_key, attempt, start_ms AS s, end_ms AS e, cursor_start AS c0, cursor_end AS c1,
           max(cursor_end) OVER (
               PARTITION BY job_key ORDER BY start_ms, end_ms
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
           ) AS hwm,
           row_number() OVER (PARTITION BY job_key ORDER BY start_ms, end_ms) AS ord
    FROM metric_spans
    WHERE is_train
),
train_split AS (
    -- [s, split) replays steps already done (wasted training), [split, e) is productive
    SELECT job_key, attempt, ord, s, e,
           CASE
               WHEN hwm IS NULL THEN s
               -- clamp in DOUBLE before the cast, so huge cursors cannot overflow BIGINT
               WHEN c1 > c0 THEN s + CAST(least(CAST(e - s AS DOUBLE), greatest(0.0, floor(((hwm - c0) * (e - s)) / (c1 - c0)))) AS BIGINT)
               WHEN c0 <= hwm THEN e
               ELSE s
           END AS split
    FROM train
),
attempt_parts AS (
    -- per attempt in time order: the last productive part started by its end (upto), the job's last one, and the
    -- attempt's place in that order (a_ord) and cause
    SELECT a.job_key, a.end_reason, a.cause_id,
           max(p.last_ord) OVER (
               PARTITION BY a.job_key ORDER BY a.start_ms, a.end_ms, a.attempt
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
           ) AS upto,
           max(p.last_ord) OVER (PARTITION BY a.job_key) AS last_part,
           row_number() OVER (PARTITION BY a.job_key ORDER BY a.start_ms, a.end_ms, a.attempt) AS a_ord
    FROM metric_attempts AS a
    LEFT JOIN (
        SELECT job_key, attempt, max(ord) AS last_ord FROM train_split WHERE e > split GROUP BY job_key, attempt
    ) AS p ON p.job_key = a.job_key AND p.attempt = a.attempt
),
interrupted AS (
    -- productive parts whose following stretch holds an interruption (an attempt ended by failure or preemption),
    -- with the cause of the stretch's first interruption (in attempt order)
    SELECT job_key, upto AS ord, arg_min(cause_id, a_ord) AS first_cause
    FROM attempt_parts WHERE end_reason IN ({{interruptions}}) AND upto IS NOT NULL
    GROUP BY job_key, upto
),
interruption_instants AS (
    -- one event an instant with interruptions: the cause of the last of them (in attempt order) is the one in force
    SELECT job_key, end_ms, arg_max(cause_id, a_ord) AS cause_id
    FROM (
        SELECT job_key, end_ms, cause_id,
               row_number() OVER (PARTITION BY job_key ORDER BY start_ms, end_ms, attempt) AS a_ord
        FROM metric_attempts
        WHERE end_reason IN ({{interruptions}})
    ) AS x
    GROUP BY job_key, end_ms
),
last_parts AS (
    SELECT DISTINCT job_key, last_part AS ord FROM attempt_parts WHERE last_part IS NOT NULL
),
job_span AS (
    SELECT job_key, min(start_ms) AS t0, max(end_ms) AS t1 FROM metric_attempts GROUP BY job_key
),
grid_marks AS (
    -- the number of each grid cell (UTC day, or hour) that starts strictly inside the job
    SELECT job_key, ids.grid_ms AS g, unnest(range(t0 // ids.grid_ms + 1, (t1 - 1) // ids.grid_ms + 1)) AS mark_no FROM job_span, ids
),
window_marks AS (
    -- each analysis cut strictly inside the job
    SELECT j.job_key, c.t FROM job_span AS j JOIN analysis_cuts AS c ON c.t > j.t0 AND c.t < j.t1
),
events AS (
    -- kind 0: interruption, 1: attempt start, 2: covering span start, 3: productive part start, 4: job end, 5: cut.
    -- p_key: a productive part's end * 4 + 2 (last part) + 1 (an interruption follows); an interruption's is 1, so
    -- before any productive part it tells TTS from recovery, and after one it gives the bucket the part's flags give
    -- (that part is marked: an interruption follows it).  Attempts (of positive length) never overlap, nor do
    -- productive parts: in time order each one's value is the one in force, so `running` takes the last value given
    -- (last_value, cheaper than a running maximum) and keeps a maximum only for covering spans, which may overlap.
    SELECT job_key, end_ms AS t, 0 AS kind, NULL::BIGINT AS a_end, NULL::BIGINT AS a_no, NULL::BIGINT AS c_key,
           1::BIGINT AS p_key, cause_id AS z
    FROM interruption_instants
    UNION ALL
    SELECT job_key, start_ms, 1, end_ms, attempt, NULL, NULL, NULL FROM metric_attempts WHERE end_ms > start_ms
    UNION ALL
    SELECT job_key, start_ms, 2, NULL, NULL, end_ms * 1024 + phase_id, NULL, NULL
    FROM metric_spans WHERE NOT is_train AND end_ms > start_ms
    UNION ALL
    SELECT job_key, s, 2, NULL, NULL, split * 1024 + ids.train_id, NULL, NULL
    FROM train_split, ids WHERE split > s
    UNION ALL
    SELECT t.job_key, t.split, 3, NULL, NULL, NULL,
           4 * t.e + CASE WHEN l.ord IS NULL THEN 0 ELSE 2 END + CASE WHEN i.ord IS NULL THEN 0 ELSE 1 END,
           i.first_cause
    FROM train_split AS t
    LEFT JOIN interrupted AS i ON i.job_key = t.job_key AND i.ord = t.ord
    LEFT JOIN last_parts AS l ON l.job_key = t.job_key AND l.ord = t.ord
    WHERE t.e > t.split
    UNION ALL
    SELECT job_key, t1, 4, NULL, NULL, NULL, NULL, NULL FROM job_span
    UNION ALL
    -- the job's start, as a cut: where its first attempt has no length (a start event is only for an attempt of
    -- positive length), the time up to the next event is still the job's
    SELECT job_key, t0, 5, NULL, NULL, NULL, NULL, NULL FROM job_span
    UNION ALL
    SELECT job_key, mark_no * g, 5, NULL, NULL, NULL, NULL, NULL FROM grid_marks
    UNION ALL
    SELECT job_key, t, 5, NULL, NULL, NULL, NULL, NULL FROM window_marks
),
running AS (
    SELECT job_key, t,
           lead(t) OVER w AS t_next,
           last_value(a_end IGNORE NULLS) OVER w AS ae,
           last_value(a_no IGNORE NULLS) OVER w AS a_no,
           max(c_key) OVER w AS ck,
           last_value(p_key IGNORE NULLS) OVER w AS pk,
           last_value(z IGNORE NULLS) OVER w AS cz
    FROM events
    WINDOW w AS (PARTITION BY job_key ORDER BY t, kind ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
bounds AS (
    SELECT job_key, t, t_next, coalesce(pk % 4, 0) AS flags, coalesce(pk >= 4, false) AS started,
           greatest(t, coalesce(pk // 4, t)) AS pe, greatest(t, coalesce(ck // 1024, t)) AS ce,
           coalesce(ck % 1024, 0) AS c_phase, coalesce(ae, t) AS ae, a_no, cz,
           CASE
               WHEN ids.cuts IS NULL THEN t - t % ids.grid_ms
               ELSE greatest(t - t % ids.grid_ms, coalesce(list_max(list_filter(ids.cuts, lambda x: x <= t)), 0))
           END AS cell_ms
    FROM running, ids
    WHERE t_next > t
)
SELECT
    job_key,
    cell_ms,
    t,
    least(pe, t_next) AS b1,
    least(greatest(pe, ce), t_next) AS b2,
    least(greatest(pe, ce, ae), t_next) AS b3,
    t_next,
    c_phase,
    CASE WHEN ae > t THEN a_no END AS attempt,  -- the attempt in force (the scheduling piece lies outside it)
    -- the cause a recovery segment's time goes to (flags odd: the stretch holds an interruption): the last
    -- interruption at or before it, or, before the stretch's first, that first one (carried by the part's event)
    CASE WHEN flags % 2 = 1 THEN cz END AS cause_id,
    -- the L1 bucket of the segment's non-productive pieces
    CASE
        WHEN NOT started THEN CASE WHEN flags = 1 THEN 'recovery' ELSE 'tts' END
        WHEN flags % 2 = 1 THEN 'recovery'
        WHEN flags >= 2 THEN 'shutdown_tail'
        ELSE 'in_training_loss'
    END AS loss_bucket
FROM bounds
