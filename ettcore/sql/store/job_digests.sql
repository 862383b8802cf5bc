-- One row a job of the relations {{jobs}}, {{attempts}}, {{spans}} and {{rank_timing}} (a loaded source's rows, or the store's rows
-- grouped by source too): its digest, per table the count of its rows and the sum of their content hashes (each row's
-- hash over the store's columns of that table, each cast to the stored type, a column the relation lacks read as
-- NULL; not where the row came from: source, ingest_id, _file, _row), its latest instant (epoch ms: the latest start
-- or end of its attempts and spans) and whether an attempt of it is open (has no end).
CREATE OR REPLACE TEMP TABLE {{into}} AS
WITH j AS (
    SELECT {{each key: @}}, count(*) AS n_jobs, sum(hash({{each jobs_columns: CAST(@ AS @type)}})::HUGEINT) AS h_jobs
    FROM {{jobs}}
    GROUP BY ALL
),
a AS (
    SELECT
        {{each key: @}},
        count(*) AS n_attempts,
        sum(hash({{each attempts_columns: CAST(@ AS @type)}})::HUGEINT) AS h_attempts,
        max(greatest(start_ms, coalesce(end_ms, start_ms))) AS latest_a,
        bool_or(end_ms IS NULL) AS open
    FROM {{attempts}}
    GROUP BY ALL
),
s AS (
    SELECT
        {{each key: @}},
        count(*) AS n_spans,
        sum(hash({{each spans_columns: CAST(@ AS @type)}})::HUGEINT) AS h_spans,
        max(greatest(start_ms, end_ms)) AS latest_s
    FROM {{spans}}
    GROUP BY ALL
),
r AS (
    SELECT
        {{each key: @}},
        count(*) AS n_rank_timing,
        sum(hash({{each rank_timing_columns: CAST(@ AS @type)}})::HUGEINT) AS h_rank_timing
    FROM {{rank_timing}}
    GROUP BY ALL
),
ids AS (
    SELECT {{each key: @}} FROM j
    UNION
    SELECT {{each key: @}} FROM a
    UNION
    SELECT {{each key: @}} FROM s
)
SELECT
    ids.*,
    hash(ids.job_id) AS job_key,
    {{each tables: coalesce(n_@, 0) AS n_@, coalesce(h_@, 0) AS h_@}},
    greatest(latest_a, latest_s) AS latest_ms,
    coalesce(open, false) AS open
FROM ids
LEFT JOIN j USING ({{each key: @}})
LEFT JOIN a USING ({{each key: @}})
LEFT JOIN s USING ({{each key: @}})
LEFT JOIN r USING ({{each key: @}})
