-- {{changes}}: a refresh's changes to the fleet's sums from the metric's view {{view}}, its columns and no row yet.
CREATE TEMP TABLE {{changes}} AS
SELECT * FROM {{view}} LIMIT 0
