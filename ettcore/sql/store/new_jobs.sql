-- The ids of the incoming jobs the store does not hold (ett_cmp: compared_jobs.sql), in id order.
SELECT job_id FROM ett_cmp WHERE is_new ORDER BY job_id
