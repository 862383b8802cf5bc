-- The problems of the jobs the store's ingests left out (ett ingest --skip-invalid) and does not hold now.
SELECT DISTINCT k.file, k.row, k.field, k.message, k.job_id
FROM st.ett_skipped AS k
ANTI JOIN st.ett_jobs AS j ON j.source = k.source AND j.job_id = k.job_id
ORDER BY ALL
