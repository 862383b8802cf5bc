"""Slow GPU-hours per node, and the nodes whose share is improbable for their exposure (``ett nodes --slow``).

Reads the attempts' optional ``nodes`` column (as :mod:`ettcore.metric.nodes` does) and the slow spans of
:mod:`ettcore.metric.slow`.

- **Slow GPU-hours of a node**: a slow span costs the job's ``gpus x slow_s`` (every GPU of a synchronous job waited);
  they go to the node of the rank that held the job back (:func:`ettcore.metric.slow.holders`, where the ranks' work
  and wait windows cover the span: the trace's ``rank_timing`` table, or windows given), else are shared ``1 / k``
  across the ``k`` nodes of the span's attempt.
- **Exposure** of a node: the GPU-hours it held (as in :mod:`ettcore.metric.nodes`).
- **The test**: slow time is a duration, heavy-tailed and mostly zero, not a count, so the lemon test's Poisson
  does not apply.  Each (attempt, node) pair has a **slow fraction**, its slow GPU-hours per GPU-hour of exposure.
  Under the null hypothesis a node's pairs are drawn from the same distribution as the other nodes' pairs; the
  one-sided Mann-Whitney U test (rank-based, so neither the scale nor the tail of the durations matters; SciPy's
  ``mannwhitneyu``: exact, over every split of the pairs, ties included, up to 100,000 splits, else the
  tie-corrected normal approximation; a node in one pair, or against one, exact by hand: SciPy wants two a side)
  gives the p-value that the node's fractions are larger.  A node with slow
  time is **flagged** when its p-value is below ``alpha / m`` (Bonferroni over the ``m`` nodes with exposure;
  default ``alpha`` 0.01).  A node in too few pairs cannot be flagged, however slow (two of six pairs: at best
  1/15): the test needs several attempts a node.

The query is ``ettcore/sql/metric/node_slow_pairs.sql``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from ettcore.errors import InputError, Problem
from ettcore.metric import nodes, slow
from ettcore.trace.load import Trace
from ettcore.trace.queries import sql

DEFAULT_ALPHA = 0.01
EXACT_UP_TO = 100_000  # the test enumerates every split of the pairs up to this many, else approximates


@dataclass(frozen=True)
class SlowNodeReport:
    """Slow GPU-hours per node and the test (module doc)."""

    nodes: pl.DataFrame  # node, attempts, exposure_gpu_h, slow_gpu_h, slow_share, exposure_share, p_value, flagged
    alpha: float
    threshold: float  # alpha / m
    slow_gpu_h: float  # slow GPU-hours put on listed nodes
    # "holder" (ranks' windows were read: they name the node of each slow span they cover, the others are shared) or
    # "shared" (no windows: 1/k across each attempt's nodes)
    attributed: str

    @property
    def flagged(self) -> list[str]:
        return self.nodes.filter(pl.col("flagged"))["node"].to_list()


def mann_whitney_greater(x: list[float], y: list[float]) -> float:
    """One-sided p-value that ``x``'s values are larger than ``y``'s (Mann-Whitney U); 1 when either is empty or no
    value differs."""
    if not x or not y or len(set(x) | set(y)) < 2:
        return 1.0
    if min(len(x), len(y)) == 1:  # SciPy's exact test wants two values a side: the one value's rank, by hand
        return _one_value_greater(x, y) if len(x) == 1 else 1.0 - _one_value_greater(y, x, strict=True)
    from scipy import stats  # here: importing scipy costs every ett command half a second of start-up

    if math.comb(len(x) + len(y), len(x)) <= EXACT_UP_TO:  # every split of the pairs: exact, ties included
        method: object = stats.PermutationMethod(n_resamples=EXACT_UP_TO)
    else:
        method = "asymptotic"
    return float(stats.mannwhitneyu(x, y, alternative="greater", method=method).pvalue)


def _one_value_greater(x: list[float], y: list[float], strict: bool = False) -> float:
    """The exact one-sided p-value of the Mann-Whitney U test of ``x``'s one value against ``y``'s: over the
    ``len(y) + 1`` equally likely splits (each value of the pool as ``x``'s), the share whose U is at least the
    observed one (``strict``: greater than it), a tie counting one half in U."""
    pool = [*x, *y]

    def u(i: int) -> float:
        return sum(1.0 if pool[i] > v else 0.5 if pool[i] == v else 0.0 for j, v in enumerate(pool) if j != i)

    observed = u(0)
    return sum((u(i) > observed) if strict else (u(i) >= observed) for i in range(len(pool))) / len(pool)


def slow_node_report(
    trace: Trace,
    windows: list[dict] | None = None,
    tolerance: float | str | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> SlowNodeReport:
    """Slow GPU-hours per node and the flagged nodes (module doc); ``windows``: the ranks' work and wait windows
    (:func:`ettcore.importers.recorder.read_rank_timing`), or None for the trace's own (its ``rank_timing`` table),
    and where it has none, each span's slow time shared across its attempt's nodes."""
    if not (0 < alpha < 1):
        raise InputError(Problem("--alpha", None, "alpha", f"must be in (0, 1), got {alpha!r}"))
    nodes.register_causes(trace)  # attempt_held
    nodes.register_node_attempts(trace)
    held_by = windows is not None or slow.has_rank_timing(trace)
    if not held_by:
        slow.prepare(trace, tolerance)
        trace.con.execute(
            "CREATE OR REPLACE TEMP VIEW slow_attributed AS SELECT job_id, attempt, NULL::VARCHAR AS node, slow_s "
            "FROM train_slow"
        )
    else:
        held = slow.holders(trace, windows, tolerance).select("job_id", "attempt", "node", "slow_s")
        trace.con.register("ett_slow_attributed", held)
        trace.con.execute("CREATE OR REPLACE TEMP VIEW slow_attributed AS SELECT * FROM ett_slow_attributed")
    pairs = trace.sql(sql("metric/node_slow_pairs"))
    per_node = (
        pairs.group_by("node", maintain_order=True)
        .agg(
            pl.len().alias("attempts"),
            pl.col("exposure_gpu_h").sum(),
            pl.col("slow_gpu_h").sum(),
        )
        .sort("node")
    )
    total_slow = float(per_node["slow_gpu_h"].sum())
    total_exposure = float(per_node["exposure_gpu_h"].sum())
    exposed = per_node.filter(pl.col("exposure_gpu_h") > 0).height
    threshold = alpha / max(exposed, 1)
    fractions = pairs.with_columns(pl.col("slow_fraction").fill_null(0.0))
    p = []
    for node, slow_gpu_h in per_node.select("node", "slow_gpu_h").iter_rows():
        mine = fractions.filter(pl.col("node") == node)["slow_fraction"].to_list()
        others = fractions.filter(pl.col("node") != node)["slow_fraction"].to_list()
        p.append(mann_whitney_greater(mine, others) if slow_gpu_h > 0 else 1.0)
    per_node = per_node.with_columns(
        (pl.col("slow_gpu_h") / total_slow if total_slow > 0 else pl.lit(0.0)).alias("slow_share"),
        (pl.col("exposure_gpu_h") / total_exposure if total_exposure > 0 else pl.lit(0.0)).alias("exposure_share"),
        pl.Series("p_value", p, dtype=pl.Float64),
    ).with_columns(((pl.col("p_value") < threshold) & (pl.col("exposure_gpu_h") > 0)).alias("flagged"))
    return SlowNodeReport(per_node, alpha, threshold, total_slow, "holder" if held_by else "shared")
