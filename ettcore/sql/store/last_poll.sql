-- When the last poll of Slurm for $source ran sacct (epoch ms; NULL: never): the latest snapshot time of the
-- ingests whose inputs start with $poll_inputs.
SELECT max(snapshot_ms) AS last_poll_ms
FROM st.ett_ingests
WHERE source = $source AND starts_with(inputs, $poll_inputs)
