-- The digests of the jobs a refresh stores (ett_in of those in ett_replace), with $source and $ingest_id.
INSERT INTO st.ett_jobs BY NAME
SELECT $source AS source, $ingest_id::BIGINT AS ingest_id, i.*
FROM ett_in AS i
SEMI JOIN ett_replace USING (job_id)
