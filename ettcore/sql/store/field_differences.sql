-- Per changed job that differs in {{table}} (ett_diff: differing_jobs.sql), whether its count of rows differs and, per
-- stored column (in the store's order), whether its multiset of values differs: the count and the sum of
-- the values' hashes (each cast to the stored type) of the incoming rows (ett_in_{{table}}; a column they lack
-- is NULL) against those of its stored rows (found by row id: ett_old_{{table}}, stored_row_ids.sql).
WITH incoming AS (
    SELECT job_id, count(*) AS n, {{each incoming: sum(hash(CAST(@ AS @type))::HUGEINT) AS c@n}}
    FROM ett_in_{{table}} AS t
    SEMI JOIN ett_diff USING (job_id)
    GROUP BY job_id
),
stored AS (
    SELECT job_id, count(*) AS n, {{each stored: sum(hash(CAST(@ AS @type))::HUGEINT) AS c@n}}
    FROM (SELECT r.* FROM st.rows_{{table}} AS r SEMI JOIN ett_old_{{table}} AS o ON o.ett_rowid = r.rowid) AS r
    SEMI JOIN ett_diff USING (job_id)
    GROUP BY job_id
)
SELECT
    coalesce(incoming.job_id, stored.job_id) AS job_id,
    incoming.n IS DISTINCT FROM stored.n AS count_differs,
    {{each stored: incoming.c@n IS DISTINCT FROM stored.c@n AS c@n}}
FROM incoming
FULL JOIN stored USING (job_id)
