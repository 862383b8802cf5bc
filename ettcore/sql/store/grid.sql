-- The attribution's grid: $grid_ms, the length of a cell (a UTC day or an hour).
CREATE OR REPLACE TEMP TABLE ett_grid AS
SELECT $grid_ms::BIGINT AS grid_ms
