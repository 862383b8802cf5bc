-- The incoming jobs the store holds as they are (ett_in less ett_replace): left out of the attribution.
CREATE OR REPLACE TEMP TABLE ett_same AS
SELECT job_id FROM ett_in ANTI JOIN ett_replace USING (job_id)
