"""Expected ETT% from rates (the planning view): closed form, Monte Carlo, Meta's ETTR model.

The model (all times in seconds):

* the job must do ``work_s`` seconds of productive training on ``gpus`` GPUs;
* it first spends ``tts_s`` starting, and ``shutdown_s`` at the end;
* it saves a checkpoint after every ``interval_s`` of progress, each save
  blocking training for ``blocking_s``; the last stretch (at most one interval)
  ends the job without a save (the final save belongs to shutdown);
* failures arrive as a Poisson process at ``failures_per_gpu_day x gpus`` per
  day, but only while the training loop runs (training, replay, saves); a
  failure loses the progress since the last completed save (a failure during a
  save loses that save) and costs ``ttr_s`` of restart overhead (detection,
  re-queue, start-up, checkpoint load) before the loop resumes from the save.
  No failure strikes during start-up, restart overhead or shutdown.

Note: ``ttr_s`` here is the restart overhead only; the trace metric's recovery
window (spec section 4) also contains the replay of lost work.

Closed form.  For a stretch with exposure ``T`` (``interval + blocking`` or the
last stretch) and failure rate ``L`` per second, the time to get through it is
``(exp(L T) - 1) (1/L + ttr)`` in expectation (a renewal argument: each try
either survives ``T`` or fails after an exponential time and pays ``ttr``),
with ``exp(L T) - 1`` expected failures.  Summing the stretches::

    E[wall] = tts + n (exp(L (tau + b)) - 1)(1/L + ttr) + (exp(L r) - 1)(1/L + ttr) + shutdown
    E[ETT%] = 100 x work / E[wall]

with ``n = ceil(work / tau) - 1`` saved stretches and ``r = work - n tau``.
``E[ETT%]`` is the ratio of expectations (as a GPU-time-weighted fleet ETT%
over many such jobs), not the mean of per-job ratios.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

__all__ = [
    "JobPlan",
    "Expectation",
    "expected_ett",
    "expected_ett_first_order",
    "BestInterval",
    "best_interval",
    "MonteCarlo",
    "simulate_ett",
    "kokolis_ettr",
    "kokolis_optimal_interval",
    "DAY_S",
]

DAY_S = 86_400.0


_EXP_MAX = math.log(sys.float_info.max)  # about 709.8: math.exp and math.expm1 overflow past it


@dataclass(frozen=True)
class JobPlan:
    """Inputs of the planning model (seconds; rates per GPU-day)."""

    tts_s: float
    ttr_s: float
    failures_per_gpu_day: float
    work_s: float
    gpus: int
    interval_s: float
    blocking_s: float
    shutdown_s: float = 0.0

    def __post_init__(self) -> None:
        for k in ("tts_s", "ttr_s", "failures_per_gpu_day", "blocking_s", "shutdown_s"):
            v = getattr(self, k)
            if not (v >= 0) or math.isinf(v):
                raise ValueError(f"{k} must be a finite number >= 0, got {v!r}")
        for k in ("work_s", "interval_s"):
            v = getattr(self, k)
            if not (v > 0) or math.isinf(v):
                raise ValueError(f"{k} must be a finite number > 0, got {v!r}")
        if int(self.gpus) != self.gpus or self.gpus < 1:
            raise ValueError(f"gpus must be an integer >= 1, got {self.gpus!r}")

    @property
    def rate_per_s(self) -> float:
        """Job failure rate while training: ``failures_per_gpu_day x gpus / 86400``."""
        return self.failures_per_gpu_day * self.gpus / DAY_S

    def tries(self) -> float:
        """Expected tries a simulated job makes, ``n x e^(rate x full) + e^(rate x last)`` (inf past a float's
        range): what :func:`simulate_ett` costs, one exponential draw a try."""
        lam = self.rate_per_s
        n, full, last = self.stretches()
        if lam * max(full if n else 0.0, last) > _EXP_MAX:
            return math.inf
        return n * math.exp(lam * full) + math.exp(lam * last)

    def stretches(self) -> tuple[int, float, float]:
        """``(n, full_exposure, last_exposure)``: n saved stretches of ``tau + b``, then ``r``."""
        n = max(math.ceil(self.work_s / self.interval_s - 1e-12) - 1, 0)
        return n, self.interval_s + self.blocking_s, self.work_s - n * self.interval_s


@dataclass(frozen=True)
class Expectation:
    """Closed-form expectations of the planning model."""

    wall_s: float
    nof: float
    ett_pct: float


def _stretch(rate: float, exposure: float, ttr: float) -> tuple[float, float]:
    """Expected (time, failures) to get through one stretch of the given exposure."""
    if rate == 0:
        return exposure, 0.0
    if rate * exposure > _EXP_MAX:  # e^x past a float's range: the stretch is, in expectation, never got through
        return math.inf, math.inf
    k = math.expm1(rate * exposure)
    return k * (1.0 / rate + ttr), k


def expected_ett(plan: JobPlan) -> Expectation:
    """Exact expected wall time, failures and ETT% of the planning model (module docstring)."""
    lam = plan.rate_per_s
    n, full, last = plan.stretches()
    t_full, f_full = _stretch(lam, full, plan.ttr_s) if n else (0.0, 0.0)  # no full stretch: none of its inf
    t_last, f_last = _stretch(lam, last, plan.ttr_s)
    wall = plan.tts_s + n * t_full + t_last + plan.shutdown_s
    return Expectation(wall, n * f_full + f_last, 100.0 * plan.work_s / wall)


def expected_ett_first_order(plan: JobPlan) -> Expectation:
    """First-order (small ``L x exposure``) version of :func:`expected_ett`.

    Formula: with ``loop = work (1 + b / tau)`` the time in the training loop,
    ``E[NoF] ~ L loop`` and each failure costs ``ttr + (tau + b) / 2``::

        E[wall] ~ tts + loop + L loop (ttr + (tau + b) / 2) + shutdown

    This is the blog's and Kokolis et al.'s level of approximation; it ignores
    failures during replay and treats every stretch as a full interval.
    """
    lam = plan.rate_per_s
    loop = plan.work_s * (1.0 + plan.blocking_s / plan.interval_s)
    nof = lam * loop
    wall = plan.tts_s + loop + nof * (plan.ttr_s + (plan.interval_s + plan.blocking_s) / 2.0) + plan.shutdown_s
    return Expectation(wall, nof, 100.0 * plan.work_s / wall)


@dataclass(frozen=True)
class BestInterval:
    """The checkpoint interval that maximizes the expected ETT% of a plan (:func:`best_interval`), against the plan's
    own interval, with Young's first-order optimum as the check."""

    interval_s: float  # the best interval (seconds of progress between saves)
    ett_pct: float  # the expected ETT% at it
    today_interval_s: float  # the plan's interval
    today_ett_pct: float  # the expected ETT% at the plan's interval
    young_s: float | None  # sqrt(2 x blocking x MTBF), MTBF = 1 / the job's failure rate; None without failures or
    # without blocking

    @property
    def gain_pct_points(self) -> float:
        """Expected ETT% at the best interval less today's (>= 0)."""
        return self.ett_pct - self.today_ett_pct


def best_interval(plan: JobPlan, points: int = 400) -> BestInterval:
    """The interval in ``(0, work_s]`` that maximizes :func:`expected_ett` for ``plan`` (its other inputs held).

    The expected wall time is not smooth in the interval (the number of saved stretches, ``ceil(work / tau) - 1``,
    steps), so the search evaluates ``points`` intervals spaced evenly in log between ``work_s / 1e6`` and
    ``work_s``, then refines between the best one's neighbours by a bounded scalar search in log, keeping the best
    interval evaluated.  Without failures the best interval is the whole work (no save, none needed); without
    blocking a shorter interval never costs, and the search returns the shortest that does as well.
    """
    from scipy.optimize import minimize_scalar  # here: importing scipy costs every ett command start-up

    def wall(tau: float) -> float:
        return expected_ett(_with_interval(plan, tau)).wall_s

    lo, hi = math.log(plan.work_s / 1e6), math.log(plan.work_s)
    grid = [math.exp(lo + (hi - lo) * i / (points - 1)) for i in range(points)]
    walls = [wall(t) for t in grid]
    k = min(range(points), key=lambda i: (walls[i], -grid[i]))  # ties: the longest interval (fewest saves)
    best, best_wall = grid[k], walls[k]
    a, b = math.log(grid[max(k - 1, 0)]), math.log(grid[min(k + 1, points - 1)])
    if b > a:
        got = minimize_scalar(lambda x: wall(math.exp(x)), bounds=(a, b), method="bounded")
        tau = math.exp(float(got.x))
        if wall(tau) < best_wall:
            best, best_wall = tau, wall(tau)
    lam = plan.rate_per_s
    young = math.sqrt(2.0 * plan.blocking_s / lam) if lam > 0 and plan.blocking_s > 0 else None
    return BestInterval(best, 100.0 * plan.work_s / best_wall, plan.interval_s, expected_ett(plan).ett_pct, young)


def _with_interval(plan: JobPlan, interval_s: float) -> JobPlan:
    return JobPlan(
        plan.tts_s,
        plan.ttr_s,
        plan.failures_per_gpu_day,
        plan.work_s,
        plan.gpus,
        interval_s,
        plan.blocking_s,
        plan.shutdown_s,
    )


@dataclass(frozen=True)
class MonteCarlo:
    """Monte Carlo estimates of the planning model."""

    runs: int
    wall_s: float  # mean wall time
    wall_se_s: float  # standard error of the mean wall time
    nof: float  # mean number of failures
    ett_pct: float  # 100 x work / mean wall (ratio of means, comparable to expected_ett)
    ett_se_pct: float  # its standard error (delta method)
    mean_of_ratios_pct: float  # mean over runs of 100 x work / wall (for reference)


def simulate_ett(plan: JobPlan, runs: int = 20_000, seed: int = 0) -> MonteCarlo:
    """Simulate the planning model event by event, ``runs`` independent jobs.

    Each stretch is retried until a try survives its whole exposure: a try
    draws an exponential time to failure; if it falls inside the exposure the
    try's elapsed time plus ``ttr_s`` is spent and the stretch starts again from
    the last save.  Vectorised over runs with NumPy (``seed`` fixes the
    generator).  Same assumptions as the closed form; the two are independent
    computations of the same model.
    """
    if runs < 2:
        raise ValueError("runs must be >= 2")
    rng = np.random.default_rng(seed)
    lam = plan.rate_per_s
    n, full, last = plan.stretches()
    wall = np.full(runs, plan.tts_s + plan.shutdown_s, dtype=float)
    nof = np.zeros(runs, dtype=np.int64)
    for exposure in [full] * n + [last]:
        pending = np.arange(runs)
        while pending.size:
            if lam == 0:
                wall[pending] += exposure
                break
            t_fail = rng.exponential(1.0 / lam, size=pending.size)
            ok = t_fail >= exposure
            wall[pending[ok]] += exposure
            failed = pending[~ok]
            wall[failed] += t_fail[~ok] + plan.ttr_s
            nof[failed] += 1
            pending = failed
    mean = float(wall.mean())
    se = float(wall.std(ddof=1) / math.sqrt(runs))
    ett = 100.0 * plan.work_s / mean
    return MonteCarlo(
        runs=runs,
        wall_s=mean,
        wall_se_s=se,
        nof=float(nof.mean()),
        ett_pct=ett,
        ett_se_pct=ett * se / mean,
        mean_of_ratios_pct=float((100.0 * plan.work_s / wall).mean()),
    )


def kokolis_ettr(
    n_nodes: float, failures_per_node_day: float, restart_overhead_s: float, write_s: float, interval_s: float
) -> float:
    """Meta's expected ETTR approximation (Kokolis et al. 2024, arXiv 2410.21680), as a fraction.

    Formula (as transcribed by secondary sources)::

        E[ETTR] ~ (1 - N r_f (u0 + dt / 2)) / (1 + w / dt)

    with ``N`` nodes, ``r_f`` failures per node-day (converted here to per
    second), ``u0`` the restart overhead, ``w`` the checkpoint write (blocking)
    time and ``dt`` the checkpoint interval.  A first-order model of a long run:
    no start-up or shutdown term.  Their paper reports it within about 5 % of
    Monte Carlo.
    """
    if interval_s <= 0:
        raise ValueError("interval_s must be > 0")
    rate = n_nodes * failures_per_node_day / DAY_S
    return (1.0 - rate * (restart_overhead_s + interval_s / 2.0)) / (1.0 + write_s / interval_s)


def kokolis_optimal_interval(n_nodes: float, failures_per_node_day: float, write_s: float) -> float:
    """Kokolis et al.'s optimal interval ``dt* = sqrt(2 w / (N r_f))`` (seconds; Young's form)."""
    rate = n_nodes * failures_per_node_day / DAY_S
    if rate <= 0 or write_s <= 0:
        raise ValueError("need a positive failure rate and write time")
    return math.sqrt(2.0 * write_s / rate)
