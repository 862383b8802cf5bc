-- The problems of the jobs a refresh left out (ett ingest --skip-invalid): file, row, field and message.
CREATE TABLE st.ett_skipped (
    ingest_id BIGINT,
    source VARCHAR,
    job_id VARCHAR,
    file VARCHAR,
    row BIGINT,
    field VARCHAR,
    message VARCHAR
)
