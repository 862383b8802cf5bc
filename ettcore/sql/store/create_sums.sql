-- The fleet's sums {{target}}, kept over every stored job: the columns of the changes {{changes}} (its keys,
-- then its values), and no row yet.
CREATE TABLE st.{{target}} AS
SELECT {{each keys: @}}, {{each values: @}}
FROM {{changes}}
LIMIT 0
