-- A digest column of ett_jobs (n_<table> BIGINT or h_<table> HUGEINT) that a store made before it kept <table>
-- lacks: 0 for every job stored then, which holds no row of that table (job_digests.sql's digest of no rows).
ALTER TABLE st.ett_jobs ADD COLUMN {{each column: @ @type}} DEFAULT 0
