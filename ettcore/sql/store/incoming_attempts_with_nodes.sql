-- The attempts a refresh stores (incoming_rows.sql) with each one's node list, the optional `nodes` column (a host
-- list, read by ett nodes), which the loader does not type and leaves in the rows as read.
CREATE OR REPLACE TEMP VIEW ett_in_attempts AS
SELECT {{each kept: c.@}}, {{each nodes: r.@}}::VARCHAR AS nodes
FROM clean_attempts AS c
LEFT JOIN raw_attempts AS r ON r._file = c._file AND r._row = c._row
