-- Every stored job's digest set again from its stored rows (ett_rehash: job_digests.sql over st.rows_<table>, by
-- source and job), after the stored columns changed: a digest covers them all.
UPDATE st.ett_jobs AS k
SET {{each tables: n_@ = r.n_@, h_@ = r.h_@}}
FROM ett_rehash AS r
WHERE k.source = r.source AND k.job_id = r.job_id
