-- Per trace table, its typed rows counted by what became of them, so that nothing is dropped silently: reason NULL
-- for the rows used (a clean row), else why a row was rejected: the first check (by name) that found the row itself
-- (ett_findings), or 'job excluded' for a row of a job left out for a finding elsewhere (ett_excluded_jobs; a row
-- without a job id is itself a finding).  The rows read are the sum over the reasons.  Both engines run this file
-- (Spark through ettcore.engines.spark.transpile).
WITH own AS (
    SELECT table_name, _file, _row, min("check") AS reason
    FROM ett_findings
    GROUP BY table_name, _file, _row
),
typed AS (
    {{each tables joined by UNION ALL: SELECT '@' AS table_name, job_id, _file, _row FROM typed_@}}
),
judged AS (
    SELECT
        t.table_name,
        CASE
            WHEN t.job_id IS NULL OR own.reason IS NOT NULL OR x.job_id IS NOT NULL
                THEN coalesce(own.reason, 'job excluded')
        END AS reason
    FROM typed AS t
    LEFT JOIN own ON own.table_name = t.table_name AND own._file = t._file AND own._row = t._row
    LEFT JOIN ett_excluded_jobs AS x ON x.job_id = t.job_id  -- distinct job ids: no row is repeated
)
SELECT table_name, reason, count(*) AS n
FROM judged
GROUP BY table_name, reason
ORDER BY table_name, reason
