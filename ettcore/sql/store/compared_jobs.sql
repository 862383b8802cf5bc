-- One row an incoming job (ett_in: job_digests.sql over the source): whether the store holds no job of that id in
-- $source (is_new), whether it holds one whose digest differs (changed), and per trace table whether that table's
-- count or hash sum differs (d_<table>).
CREATE OR REPLACE TEMP TABLE ett_cmp AS
SELECT
    i.job_id,
    k.job_id IS NULL AS is_new,
    k.job_id IS NOT NULL
        AND ({{each tables: i.n_@, i.h_@}}) IS DISTINCT FROM ({{each tables: k.n_@, k.h_@}}) AS changed,
    {{each tables: (i.n_@, i.h_@) IS DISTINCT FROM (k.n_@, k.h_@) AS d_@}}
FROM ett_in AS i
LEFT JOIN (SELECT * FROM st.ett_jobs WHERE source = $source) AS k USING (job_id)
