"""Fleet trend in buckets of any length (an hour, five minutes), by measuring the trace as of each boundary.

:func:`ettcore.metric.trend` splits attributed time at UTC midnights, so its
finest bucket is a day.  A campaign of an hour needs finer buckets.  This
module measures the trace once *as of* every bucket boundary ``T`` (the
loader's ``as_of``: work is cut at ``T``, a train span's cursor prorated) and
takes differences:

    productive GPU-hours in [T_k, T_k+1) = productive(as of T_k+1) - productive(as of T_k)

so ``ett_pct`` of a bucket is GPU-time weighted over the work done inside it.
Wall GPU-hours come straight from each job's ``[T0, T1]`` (a cut inside a
re-queue gap would end the job at its last attempt).  Both are exact: what is
productive at an instant depends only on what came before it (the data
high-water mark), and cutting a train span prorates its cursor linearly, as the
metric takes it to grow.  Components and the L1 buckets are
*not* given per bucket: both depend on what comes after an instant (the span
that ends last, whether an interruption follows), which a cut changes.
Interruptions are counted in the bucket where their attempt ends.

The cost is one load of the trace per boundary inside the fleet's time span
(``max_buckets`` bounds it); for long fleets use :func:`ettcore.metric.trend`.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from . import metric
from .errors import Problem, TraceError
from .trace import load_trace

COLUMNS = ("bucket_start", "jobs", "wall_gpu_h", "productive_gpu_h", "ett_pct", "nof", "nof_failure", "nof_preemption")


def _productive_until(path: str | Path, as_of_s: float, mapping: str | Path | None) -> float:
    f = metric.fleet_summary(load_trace(path, mapping=mapping, as_of=as_of_s))
    return float(f["productive_gpu_h"][0] or 0.0)


def trend_every(path: str | Path, seconds: int, *, mapping: str | Path | None = None, max_buckets: int = 200) -> pl.DataFrame:
    """One row per ``seconds``-long UTC bucket (aligned to the epoch) from the fleet's first to its last instant.

    Columns: ``bucket_start`` (UTC datetime), ``jobs`` (jobs whose wall time
    overlaps the bucket), ``wall_gpu_h``, ``productive_gpu_h``, ``ett_pct``
    (null for an empty bucket), ``nof``, ``nof_failure``, ``nof_preemption``.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 1:
        raise TraceError(Problem("every", None, "seconds", f"bucket length must be a whole number of seconds >= 1, got {seconds!r}"))
    full = load_trace(path, mapping=mapping)
    jobs = metric.job_summary(full)
    if jobs.height == 0:
        raise TraceError(Problem(str(path), None, None, "no job to measure"))
    first = jobs["t0"].min().replace(tzinfo=timezone.utc).timestamp()
    last = jobs["t1"].max().replace(tzinfo=timezone.utc).timestamp()
    b0 = math.floor(first / seconds) * seconds
    n = max(1, math.ceil((last - b0) / seconds))
    if n > max_buckets:
        raise TraceError(Problem("every", None, "seconds", f"{n} buckets of {seconds} s exceed max_buckets={max_buckets}; "
                                                           "choose longer buckets or use ett trend"))
    total = float(metric.fleet_summary(full)["productive_gpu_h"][0])
    edges = [b0 + k * seconds for k in range(n + 1)]
    prod_until = [0.0 if e <= first else total if e >= last else _productive_until(path, e, mapping) for e in edges]
    ends = full.sql("SELECT end_ms, end_reason FROM clean_attempts WHERE end_reason IN ('failure', 'preemption')")
    t0s = [t.replace(tzinfo=timezone.utc).timestamp() for t in jobs["t0"]]
    t1s = [t.replace(tzinfo=timezone.utc).timestamp() for t in jobs["t1"]]
    gpus = jobs["gpus"].to_list()
    rows = []
    for k in range(n):
        lo, hi = edges[k], edges[k + 1]
        wall = sum(g * max(0.0, min(b, hi) - max(a, lo)) for a, b, g in zip(t0s, t1s, gpus)) / 3600.0
        prod = prod_until[k + 1] - prod_until[k]
        upper = (pl.col("end_ms") <= hi * 1000) if k == n - 1 else (pl.col("end_ms") < hi * 1000)  # the last bucket holds T1
        inside = ends.filter((pl.col("end_ms") >= lo * 1000) & upper)
        rows.append({
            "bucket_start": datetime.fromtimestamp(lo, tz=timezone.utc),
            "jobs": sum(1 for a, b in zip(t0s, t1s) if a < hi and b > lo),
            "wall_gpu_h": wall,
            "productive_gpu_h": prod,
            "ett_pct": 100.0 * prod / wall if wall > 0 else None,
            "nof": inside.height,
            "nof_failure": inside.filter(pl.col("end_reason") == "failure").height,
            "nof_preemption": inside.filter(pl.col("end_reason") == "preemption").height,
        })
    return pl.DataFrame(rows, schema={"bucket_start": pl.Datetime("us", "UTC"), "jobs": pl.Int64, "wall_gpu_h": pl.Float64,
                                      "productive_gpu_h": pl.Float64, "ett_pct": pl.Float64, "nof": pl.Int64,
                                      "nof_failure": pl.Int64, "nof_preemption": pl.Int64})
