-- The rows of the metric's slot view {{view}}, as it is now, added to the changes {{changes}} ($sign 1), or
-- subtracted from them (-1).
INSERT INTO {{changes}} BY NAME
SELECT {{each keys: @}}, {{each values: $sign * @ AS @}}
FROM {{view}}
