-- Every instant of every job's wall time, attributed exactly once: milliseconds per (job, UTC day, L1 bucket, phase).
--
-- How (see docs/metric.md): one start event per attempt, covering span and productive part; running maxima over
-- the events give, between two consecutive events, the productive part, the covering span that ends last (its
-- end and phase packed in one key), and the attempt in force.  Each elementary segment therefore splits into at
-- most four pieces: productive, covered (that span's phase), unattributed (inside an attempt) and scheduling
-- (between attempts).  The running count of productive parts numbers the non-productive stretches; the running
-- count of interruptions marks the part of the leading stretch after the first interruption.
WITH ids AS (
    SELECT
        (SELECT phase_id FROM ett_phases WHERE is_train) AS train_id,
        (SELECT phase_id FROM ett_phases WHERE phase = 'scheduling') AS scheduling_id
),
train AS (
    SELECT job_key, start_ms AS s, end_ms AS e, cursor_start AS c0, cursor_end AS c1,
           max(cursor_end) OVER (
               PARTITION BY job_key ORDER BY start_ms, end_ms
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
           ) AS hwm
    FROM metric_spans
    WHERE is_train
),
train_split AS (
    SELECT job_key, s, e,
           CASE
               WHEN hwm IS NULL THEN s
               -- clamp in DOUBLE before the cast, so huge cursors cannot overflow BIGINT
               WHEN c1 > c0 THEN s + CAST(least(CAST(e - s AS DOUBLE), greatest(0.0, floor(((hwm - c0) * (e - s)) / (c1 - c0)))) AS BIGINT)
               WHEN c0 <= hwm THEN e
               ELSE s
           END AS split
    FROM train
),
events AS (
    -- kind 0: interruption, 1: attempt start, 2: covering span start, 3: productive part start, 4: job end
    SELECT job_key, end_ms AS t, 0 AS kind, NULL::BIGINT AS a_end, NULL::BIGINT AS c_key, NULL::BIGINT AS p_end
    FROM metric_attempts WHERE end_reason IN ('failure', 'preemption')
    UNION ALL
    SELECT job_key, start_ms, 1, end_ms, NULL, NULL FROM metric_attempts
    UNION ALL
    SELECT job_key, start_ms, 2, NULL, end_ms * 1024 + phase_id, NULL
    FROM metric_spans WHERE NOT is_train AND end_ms > start_ms
    UNION ALL
    SELECT job_key, s, 2, NULL, split * 1024 + ids.train_id, NULL
    FROM train_split, ids WHERE split > s
    UNION ALL
    SELECT job_key, split, 3, NULL, NULL, e FROM train_split WHERE e > split
    UNION ALL
    SELECT job_key, max(end_ms), 4, NULL, NULL, NULL FROM metric_attempts GROUP BY job_key
),
running AS (
    SELECT job_key, t, kind,
           lead(t) OVER w AS t_next,
           max(a_end) OVER w AS ae,
           max(c_key) OVER w AS ck,
           max(p_end) OVER w AS pe,
           -- one running sum counts both: productive parts in the low 32 bits, interruptions above
           sum(CASE WHEN kind = 3 THEN 1 WHEN kind = 0 THEN 4294967296 ELSE 0 END) OVER w AS counts
    FROM events
    WINDOW w AS (PARTITION BY job_key ORDER BY t, kind ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
segments AS (
    SELECT job_key, counts % 4294967296 AS k, counts >= 4294967296 AS after_int, t AS x0,
           least(greatest(t, coalesce(pe, t)), t_next) AS x1,
           least(greatest(t, coalesce(pe, t), coalesce(ck // 1024, t)), t_next) AS x2,
           least(greatest(t, coalesce(pe, t), coalesce(ck // 1024, t), coalesce(ae, t)), t_next) AS x3,
           t_next AS x4,
           coalesce(ck % 1024, 0) AS c_phase
    FROM running
    WHERE t_next > t
),
pieces AS MATERIALIZED (
    SELECT job_key, k, after_int,
           unnest([
               {'a': x0, 'b': x1, 'phase_id': ids.train_id, 'productive': true},
               {'a': x1, 'b': x2, 'phase_id': c_phase, 'productive': false},
               {'a': x2, 'b': x3, 'phase_id': 0, 'productive': false},
               {'a': x3, 'b': x4, 'phase_id': ids.scheduling_id, 'productive': false}
           ], recursive := true)
    FROM segments, ids
),
day_pieces AS (
    -- pieces inside one UTC day pass through; the few that cross midnight are split
    SELECT job_key, k, after_int, phase_id, productive, a, b, a // 86400000 AS d
    FROM pieces
    WHERE b > a AND a // 86400000 = (b - 1) // 86400000
    UNION ALL
    SELECT job_key, k, after_int, phase_id, productive, a, b,
           unnest(range(a // 86400000, (b - 1) // 86400000 + 1)) AS d
    FROM pieces
    WHERE b > a AND a // 86400000 < (b - 1) // 86400000
),
stretches AS (
    SELECT job_key, counts % 4294967296 AS k, bool_or(kind = 0) AS has_int,
           max(counts % 4294967296) OVER (PARTITION BY job_key) AS n_parts
    FROM running
    GROUP BY job_key, counts % 4294967296
)
SELECT
    a.job_key,
    CAST(DATE '1970-01-01' + CAST(a.d AS INTEGER) AS DATE) AS day,
    CASE
        WHEN a.productive THEN 'productive'
        WHEN a.k = 0 THEN CASE WHEN a.after_int THEN 'recovery' ELSE 'tts' END
        WHEN s.has_int THEN 'recovery'
        WHEN a.k = s.n_parts THEN 'shutdown_tail'
        ELSE 'in_training_loss'
    END AS bucket,
    a.phase_id,
    sum(least(a.b, (a.d + 1) * 86400000) - greatest(a.a, a.d * 86400000)) AS ms
FROM day_pieces AS a
JOIN stretches AS s ON s.job_key = a.job_key AND s.k = a.k
GROUP BY ALL
