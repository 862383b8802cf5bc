-- The stored attribution cells (res_attributed) of the jobs of {{keys}} (source, job_key), with their row ids: read
-- once, for the sums to subtract and then the delete.  Narrowed first by the integer job key alone (a filter DuckDB
-- applies in the scan before reading another column), then by source too: joined on both at once, every cell's
-- source text is read.
CREATE OR REPLACE TEMP TABLE ett_old_attributed AS
SELECT r.rowid AS ett_rowid, r.*
FROM st.res_attributed AS r
SEMI JOIN (SELECT DISTINCT job_key FROM {{keys}}) AS k1 ON k1.job_key = r.job_key
SEMI JOIN {{keys}} AS k ON k.source = r.source AND k.job_key = r.job_key
