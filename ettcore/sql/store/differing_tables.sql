-- Per trace table, how many changed jobs differ in it (ett_cmp: compared_jobs.sql): the tables whose rows are read
-- to name the fields that differ.
SELECT {{each tables: count_if(changed AND d_@) AS @}}
FROM ett_cmp
