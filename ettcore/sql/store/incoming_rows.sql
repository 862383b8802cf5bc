-- The rows of one trace table that a refresh stores: the clean rows of the loaded source, in every column of
-- clean_{{table}} but the text a value was parsed from, which only the checks read (a store made before that keeps
-- the raw columns it has).
CREATE OR REPLACE TEMP VIEW ett_in_{{table}} AS
SELECT {{each kept: @}}
FROM clean_{{table}}
