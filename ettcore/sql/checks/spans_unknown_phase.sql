-- spans whose phase is not in the phase vocabulary (defaults plus any mapping file)
WITH known AS (
    SELECT phase FROM ett_phases WHERE phase_id > 0
)
SELECT 'spans' AS table_name, s._file, s._row, 'phase' AS field, s.job_id,
       'unknown phase ' || left(s.phase, 80) || ' (add it to a mapping file)' AS message
FROM typed_spans AS s
ANTI JOIN known AS p ON p.phase = s.phase
WHERE s.phase IS NOT NULL
