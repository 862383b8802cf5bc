-- The stored jobs of the source $source, which a removal takes out.
CREATE TEMP TABLE ett_gone AS
SELECT source, job_id, job_key FROM st.ett_jobs WHERE source = $source
