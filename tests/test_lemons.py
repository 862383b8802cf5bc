"""Lemon-node detection on SYNTHETIC fleets with planted bad nodes, on seeds not used to choose the settings."""

from __future__ import annotations

from ettcore.planning.lemon_check import TEST_SEEDS, TUNING_SEEDS, lemon_table


def test_recall_and_false_alarm_bounds():
    assert not set(TEST_SEEDS) & set(TUNING_SEEDS)
    t = {r["lemon_factor"]: r for r in lemon_table(factors=(1.0, 20.0), seeds=TEST_SEEDS).iter_rows(named=True)}
    # no lemon: the Bonferroni flag at alpha = 0.01 allows a false alarm in 1 % of fleets; none in 4 expected
    assert t[1.0]["planted"] == 0 and t[1.0]["false_alarms"] == 0
    # lemons failing 20x as often: most are found, and good nodes are seldom flagged
    assert t[20.0]["planted"] == 12 and t[20.0]["recall"] >= 0.5
    assert t[20.0]["false_alarms"] <= 1
