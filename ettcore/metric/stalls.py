"""Stalls: train spans in which a job's data cursor stood still for longer than a threshold (reporting only).

A hang (a collective that never returns, a stuck data loader) shows in a trace as a train span that takes far
longer than its cursor advance needs.  Per job, the **pace** is its own step rate: the median, over its train
spans that advanced, of cursor units per second.  A span's **stalled time** is how much longer it took than its
cursor advance takes at that pace (all of it when the cursor did not move).  The span is a **stall** when its
stalled time exceeds the threshold: ``stall_after`` seconds when given (``ett stalls --stall-after``), otherwise the
time of 10 cursor units at the job's pace, but at least 60 s.  A stall counts where its span starts: inside the
analysis window and outside the job's exclusion windows (:mod:`ettcore.trace.window`).

Stalls change no figure of the metric: the span's time stays productive or replay as the cursor says (docs/metric.md).
The queries are ``ettcore/sql/metric/job_pace.sql``, ``train_pace.sql``, ``train_stalls.sql`` and ``job_stalls.sql``.
"""

from __future__ import annotations

import math

import polars as pl

from ettcore import metric
from ettcore.errors import InputError, Problem
from ettcore.order import in_natural_order
from ettcore.trace.load import Trace
from ettcore.trace.queries import sql


def _stall_after(value: float | str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(Problem("--stall-after", None, "stall_after", f"not a positive number of seconds: {value!r}"))
    return seconds


def prepare(trace: Trace, stall_after: float | str | None) -> None:
    """The per-job results, the threshold parameter and the ``job_pace``, ``train_pace`` and ``train_stalls`` views.

    A trace that keeps ``job_pace`` or ``train_stalls`` computed (``trace.stored_views``: a fleet store's per-job
    results, made by these queries) reads them from there; the kept stalls are those of the default threshold, so
    a ``stall_after`` judges the spans again."""
    metric.job_metrics(trace)  # job_stalls.sql reads the per-job results
    con = trace.con
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_stall_params AS SELECT $s::DOUBLE AS stall_after_s",
        {"s": _stall_after(stall_after)},
    )
    kept = trace.stored_views
    con.execute(f"CREATE OR REPLACE TEMP VIEW job_pace AS {kept.get('job_pace') or sql('metric/job_pace')}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW train_pace AS {sql('metric/train_pace')}")
    stalls = kept.get("train_stalls") if stall_after is None else None
    con.execute(f"CREATE OR REPLACE TEMP VIEW train_stalls AS {stalls or sql('metric/train_stalls')}")


def train_stalls(trace: Trace, stall_after: float | str | None = None) -> pl.DataFrame:
    """One row a stall: ``job_id, attempt, start, end, stalled_s, threshold_s, pace_per_s``, in natural job order,
    then by start."""
    prepare(trace, stall_after)
    return in_natural_order(trace.sql("SELECT * FROM train_stalls"), "job_id", "start")


def job_stalls(trace: Trace, stall_after: float | str | None = None) -> pl.DataFrame:
    """One row a measured job, in natural job order: ``job_id, model, stalls, longest_stall_s, stall_s, pace_per_s,
    stall_after_s``."""
    prepare(trace, stall_after)
    return in_natural_order(trace.sql(sql("metric/job_stalls")))
