-- The instants where the analysis window or an exclusion window starts or ends: attribution cuts every job there,
-- so that each of its pieces lies wholly inside or wholly outside each window.
SELECT since_ms AS t FROM ett_window WHERE since_ms IS NOT NULL
UNION
SELECT until_ms FROM ett_window WHERE until_ms IS NOT NULL
UNION
SELECT start_ms FROM ett_exclusions
UNION
SELECT end_ms FROM ett_exclusions
