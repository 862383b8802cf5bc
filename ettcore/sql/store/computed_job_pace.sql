-- The paces of the jobs a refresh attributes (the metric's job_pace.sql), as computed once into ett_job_pace: read
-- by res_job_pace and, through train_pace, by the stalls.
SELECT * FROM ett_job_pace
