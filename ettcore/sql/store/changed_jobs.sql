-- The ids of the incoming jobs whose digest differs from the stored one's (ett_cmp: compared_jobs.sql), in id order.
SELECT job_id FROM ett_cmp WHERE changed ORDER BY job_id
