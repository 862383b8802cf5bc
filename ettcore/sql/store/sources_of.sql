-- The sources of the rows of {{relation}}, in order.
SELECT DISTINCT source FROM {{relation}} ORDER BY source
