-- One row a job with at least 5 advancing train spans past warm-up (train_advances): its ideal time per cursor unit,
-- the 10th percentile (linear interpolation between ranks, quantile_cont) over those spans of seconds per cursor unit,
-- and how many spans it was taken over.  A job with fewer has no ideal pace and no slow time.
SELECT job_key,
       quantile_cont(seconds / advance, 0.1) AS ideal_s_per_unit,
       CAST(count(*) AS BIGINT) AS paced_spans
FROM train_advances
WHERE NOT warm_up
GROUP BY job_key
HAVING count(*) >= 5
