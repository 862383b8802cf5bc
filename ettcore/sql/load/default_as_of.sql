-- A trace's default as-of (epoch ms): its latest instant, the latest start or end of a clean attempt (the start of one
-- still open) or of a clean job's span (keyed_spans: DuckDB reads them from the span store, Spark from its clean rows);
-- NULL for a trace without rows.  Both engines run this file (Spark through ettcore.engines.spark.transpile).
SELECT greatest(
    (SELECT max(greatest(start_ms, coalesce(end_ms, start_ms))) FROM clean_attempts),
    (SELECT max(greatest(start_ms, end_ms)) FROM keyed_spans)
) AS as_of_ms
