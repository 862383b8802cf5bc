-- Two job ids of $source with one 64-bit job key (the hash the metric joins on), the jobs just inserted
-- (ett_replace) against every stored job of the source: the first such pair, if any.
SELECT least(k.job_id, r.job_id) AS one, greatest(k.job_id, r.job_id) AS other
FROM st.ett_jobs AS k
JOIN ett_replace AS r ON k.job_key = r.job_key AND k.job_id <> r.job_id
WHERE k.source = $source
LIMIT 1
