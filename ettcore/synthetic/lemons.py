"""SYNTHETIC fleets with planted bad nodes ("lemons"), for the recall and false alarms of ``ett nodes``.

A fleet of ``nodes`` nodes (``node001`` ...) of ``gpus_per_node`` GPUs.  Each job runs on ``k`` nodes (1, 2 or 4,
drawn), ``gpus_per_node x k`` GPUs, for ``work_h`` hours of training.  Each attempt holds ``k`` nodes drawn at
random and runs until the job's work is done or the first interruption:

- **node failures**: each node fails at ``base_rate`` per GPU-hour it holds, a lemon at ``lemon_factor`` times
  that (cause ``node_failure``); the attempt's failure time is exponential with the sum of its nodes' rates;
- **user errors** at ``user_rate`` per GPU-hour, whatever the nodes (cause ``user_error``);
- **preemptions** at ``preempt_rate`` per GPU-hour (cause ``preemption``).

After an interruption the job re-queues for ``requeue_s`` and resumes (work done so far kept: checkpoints are not
modelled).  Jobs do not compete for nodes (no scheduler): the fleet is a set of exposures, enough for a per-node
rate.  Every attempt carries ``nodes`` (a Slurm host list) and ``cause``; the trace is labelled synthetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ettcore.trace.writer import write_trace

T0 = 1_800_000_000.0


@dataclass(frozen=True)
class LemonFleet:
    """The parameters of a fleet (module doc); rates per GPU-hour."""

    nodes: int = 64
    lemons: int = 3
    lemon_factor: float = 10.0
    gpus_per_node: int = 8
    jobs: int = 300
    work_h: float = 24.0
    base_rate: float = 1e-3
    user_rate: float = 1e-4
    preempt_rate: float = 1e-4
    requeue_s: float = 120.0


def node_name(i: int) -> str:
    return f"node{i + 1:03d}"


def hostlist(names: list[int]) -> str:
    """A Slurm host list of node indices (``node[003,017]``)."""
    return "node[" + ",".join(f"{i + 1:03d}" for i in sorted(names)) + "]"


def generate(fleet: LemonFleet, seed: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, list[str]]:
    """(jobs, attempts, spans, lemon names) of one SYNTHETIC fleet."""
    rng = np.random.default_rng(seed)
    lemons = sorted(rng.choice(fleet.nodes, size=fleet.lemons, replace=False).tolist())
    rate = np.full(fleet.nodes, fleet.base_rate)
    rate[lemons] *= fleet.lemon_factor
    jobs, attempts, spans = [], [], []
    for j in range(fleet.jobs):
        k = int(rng.choice([1, 2, 4]))
        gpus = k * fleet.gpus_per_node
        job_id = f"job{j:04d}"
        jobs.append({"job_id": job_id, "model": "synthetic", "gpus": gpus})
        t = T0 + float(rng.uniform(0, 7 * 86400))
        left = fleet.work_h * 3600.0
        a = 0
        while left > 0:
            held = rng.choice(fleet.nodes, size=k, replace=False).tolist()
            per_s = (
                np.array(
                    [float(rate[held].sum() * fleet.gpus_per_node), fleet.user_rate * gpus, fleet.preempt_rate * gpus]
                )
                / 3600.0
            )
            waits = rng.exponential(1.0 / per_s)
            first = int(np.argmin(waits))
            run = min(float(waits[first]), left)
            done = run >= left
            reason, cause = (
                ("completed", None)
                if done
                else (("failure", "node_failure"), ("failure", "user_error"), ("preemption", "preemption"))[first]
            )
            attempts.append(
                {
                    "job_id": job_id,
                    "attempt": a,
                    "start": t,
                    "end": t + run,
                    "end_reason": reason,
                    "nodes": hostlist(held),
                    "cause": cause,
                }
            )
            progress = fleet.work_h * 3600.0 - left
            spans.append(
                {
                    "job_id": job_id,
                    "attempt": a,
                    "phase": "train",
                    "start": t,
                    "end": t + run,
                    "cursor_start": progress,
                    "cursor_end": progress + run,
                }
            )
            left -= run
            t += run + fleet.requeue_s
            a += 1
    to_dt = lambda df: df.with_columns(  # noqa: E731
        [(pl.col(c) * 1e6).round(0).cast(pl.Int64).cast(pl.Datetime("us", "UTC")).alias(c) for c in ("start", "end")]
    )
    return pl.DataFrame(jobs), to_dt(pl.DataFrame(attempts)), to_dt(pl.DataFrame(spans)), [node_name(i) for i in lemons]


def write_fleet(out: str | Path, fleet: LemonFleet, seed: int) -> tuple[Path, list[str]]:
    """Write one SYNTHETIC fleet as a trace folder; returns (folder, lemon names)."""
    jobs, attempts, spans, lemons = generate(fleet, seed)
    meta = {
        "synthetic": True,
        "generator": "ettcore.synthetic.lemons",
        "seed": seed,
        "fleet": fleet.__dict__,
        "lemons": lemons,
    }
    return write_trace(out, attempts=attempts, spans=spans, jobs=jobs, metadata=meta), lemons
