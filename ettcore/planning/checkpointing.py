"""Checkpoint interval arithmetic: wasted time per day, its optimum, Young, Daly, async staging.

Checkpointing trades two costs (paper IV-C; the PyTorch blog's Figure 7):

* unsaved work lost at each failure: on average half an interval, so
  ``failures_per_day x interval / 2`` seconds a day;
* save blocking: ``train_s_per_day / interval`` saves a day, each blocking the
  training loop for ``blocking_s``.

Their sum has a single minimum at ``sqrt(2 x train_s x blocking / failures)``,
which is Young's (1974) formula with mean time between failures
``M = train_s / failures``.  Daly (2006) refines Young's first-order result.
Asynchronous staging cuts the blocking per save (the paper: -77 % fleet-wide),
which shortens the optimal interval by ``sqrt(1 - cut)`` and the minimum wasted
time by the same factor.  All times in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "wasted_per_day",
    "optimal_interval",
    "min_wasted_per_day",
    "young_interval",
    "daly_interval",
    "AsyncStagingEffect",
    "async_staging_effect",
    "DAY_S",
]

DAY_S = 86_400.0


def _positive(**kw: float) -> None:
    for k, v in kw.items():
        if not (v > 0) or math.isinf(v):
            raise ValueError(f"{k} must be a positive finite number, got {v!r}")


def wasted_per_day(
    interval_s: float, blocking_s: float, failures_per_day: float, train_s_per_day: float = DAY_S
) -> float:
    """Seconds a day lost to checkpointing at a given interval.

    Formula: ``failures_per_day x interval_s / 2 + (train_s_per_day / interval_s) x blocking_s``.

    Assumptions: failures fall uniformly within an interval (so the expected
    unsaved work is half an interval); every save blocks for the same
    ``blocking_s``; the restart cost itself and the loss of time spent blocked
    are not counted (first-order model, as in the blog).
    """
    _positive(interval_s=interval_s, train_s_per_day=train_s_per_day)
    if blocking_s < 0 or failures_per_day < 0:
        raise ValueError("blocking_s and failures_per_day must be >= 0")
    return failures_per_day * interval_s / 2.0 + train_s_per_day / interval_s * blocking_s


def optimal_interval(blocking_s: float, failures_per_day: float, train_s_per_day: float = DAY_S) -> float:
    """The interval minimising :func:`wasted_per_day`.

    Formula: setting the derivative ``F/2 - T b / tau^2`` to zero gives
    ``tau* = sqrt(2 x train_s_per_day x blocking_s / failures_per_day)``
    (the second derivative ``2 T b / tau^3`` is positive: a minimum).
    Same assumptions as :func:`wasted_per_day`; blocking and failures must be
    positive (with no failures there is no finite optimum).
    """
    _positive(blocking_s=blocking_s, failures_per_day=failures_per_day, train_s_per_day=train_s_per_day)
    return math.sqrt(2.0 * train_s_per_day * blocking_s / failures_per_day)


def min_wasted_per_day(blocking_s: float, failures_per_day: float, train_s_per_day: float = DAY_S) -> float:
    """Wasted seconds a day at the optimal interval: ``sqrt(2 x F x T x b)``.

    At ``tau*`` the two costs are equal, each ``sqrt(F T b / 2)``.
    """
    return wasted_per_day(
        optimal_interval(blocking_s, failures_per_day, train_s_per_day), blocking_s, failures_per_day, train_s_per_day
    )


def young_interval(checkpoint_cost_s: float, mtbf_s: float) -> float:
    """Young's (1974) first-order optimum: ``tau = sqrt(2 x C x M)``.

    ``C`` is the cost of one checkpoint, ``M`` the mean time between failures.
    Equals :func:`optimal_interval` when ``M = train_s_per_day / failures_per_day``.
    """
    _positive(checkpoint_cost_s=checkpoint_cost_s, mtbf_s=mtbf_s)
    return math.sqrt(2.0 * checkpoint_cost_s * mtbf_s)


def daly_interval(checkpoint_cost_s: float, mtbf_s: float) -> float:
    """Daly's (2006) higher-order optimum of the compute time between checkpoints.

    Formula: for ``C < 2M``,
    ``tau = sqrt(2 C M) x (1 + sqrt(C / (2M)) / 3 + (C / (2M)) / 9) - C``;
    otherwise ``tau = M``.  Assumes exponentially distributed failures and a
    restart cost that does not change the optimum (Daly's model).
    """
    _positive(checkpoint_cost_s=checkpoint_cost_s, mtbf_s=mtbf_s)
    c, m = checkpoint_cost_s, mtbf_s
    if c >= 2.0 * m:
        return m
    x = c / (2.0 * m)
    return math.sqrt(2.0 * c * m) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - c


@dataclass(frozen=True)
class AsyncStagingEffect:
    """Before/after figures of a cut in blocking per save (seconds, seconds a day)."""

    blocking_before_s: float
    blocking_after_s: float
    interval_before_s: float  # optimum with the old blocking
    interval_after_s: float  # optimum with the new blocking
    wasted_before_s: float  # a day, at the old optimum, old blocking
    wasted_same_interval_s: float  # a day, new blocking but interval left unchanged
    wasted_after_s: float  # a day, at the new optimum
    saved_per_day_s: float  # wasted_before_s - wasted_after_s


def async_staging_effect(
    blocking_s: float, failures_per_day: float, blocking_cut: float = 0.77, train_s_per_day: float = DAY_S
) -> AsyncStagingEffect:
    """Effect of cutting blocking per save by ``blocking_cut`` (a fraction; paper: 0.77).

    Formulas: ``b' = b (1 - cut)``; ``tau*' = tau* sqrt(1 - cut)``;
    ``W*' = W* sqrt(1 - cut)``.  Also reports the wasted time if the interval is
    left at the old optimum (``F tau*/2 + T b'/tau*``), which is what a fleet
    that does not re-tune its intervals gets.  Same assumptions as
    :func:`wasted_per_day`; applying the fleet-wide 77 % to one job assumes that
    job's cut equals the fleet's.
    """
    if not 0 <= blocking_cut < 1:
        raise ValueError("blocking_cut must be in [0, 1)")
    b2 = blocking_s * (1.0 - blocking_cut)
    t1 = optimal_interval(blocking_s, failures_per_day, train_s_per_day)
    t2 = optimal_interval(b2, failures_per_day, train_s_per_day)
    w1 = wasted_per_day(t1, blocking_s, failures_per_day, train_s_per_day)
    w_same = wasted_per_day(t1, b2, failures_per_day, train_s_per_day)
    w2 = wasted_per_day(t2, b2, failures_per_day, train_s_per_day)
    return AsyncStagingEffect(blocking_s, b2, t1, t2, w1, w_same, w2, w1 - w2)
