"""Evidence from outside: the expected-ETT model on other publications' inputs, and uncertainties of measured ratios.

External model checks (another publication's run held to this project's model)
---------------------------------------------------------------------------------

A publication reports a run: ``gpus`` GPUs over ``days`` of wall time, ``failures``
unexpected interruptions (each loses the work since the last checkpoint) and
``planned`` planned ones (each pays a restart but loses no work), and an outcome
(an effective-training-time share).  :func:`window_plan` turns it, with stated
costs (:class:`Costs`: restart overhead, blocking per checkpoint save, checkpoint
interval), into a :class:`~ettcore.planning.expected.JobPlan` whose expected wall
time is the window and whose expected failures are the reported count:

* the planned interruptions' restarts are a fixed overhead (``tts_s = planned x
  planned_restart_s``);
* the model's failure rate applies only while the training loop runs, and a
  reported count is over the whole window, so the rate per loop-GPU-day is found
  by a fixed point: ``rate <- rate x failures / E[NoF]`` until ``E[NoF]`` equals the
  count, with the productive work ``W`` re-solved each time so that ``E[wall] =
  days`` (bisection on ``W``; ``E[wall]`` grows with ``W``).

The expected ETT% of that plan (:func:`~ettcore.planning.expected.expected_ett`,
the closed form; :func:`~ettcore.planning.expected.simulate_ett` checks it by
Monte Carlo) is then compared with the publication's figure.

:func:`holding_range` evaluates the comparison over a grid of restart overheads
(for each blocking time given) and returns, per blocking time, the smallest and
largest restart overhead of the grid at which it holds: the range of assumptions
over which the row passes, computed, not chosen.

Young's interval: when ``Costs.interval_s`` is ``None`` the job is assumed to save
at ``sqrt(2 b / L)`` (the Young/Daly optimum that Kokolis et al. also use,
:func:`~ettcore.planning.expected.kokolis_optimal_interval`), with ``L`` the job's
failure rate per second while training, re-evaluated in the fixed point.

Measured ratios
---------------

:func:`reduction_pct` is ``100 (1 - after / before)`` of two sample means, with a
standard error from the delta method (independent samples); :func:`paired_reduction_pct`
pools paired measurements (``1 - sum(after) / sum(before)``) and takes its standard
error from the spread of the per-pair reductions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from ettcore.planning.expected import DAY_S, Expectation, JobPlan, expected_ett
from ettcore.planning.restarts import compound_saving

__all__ = [
    "Window",
    "Costs",
    "WindowResult",
    "window_plan",
    "holds",
    "holding_range",
    "reduction_pct",
    "paired_reduction_pct",
    "ratio_se",
    "range_text",
    "restart_rule_ratio",
]


@dataclass(frozen=True)
class Window:
    """A published run: GPUs, wall days, unexpected failures (lose work) and planned interruptions (do not)."""

    gpus: int
    days: float
    failures: float
    planned: float = 0.0

    def __post_init__(self) -> None:
        if int(self.gpus) != self.gpus or self.gpus < 1:
            raise ValueError(f"gpus must be an integer >= 1, got {self.gpus!r}")
        if not (self.days > 0) or math.isinf(self.days):
            raise ValueError(f"days must be a finite number > 0, got {self.days!r}")
        for k in ("failures", "planned"):
            v = getattr(self, k)
            if not (v >= 0) or math.isinf(v):
                raise ValueError(f"{k} must be a finite number >= 0, got {v!r}")

    @property
    def wall_s(self) -> float:
        return self.days * DAY_S

    def at(self, gpus: int, days: float, planned: float = 0.0) -> "Window":
        """Another run (``gpus`` GPUs over ``days``) with this run's failure rate per GPU-day of wall time and
        ``planned`` planned interruptions."""
        per_gpu_day = self.failures / (self.gpus * self.days)
        return Window(gpus, days, per_gpu_day * gpus * days, planned)


@dataclass(frozen=True)
class Costs:
    """Stated costs: restart overhead of a failure and of a planned interruption, blocking per checkpoint save,
    checkpoint interval (``None``: Young's optimum for the blocking and the failure rate)."""

    restart_s: float
    blocking_s: float
    interval_s: float | None = None
    planned_restart_s: float | None = None  # None: the same as restart_s

    @property
    def planned_s(self) -> float:
        return self.restart_s if self.planned_restart_s is None else self.planned_restart_s


@dataclass(frozen=True)
class WindowResult:
    """The fitted plan and its closed-form expectation."""

    plan: JobPlan
    expectation: Expectation
    failures_per_gpu_day: float  # per GPU-day of training loop (the model's rate)
    interval_s: float

    @property
    def ett_pct(self) -> float:
        return self.expectation.ett_pct


def _interval(costs: Costs, rate_per_gpu_day: float, gpus: int) -> float:
    if costs.interval_s is not None:
        return costs.interval_s
    lam = rate_per_gpu_day * gpus / DAY_S
    if lam <= 0 or costs.blocking_s <= 0:
        raise ValueError("Young's interval needs a failure rate > 0 and a blocking time > 0; give interval_s")
    return math.sqrt(2.0 * costs.blocking_s / lam)


def _work_for_wall(make: Callable[[float], JobPlan], wall_s: float) -> float:
    """The productive work whose expected wall time is ``wall_s`` (bisection; E[wall] is non-decreasing in work)."""
    lo, hi = 0.0, wall_s
    if expected_ett(make(hi * 1e-9)).wall_s > wall_s:
        raise ValueError("the stated overheads alone exceed the window: no productive work fits")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if expected_ett(make(mid)).wall_s > wall_s:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * wall_s:
            break
    return lo


def window_plan(window: Window, costs: Costs, *, tol: float = 1e-9, max_iter: int = 200) -> WindowResult:
    """The plan whose expected wall time is the window and whose expected failures are its count (module
    docstring), with its closed-form expectation."""
    fixed = window.planned * costs.planned_s
    if fixed >= window.wall_s:
        raise ValueError("the planned interruptions' restarts alone exceed the window")
    rate = window.failures / (window.gpus * window.days)  # per GPU-day of wall: the first guess
    for _ in range(max_iter):
        interval = _interval(costs, rate, window.gpus) if rate > 0 else (costs.interval_s or window.wall_s)

        def make(work: float, rate: float = rate, interval: float = interval) -> JobPlan:
            return JobPlan(
                tts_s=fixed,
                ttr_s=costs.restart_s,
                failures_per_gpu_day=rate,
                work_s=max(work, 1e-9),
                gpus=window.gpus,
                interval_s=interval,
                blocking_s=costs.blocking_s,
            )

        work = _work_for_wall(make, window.wall_s)
        plan = make(work)
        exp = expected_ett(plan)
        if window.failures == 0:
            return WindowResult(plan, exp, 0.0, interval)
        if abs(exp.nof - window.failures) <= tol * window.failures:
            return WindowResult(plan, exp, rate, interval)
        rate *= window.failures / exp.nof
    raise ValueError(f"the failure rate did not converge in {max_iter} iterations ({window}, {costs})")


def holds(value: float, target: float, op: str, tolerance: float) -> bool:
    """The scorecard's comparison: ``op`` is ``ge`` (a lower bound), ``le`` or ``eq`` (within ``tolerance``)."""
    if op == "ge":
        return value >= target - tolerance
    if op == "le":
        return value <= target + tolerance
    return abs(value - target) <= tolerance


def holding_range(
    window: Window,
    costs: Costs,
    *,
    target: float,
    op: str,
    tolerance: float,
    restarts_s: Sequence[float],
    blockings_s: Sequence[float],
) -> list[dict]:
    """Per blocking time: the expected ETT% at each restart overhead of the grid, and the smallest and largest
    restart overhead at which the comparison holds (``None`` when it holds nowhere on the grid).

    Every other cost is as stated in ``costs`` (a planned interruption's restart follows the restart overhead
    unless ``costs.planned_restart_s`` is given)."""
    out = []
    for b in blockings_s:
        points = []
        for r in sorted(restarts_s):
            c = replace(costs, restart_s=r, blocking_s=b)
            try:
                ett = window_plan(window, c).ett_pct
            except ValueError:
                ett = float("nan")
            points.append((r, ett, math.isfinite(ett) and holds(ett, target, op, tolerance)))
        ok = [r for r, _, h in points if h]
        out.append(
            {
                "blocking_s": b,
                "restart_min_s": min(ok) if ok else None,
                "restart_max_s": max(ok) if ok else None,
                "points": points,
            }
        )
    return out


def ratio_se(a: float, se_a: float, b: float, se_b: float) -> float:
    """Standard error of ``a / b`` for independent estimates (delta method)."""
    if a == 0 or b == 0:
        raise ValueError("the delta method needs non-zero means")
    return abs(a / b) * math.sqrt((se_a / a) ** 2 + (se_b / b) ** 2)


def _mean_se(xs: Sequence[float]) -> tuple[float, float]:
    n = len(xs)
    if n < 2:
        raise ValueError("a standard error needs at least two values")
    m = sum(xs) / n
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, math.sqrt(var / n)


def reduction_pct(before: Sequence[float], after: Sequence[float]) -> tuple[float, float]:
    """``(100 (1 - mean(after) / mean(before)), its standard error)`` for two independent samples."""
    mb, sb = _mean_se(before)
    ma, sa = _mean_se(after)
    return 100.0 * (1.0 - ma / mb), 100.0 * ratio_se(ma, sa, mb, sb)


def paired_reduction_pct(before: Sequence[float], after: Sequence[float]) -> tuple[float, float]:
    """``(100 (1 - sum(after) / sum(before)), the standard error of the mean per-pair reduction)`` for paired
    measurements (pair i: ``before[i]``, ``after[i]``)."""
    if len(before) != len(after):
        raise ValueError("paired samples must have the same length")
    pooled = 100.0 * (1.0 - sum(after) / sum(before))
    _, se = _mean_se([100.0 * (1.0 - a / b) for b, a in zip(before, after)])
    return pooled, se


def range_text(ranges: Sequence[dict], restarts_s: Sequence[float]) -> str:
    """``holding_range``'s result in words: per blocking time b, the restart overheads (minutes) of the grid at which
    the comparison holds, then the grid."""
    parts = []
    for r in ranges:
        b = f"b {r['blocking_s']:.3g} s"
        if r["restart_min_s"] is None:
            parts.append(f"none ({b})")
        else:
            parts.append(f"{r['restart_min_s'] / 60:g}-{r['restart_max_s'] / 60:g} min ({b})")
    return (
        "restart "
        + "; ".join(parts)
        + f"; grid {min(restarts_s) / 60:g}-{max(restarts_s) / 60:g} min, {len(restarts_s)} points"
    )


def _rule(b_startup, b_runs, o_startup, o_runs) -> tuple[float, float]:
    """(measured saving per job, (1 + NoF) prediction): means over jobs; the per-run saving is per-run means."""
    per_run = b_startup.sum() / b_runs.sum() - o_startup.sum() / o_runs.sum()
    predicted = float(compound_saving(per_run, float(b_runs.mean()) - 1.0))
    return float(b_startup.mean() - o_startup.mean()), predicted


def restart_rule_ratio(
    baseline_startup_s: Sequence[float],
    baseline_runs: Sequence[int],
    optimized_startup_s: Sequence[float],
    optimized_runs: Sequence[int],
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> dict:
    """The (1 + NoF) rule on two groups of jobs: measured start-up saving per job over the predicted one.

    Per job: its start-up seconds (every run's, summed) and its number of runs.  The saving per start is the
    baseline's start-up per run minus the optimized one's; the rule predicts a saving per job of that times
    ``1 + restarts`` (the baseline's mean runs per job minus one; :func:`ettcore.planning.restarts.compound_saving`);
    the measured saving per job is the difference of the mean start-up per job.  The standard error of
    ``measured / predicted`` is the spread over ``resamples`` bootstrap resamples of the jobs (each group resampled
    with replacement, ``seed`` fixed)."""
    import numpy as np

    arrays = [
        np.asarray(v, dtype=float) for v in (baseline_startup_s, baseline_runs, optimized_startup_s, optimized_runs)
    ]
    if len(arrays[0]) != len(arrays[1]) or len(arrays[2]) != len(arrays[3]):
        raise ValueError("each group needs one start-up time and one run count per job")
    if min(len(arrays[0]), len(arrays[2])) < 2:
        raise ValueError("each group needs at least two jobs")
    measured, predicted = _rule(*arrays)
    if predicted == 0:
        raise ValueError("the rule predicts no saving: the ratio is undefined")
    rng = np.random.default_rng(seed)
    ratios = []
    for _ in range(resamples):
        ib = rng.integers(0, len(arrays[0]), len(arrays[0]))
        io = rng.integers(0, len(arrays[2]), len(arrays[2]))
        m, p = _rule(arrays[0][ib], arrays[1][ib], arrays[2][io], arrays[3][io])
        if p != 0:
            ratios.append(m / p)
    return {
        "measured_s": measured,
        "predicted_s": predicted,
        "ratio": measured / predicted,
        "ratio_se": float(np.std(ratios, ddof=1)),
    }
