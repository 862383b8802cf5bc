"""Recall and false alarms of the lemon-node flag (:mod:`ettcore.metric.nodes`) on SYNTHETIC fleets with planted
bad nodes (:mod:`ettcore.synthetic.lemons`).

It lives in planning, above both the metric and the synthetic generator, so that the metric never depends on the
generator; it says how far a fleet owner may trust the flag before acting on it.

The flag's settings (``alpha = 0.01``, Bonferroni, the default causes) and the fleet's shape were chosen looking at
seeds 0-4 (:data:`TUNING_SEEDS`); the table of the docs and the notebook is computed on :data:`EVAL_SEEDS`, the test
bounds on :data:`TEST_SEEDS`, neither of which was looked at while choosing.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Iterable

import polars as pl

from ettcore.metric.nodes import DEFAULT_ALPHA, node_report
from ettcore.synthetic.lemons import LemonFleet, write_fleet
from ettcore.trace.load import load_trace

TUNING_SEEDS = tuple(range(0, 5))
EVAL_SEEDS = tuple(range(1000, 1010))
TEST_SEEDS = tuple(range(2000, 2004))


def lemon_table(
    fleet: LemonFleet = LemonFleet(),
    factors: Iterable[float] = (3.0, 5.0, 10.0),
    seeds: Iterable[int] = EVAL_SEEDS,
    alpha: float = DEFAULT_ALPHA,
) -> pl.DataFrame:
    """One row a lemon factor (1 = no lemon planted): fleets, planted, found, ``recall``, ``false_alarms`` (flagged
    good nodes, in all), ``false_alarms_per_fleet`` and ``fleets_with_false_alarm``."""
    rows = []
    seeds = tuple(seeds)
    with tempfile.TemporaryDirectory(prefix="ett-lemons-") as tmp:
        for factor in factors:
            f = replace(fleet, lemon_factor=factor) if factor != 1.0 else replace(fleet, lemons=0)
            planted = found = false = fleets_false = 0
            for seed in seeds:
                path, lemons = write_fleet(Path(tmp) / f"f{factor}-{seed}", f, seed)
                flagged = set(node_report(load_trace(path), alpha=alpha).flagged)
                planted += len(lemons)
                found += len(flagged & set(lemons))
                bad = len(flagged - set(lemons))
                false += bad
                fleets_false += bad > 0
            rows.append(
                {
                    "lemon_factor": factor,
                    "fleets": len(seeds),
                    "planted": planted,
                    "found": found,
                    "recall": found / planted if planted else None,
                    "false_alarms": false,
                    "false_alarms_per_fleet": false / len(seeds),
                    "fleets_with_false_alarm": fleets_false,
                }
            )
    return pl.DataFrame(rows)
