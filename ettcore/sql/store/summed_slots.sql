-- The fleet's sums {{target}} with a refresh's changes {{changes}} (the new jobs' rows added, the replaced jobs'
-- subtracted) summed in, by key; a key whose sums all come back to zero is dropped (every row a one-shot query gives is
-- positive), so the rows are exactly the one-shot query's.
CREATE OR REPLACE TEMP TABLE ett_summed AS
SELECT {{each keys: @}}, {{each values: CAST(sum(@) AS @type) AS @}}
FROM (SELECT * FROM st.{{target}} UNION ALL BY NAME SELECT * FROM {{changes}})
GROUP BY ALL
HAVING greatest({{each values: abs(sum(@))}}) > 0
ORDER BY ALL
