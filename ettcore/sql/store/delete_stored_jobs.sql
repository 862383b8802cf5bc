-- The digests of the stored jobs of $source in ett_gone (replaced by a refresh, or every job of a removed source).
DELETE FROM st.ett_jobs AS k
WHERE k.source = $source AND k.job_id IN (SELECT job_id FROM ett_gone)
