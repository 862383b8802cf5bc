"""MTTF against job size: a fleet's system and hardware failure rate per GPU-hour, its exact interval, the MTTF it
projects at a job size and the ETT% the expected-ETT model (:mod:`ettcore.planning.expected`) then expects.

- **The fit** (:func:`fit_failure_rate`): the measured interruptions whose cause is in
  :data:`~ettcore.metric.nodes.SYSTEM_CAUSES` (node failure, infrastructure, hardware; never a user error,
  a time limit or a preemption), over the fleet's measured GPU-hours (every attempt's measured time x its GPUs).
  The rate is Poisson, ``n / T``; its two-sided ``confidence`` interval is Garwood's exact one,
  ``[chi2(a/2; 2n) / 2T, chi2(1 - a/2; 2n + 2) / 2T]`` with ``a = 1 - confidence`` (lower bound 0 for ``n = 0``: no
  failure gives an upper bound, never a division by zero).
- **MTTF at N GPUs**: failures arrive at ``rate x N`` per hour on a job of ``N`` GPUs, so ``MTTF = 1 / (rate x N)``
  hours; the interval's ends invert (a zero lower rate is an unbounded MTTF).
- **Projected ETT%** (:func:`project`): the expected-ETT model's closed form at the point rate and at both ends of
  the interval (``failures_per_gpu_day = 24 x rate``), and its Monte Carlo at the point rate as a cross-check.

Assumptions: failures are a Poisson process whose rate per GPU-hour does not depend on the job's size (a job of N
GPUs is N times as exposed), as Kokolis et al. 2024 (arXiv 2410.21680) model MTTF against size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ettcore import metric
from ettcore.errors import InputError, Problem
from ettcore.metric.nodes import SYSTEM_CAUSES, register_causes
from ettcore.planning.expected import JobPlan, expected_ett, simulate_ett
from ettcore.trace.load import Trace

__all__ = ["FailureRate", "fit_failure_rate", "garwood", "fit_trace", "Projection", "project"]


def garwood(n: int, exposure: float, confidence: float = 0.95) -> tuple[float, float]:
    """Garwood's exact two-sided interval of a Poisson rate: ``n`` events over ``exposure``."""
    from scipy import stats  # here: importing scipy costs every ett command half a second of start-up

    a = 1.0 - confidence
    lo = 0.0 if n == 0 else float(stats.chi2.ppf(a / 2, 2 * n)) / (2 * exposure)
    hi = float(stats.chi2.ppf(1 - a / 2, 2 * n + 2)) / (2 * exposure)
    return lo, hi


@dataclass(frozen=True)
class FailureRate:
    """System and hardware failures per GPU-hour, with the exact interval."""

    failures: int
    gpu_h: float
    confidence: float
    rate_per_gpu_h: float
    low_per_gpu_h: float
    high_per_gpu_h: float
    causes: tuple[str, ...] = SYSTEM_CAUSES

    def mttf_h(self, gpus: int) -> tuple[float, float, float]:
        """``(mttf, low, high)`` hours at a job of ``gpus`` GPUs: ``1 / (rate x gpus)``; ``inf`` where the rate is 0
        (the point with no failure, and the high end whenever the low rate is 0)."""
        _check_gpus(gpus)
        inv = lambda r: math.inf if r <= 0 else 1.0 / (r * gpus)  # noqa: E731
        return inv(self.rate_per_gpu_h), inv(self.high_per_gpu_h), inv(self.low_per_gpu_h)


def _check_gpus(gpus: int) -> None:
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise InputError(Problem("--gpus", None, "gpus", f"must be an integer >= 1, got {gpus!r}"))


def fit_failure_rate(failures: int, gpu_h: float, confidence: float = 0.95) -> FailureRate:
    """The rate and its Garwood interval; an exposure that is not positive, or a confidence outside (0, 1), is an
    input error."""
    if not (0 < confidence < 1):
        raise InputError(Problem("--confidence", None, "confidence", f"must be in (0, 1), got {confidence!r}"))
    if not (gpu_h > 0) or math.isinf(gpu_h):
        raise InputError(
            Problem("trace", None, "gpu_h", f"no measured GPU-hours to fit a failure rate on (got {gpu_h!r})")
        )
    if failures < 0:
        raise InputError(Problem("trace", None, "failures", f"negative failure count {failures!r}"))
    lo, hi = garwood(int(failures), float(gpu_h), confidence)
    return FailureRate(int(failures), float(gpu_h), confidence, failures / gpu_h, lo, hi)


def fit_trace(trace: Trace, confidence: float = 0.95, causes: tuple[str, ...] | None = None) -> FailureRate:
    """:func:`fit_failure_rate` on a trace: its measured interruptions of ``causes`` over its measured GPU-hours;
    ``causes`` default: the MTTF causes of the trace's vocabulary (:data:`SYSTEM_CAUSES`, with a user's causes file's
    causes of the MTTF groups)."""
    register_causes(trace)
    if causes is None:
        causes = metric.vocabulary_of(trace).mttf_causes
    n = trace.con.execute(
        "SELECT count(*) FROM attempt_causes WHERE list_contains($c, cause)", {"c": list(causes)}
    ).fetchall()[0][0]
    gpu_h = trace.con.execute("SELECT coalesce(sum(held_ms * gpus), 0) / 3600000.0 FROM attempt_held").fetchall()[0][0]
    fit = fit_failure_rate(int(n), float(gpu_h), confidence)
    return FailureRate(
        fit.failures, fit.gpu_h, confidence, fit.rate_per_gpu_h, fit.low_per_gpu_h, fit.high_per_gpu_h, causes
    )


MAX_SIMULATED_TRIES = 5e7  # exponential draws a projection's Monte Carlo may make (about 10 s here), all runs together


@dataclass(frozen=True)
class Projection:
    """What a job of ``gpus`` GPUs can expect at the fitted rate: MTTF and ETT% with the interval carried through
    (``ett_low_pct`` at the high rate, ``ett_high_pct`` at the low rate)."""

    gpus: int
    mttf_h: float
    mttf_low_h: float
    mttf_high_h: float
    ett_pct: float  # closed form at the point rate
    ett_low_pct: float
    ett_high_pct: float
    nof: float  # expected failures at the point rate
    mc_ett_pct: float | None  # Monte Carlo at the point rate; None where it was not run (MAX_SIMULATED_TRIES)
    mc_ett_se_pct: float | None


def project(
    rate: FailureRate,
    gpus: int,
    *,
    work_h: float,
    interval_s: float,
    blocking_s: float,
    ttr_s: float,
    tts_s: float = 0.0,
    shutdown_s: float = 0.0,
    runs: int = 2000,
    seed: int = 0,
) -> Projection:
    """MTTF and expected ETT% of a job of ``gpus`` GPUs doing ``work_h`` hours of training with a checkpoint every
    ``interval_s`` (module doc)."""
    _check_gpus(gpus)

    def plan(r: float) -> JobPlan:
        return JobPlan(
            tts_s=tts_s,
            ttr_s=ttr_s,
            failures_per_gpu_day=24.0 * r,
            work_s=work_h * 3600.0,
            gpus=gpus,
            interval_s=interval_s,
            blocking_s=blocking_s,
            shutdown_s=shutdown_s,
        )

    try:
        point, worst, best = (
            expected_ett(plan(r)) for r in (rate.rate_per_gpu_h, rate.high_per_gpu_h, rate.low_per_gpu_h)
        )
        at = plan(rate.rate_per_gpu_h)
        # a rate at which each job needs millions of restarts: the closed form answers (ETT% near 0), the event by
        # event simulation would run for hours or for ever
        mc = simulate_ett(at, runs=runs, seed=seed) if at.tries() * runs <= MAX_SIMULATED_TRIES else None
    except ValueError as exc:
        raise InputError(Problem("plan", None, None, str(exc))) from None
    mttf, lo, hi = rate.mttf_h(gpus)
    return Projection(
        gpus,
        mttf,
        lo,
        hi,
        point.ett_pct,
        worst.ett_pct,
        best.ett_pct,
        point.nof,
        mc.ett_pct if mc else None,
        mc.ett_se_pct if mc else None,
    )
