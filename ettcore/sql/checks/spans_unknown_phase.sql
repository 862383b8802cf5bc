-- spans whose phase is not in the phase vocabulary (defaults plus any mapping file)
SELECT 'spans' AS table_name, s._file, s._row, 'phase' AS field, s.job_id,
       'unknown phase ' || left(s.phase, 80) || ' (add it to a mapping file)' AS message
FROM typed_spans AS s
WHERE s.phase IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM ett_phases AS p WHERE p.phase = s.phase AND p.phase_id > 0)
