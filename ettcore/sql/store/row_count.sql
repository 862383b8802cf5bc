-- How many rows {{relation}} holds.
SELECT count(*) AS row_count FROM {{relation}}
