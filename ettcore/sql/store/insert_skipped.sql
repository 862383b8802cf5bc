-- The problems of the jobs a refresh left out (--skip-invalid), one a position of the lists.
INSERT INTO st.ett_skipped
SELECT
    $ingest_id,
    $source,
    unnest($jobs::VARCHAR[]),
    unnest($files::VARCHAR[]),
    unnest($rows::BIGINT[]),
    unnest($fields::VARCHAR[]),
    unnest($messages::VARCHAR[])
