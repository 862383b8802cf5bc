-- The metric's analysis time ($as_of_ms, epoch ms: running work is clipped there) and the exclusive bound on starts
-- ($cut_ms: one ms later unless the as-of was given explicitly, the loader's rule).
CREATE OR REPLACE TEMP TABLE ett_params AS
SELECT $as_of_ms::BIGINT AS as_of_ms, $cut_ms::BIGINT AS cut_ms
