-- What starts at or after the cut of an explicit as-of (ett_params.cut_ms) among the stored rows: attempts, spans,
-- and jobs whose first attempt does (not measured, and said so).
SELECT
    (SELECT count(*) FROM clean_attempts AS a, ett_params AS p WHERE a.start_ms >= p.cut_ms) AS attempts,
    (SELECT count(*) FROM clean_spans AS s, ett_params AS p WHERE s.start_ms >= p.cut_ms) AS spans,
    (
        SELECT count(*)
        FROM (
            SELECT job_id FROM clean_attempts GROUP BY job_id HAVING min(start_ms) >= (SELECT cut_ms FROM ett_params)
        )
    ) AS jobs
