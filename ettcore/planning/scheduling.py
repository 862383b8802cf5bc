"""Preemption policies and crash-loop detection, simulated (paper IV-E).

Under congestion the scheduler preempts running jobs; each preemption adds a
recovery (NoF x TTR): the victim loses the work since its last checkpoint
(replayed after the restart) and pays its restart cost again.  The paper names
three levers without publishing numbers: stage-aware preemption (prefer jobs
that have just checkpointed), a tenant wait-time knob (the preempting tenant
may wait a little, for a victim to reach its next checkpoint) and crash-loop
detection.  This module simulates them on a set of jobs; every number it gives
is a model output, not a measurement.

Model (:func:`simulate_preemptions`; times in seconds):

* ``n`` jobs run side by side for a horizon ``H``; job ``j`` holds ``gpus_j``
  GPUs, checkpoints every ``interval_j`` of training and, when preempted, needs
  ``restart_j`` before it trains again (re-queue and start-up).  Its checkpoint
  phase starts uniform at random.  Jobs do not finish within the horizon.
* Preemption demands arrive as a Poisson process (``demands_per_day``); each
  needs the GPUs of a job drawn at random from the same jobs and takes one job
  that is training (not restarting) and holds at least that many GPUs (the
  largest training job if none does).  The same demand times, sizes and
  phases are used for every policy (common random numbers), so policies are
  compared on the same events.
* A victim loses ``since_j`` (the training since its last checkpoint, replayed)
  plus ``restart_j``; afterwards it trains from that checkpoint, so its phase
  restarts at 0 when the restart ends.
* Policies: ``random`` (a training job uniformly at random), ``stage_aware``
  (the training job with the least GPU-time since its checkpoint,
  ``gpus x since``), ``wait`` (the demand waits up to ``wait_s`` for the first
  training job to reach a checkpoint and takes it right after the save, losing
  no work; if none does, it takes the stage-aware choice at ``wait_s``; the
  tenant's waiting time is reported).
* Outputs per policy: preemptions (NoF), replayed and restart GPU-hours (their
  sum is NoF x TTR in GPU-hours), the mean tenant wait, and the fleet ETT%
  ``100 x (1 - lost GPU-time / (sum gpus x H))`` of this preemption loss alone.

Assumptions: demands are served one after another (a demand that waits does
not delay the next one's choice); GPU counts need not match the demand; no
other failures.  Crash loops: :func:`crash_loop_cost`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import polars as pl

from ettcore.trace.load import Trace

DAY_S = 86_400.0
POLICIES: tuple[str, ...] = ("random", "stage_aware", "wait")


@dataclass(frozen=True)
class Jobs:
    """The simulated jobs: GPUs, checkpoint interval and restart cost (seconds), one entry a job."""

    gpus: np.ndarray
    interval_s: np.ndarray
    restart_s: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.gpus)
        if n == 0 or len(self.interval_s) != n or len(self.restart_s) != n:
            raise ValueError("gpus, interval_s and restart_s must be non-empty and of the same length")
        if (self.gpus <= 0).any() or (self.interval_s <= 0).any() or (self.restart_s < 0).any():
            raise ValueError("gpus and interval_s must be > 0, restart_s >= 0")


def jobs_from_trace(
    trace: Trace, *, n: int, seed: int = 0, requeue_s: float = 0.0, default_interval_s: float = 3600.0
) -> Jobs:
    """Draw ``n`` jobs (with replacement, seeded) from a trace's measured jobs.

    Per job: ``gpus``; ``interval_s`` = the median gap between consecutive
    ``checkpoint_save`` starts within an attempt (``default_interval_s`` for a
    job with fewer than two saves); ``restart_s`` = its measured TTS (the
    start-up a restart repeats; an upper bound when restarts are warm) plus
    ``requeue_s``.
    """
    from ettcore import metric

    summary = metric.job_summary(trace).select("job_id", "gpus", "tts_s")
    gaps = trace.sql(
        """
        WITH s AS (
            SELECT job_id, start_ms - lag(start_ms) OVER (PARTITION BY job_id, attempt ORDER BY start_ms) AS gap_ms
            FROM clean_spans WHERE phase = 'checkpoint_save'
        )
        SELECT job_id, median(gap_ms) / 1000.0 AS interval_s FROM s WHERE gap_ms IS NOT NULL GROUP BY job_id
        """
    )
    jobs = (
        summary.join(gaps, on="job_id", how="left")
        .sort("job_id")
        .with_columns(pl.col("interval_s").fill_null(default_interval_s))
    )
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, jobs.height, size=n)
    return Jobs(
        jobs["gpus"].to_numpy()[idx].astype(float),
        jobs["interval_s"].to_numpy()[idx].astype(float),
        jobs["tts_s"].to_numpy()[idx].astype(float) + float(requeue_s),
    )


def _eligible(training: np.ndarray, gpus: np.ndarray, need: float) -> np.ndarray:
    big = training & (gpus >= need)
    if big.any():
        return big
    return training & (gpus == gpus[training].max())


def _choose(policy: str, since: np.ndarray, training: np.ndarray, gpus: np.ndarray, rng: np.random.Generator) -> int:
    cand = np.flatnonzero(training)
    if policy == "random":
        return int(rng.choice(cand))
    return int(cand[np.argmin(gpus[cand] * since[cand])])


def simulate_preemptions(
    jobs: Jobs,
    *,
    policy: str,
    demands_per_day: float,
    horizon_days: float,
    wait_s: float = 0.0,
    seed: int = 0,
    demand_times_s: Sequence[float] | None = None,
    phase: Sequence[float] | None = None,
) -> dict:
    """Run one policy; returns NoF, replayed/restart GPU-hours, mean tenant wait and ETT% (see the module docstring).

    ``demand_times_s`` and ``phase`` (each job's elapsed fraction of its
    checkpoint interval at time 0) replace the random draws when given.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    if demands_per_day < 0 or horizon_days <= 0 or wait_s < 0:
        raise ValueError("demands_per_day and wait_s must be >= 0, horizon_days > 0")
    rng = np.random.default_rng(seed)
    horizon = horizon_days * DAY_S
    n = len(jobs.gpus)
    k = rng.poisson(demands_per_day * horizon_days)
    demand_at = np.sort(rng.uniform(0, horizon, size=k))
    frac = rng.uniform(0, 1, size=n)
    need_all = jobs.gpus[rng.integers(0, n, size=k)]
    if demand_times_s is not None:
        demand_at = np.sort(np.asarray(demand_times_s, dtype=float))
        k = len(demand_at)
        need_all = np.zeros(k)
    if phase is not None:
        frac = np.asarray(phase, dtype=float)
        if frac.shape != (n,) or (frac < 0).any() or (frac >= 1).any():
            raise ValueError("phase needs one value in [0, 1) per job")
    anchor = -frac * jobs.interval_s  # time at which the current checkpoint phase began
    resume_at = np.zeros(n)  # restarting until then
    choice_rng = np.random.default_rng([seed, 1])
    replay = restart = waited = 0.0
    nof = 0
    for tau, need in zip(demand_at, need_all):
        at = tau
        training = resume_at <= at
        if not training.any():
            continue
        training = _eligible(training, jobs.gpus, need)
        since = np.mod(at - anchor, jobs.interval_s)
        if policy == "wait":
            to_next = jobs.interval_s - since
            soon = training & (to_next <= wait_s)
            if soon.any():
                cand = np.flatnonzero(soon)
                victim = int(cand[np.lexsort((to_next[cand], jobs.gpus[cand] * jobs.restart_s[cand]))[0]])
                at = tau + to_next[victim]
                lost_work = 0.0
            else:
                at = tau + wait_s
                training = resume_at <= at
                if not training.any():
                    continue
                training = _eligible(training, jobs.gpus, need)
                since = np.mod(at - anchor, jobs.interval_s)
                victim = _choose("stage_aware", since, training, jobs.gpus, choice_rng)
                lost_work = since[victim]
            waited += at - tau
        else:
            victim = _choose(policy, since, training, jobs.gpus, choice_rng)
            lost_work = since[victim]
        if at >= horizon:
            continue
        nof += 1
        replay += jobs.gpus[victim] * lost_work
        restart += jobs.gpus[victim] * jobs.restart_s[victim]
        resume_at[victim] = at + jobs.restart_s[victim]
        anchor[victim] = resume_at[victim]
    total = float(jobs.gpus.sum() * horizon)
    return {
        "policy": policy,
        "demands": int(k),
        "nof": nof,
        "replay_gpu_h": replay / 3600,
        "restart_gpu_h": restart / 3600,
        "lost_gpu_h": (replay + restart) / 3600,
        "mean_wait_min": (waited / k / 60) if k else 0.0,
        "ett_pct": 100 * (1 - (replay + restart) / total),
    }


def compare_policies(
    jobs: Jobs, *, demands_per_day: float, horizon_days: float, wait_s: float, seed: int = 0
) -> pl.DataFrame:
    """:func:`simulate_preemptions` for every policy on the same demands and phases, one row a policy."""
    return pl.DataFrame(
        [
            simulate_preemptions(
                jobs, policy=p, demands_per_day=demands_per_day, horizon_days=horizon_days, wait_s=wait_s, seed=seed
            )
            for p in POLICIES
        ]
    )


def crash_loop_cost(
    *, startup_s: float, requeue_s: float, gpus: float, horizon_days: float, detect_after: int | None
) -> dict:
    """GPU-hours a crash-looping job burns: it fails at the end of every start-up and is re-queued.

    Without detection (``detect_after=None``) it is re-allocated for the whole
    horizon: ``attempts = floor(H / (startup + requeue)) + 1`` (the last one
    may be cut at ``H``); with detection it stops after ``detect_after``
    attempts.  Each attempt holds the GPUs for ``startup_s`` (re-queue time
    holds none).  Returns attempts and GPU-hours.
    """
    if startup_s <= 0 or requeue_s < 0 or gpus <= 0 or horizon_days <= 0:
        raise ValueError("startup_s, gpus and horizon_days must be > 0, requeue_s >= 0")
    if detect_after is not None and detect_after < 1:
        raise ValueError("detect_after must be >= 1 or None")
    horizon = horizon_days * DAY_S
    cycle = startup_s + requeue_s
    full = int(horizon // cycle)
    held = full * startup_s + min(startup_s, horizon - full * cycle)
    attempts = full + (1 if horizon - full * cycle > 0 else 0)
    if detect_after is not None and detect_after < attempts:
        attempts, held = detect_after, detect_after * startup_s
    return {"attempts": attempts, "gpu_h": gpus * held / 3600}
