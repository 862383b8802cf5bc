-- ett_phases: the phase map the metric joins (phase id, phase, component, owner, and whether it is the train phase),
-- one row a position of the lists $phase_ids, $phases, $components and $owners.
CREATE OR REPLACE TEMP TABLE ett_phases AS
SELECT *, phase = 'train' AS is_train
FROM (
    SELECT
        unnest($phase_ids::BIGINT[]) AS phase_id,
        unnest($phases::VARCHAR[]) AS phase,
        unnest($components::VARCHAR[]) AS component,
        unnest($owners::VARCHAR[]) AS owner
)
