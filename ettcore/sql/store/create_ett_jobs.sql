-- One row a stored job: where its current version came from (ingest_id), its 64-bit key (hash(job_id), as the
-- metric's), per trace table the count of its rows and the sum of their content hashes (its digest: what a refresh
-- compares an incoming job with), its latest instant (epoch ms) and whether an attempt of it is still open.
CREATE TABLE st.ett_jobs (
    source VARCHAR,
    job_id VARCHAR,
    job_key UBIGINT,
    ingest_id BIGINT,
    {{each tables: n_@ BIGINT, h_@ HUGEINT}},
    latest_ms BIGINT,
    open BOOLEAN
)
