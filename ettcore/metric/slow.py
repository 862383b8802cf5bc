"""Slow time: training time lost to train spans that ran slower than the job's own ideal pace.

Counted after the fact, per job, from the trace's train spans (docs/metric.md, "Slow time"); not to be confused with
the live ``slow`` state of :mod:`ettcore.metric.hangs`, which flags a running job whose recent steps are slow and
counts nothing.

- A job's **ideal time per cursor unit** is the 10th percentile (``quantile_cont``) of seconds per cursor unit over its
  advancing train spans past warm-up (each attempt's first advancing train span is its warm-up), when there are at
  least 5 of them; a job with fewer has no ideal pace and no slow time (``job_ideal_pace.sql``).
- A span past warm-up is **slow** when it took longer than ``(1 + tolerance)`` times its advance at the ideal pace;
  its **slow time** is the new-data share of its excess over the ideal time (the replayed share is wasted training
  already, in Level 2), counted where the span starts (inside the analysis window, outside the job's exclusion
  windows) (``train_slow.sql``).
- Per job: ``slow_spans``, ``slow_s``, ``slow_gpu_h`` and the **ETT at ideal pace**, ``100 * (productive_s - slow_s)
  / wall_s`` beside the paper's ETT%, which slow time does not change (``job_slow.sql``); per group and for the
  fleet the same, GPU-time weighted (``group_slow.sql``); per trend bucket, fixed or rolling, the slow spans that
  start in it and the bucket's ETT at ideal pace (``trend_slow.sql``, ``rolling_starts.sql`` over
  ``slow_span_starts.sql``).

The queries are ``ettcore/sql/metric/train_advances.sql``, ``job_ideal_pace.sql``, ``train_slow.sql`` and
``job_slow.sql`` and ``group_slow.sql``; the plain-Python reference is ``tests/reference.py``'s ``reference_slow``.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import polars as pl

from ettcore import metric
from ettcore.errors import InputError, Problem
from ettcore.order import in_natural_order
from ettcore.trace.load import Trace, relation_kind
from ettcore.trace.queries import sql

DEFAULT_TOLERANCE = 0.25  # a span up to 25 % over its ideal time is jitter, not slowness


def check_tolerance(value: float | str | None) -> float:
    """The slow tolerance as a number (``DEFAULT_TOLERANCE`` when None); a negative, infinite or non-numeric one is
    refused with one line naming ``--slow-tolerance``."""
    if value is None:
        return DEFAULT_TOLERANCE
    try:
        tolerance = float(value)
    except (TypeError, ValueError):
        tolerance = float("nan")
    if not math.isfinite(tolerance) or tolerance < 0:
        raise InputError(
            Problem("--slow-tolerance", None, "slow_tolerance", f"not a fraction of 0 or more (0.25 = 25 %): {value!r}")
        )
    return tolerance


def prepare(trace: Any, tolerance: float | str | None = None) -> None:
    """The per-job results, the tolerance parameter and the ``train_advances``, ``job_ideal_pace``, ``train_slow``
    and ``job_slow`` views."""
    e = metric.engine_of(trace)
    e.prepare(per_job=True)  # job_slow.sql reads the per-job results
    e.define_values("ett_slow_params", {"tolerance": check_tolerance(tolerance)})
    # the first two do not depend on the tolerance: kept (an engine that plans each read again computes them once)
    for view, keep in (("train_advances", True), ("job_ideal_pace", True), ("train_slow", False), ("job_slow", False)):
        e.define(view, "metric/" + view, keep=keep)


def train_slow(trace: Any, tolerance: float | str | None = None) -> pl.DataFrame:
    """One row a slow span: ``job_id, attempt, start, end, start_ms, seconds, ideal_s, slow_s``, in natural job order,
    then by start."""
    prepare(trace, tolerance)
    return in_natural_order(metric.engine_of(trace).run("metric/train_slow"), "job_id", "start")


def job_slow(trace: Any, tolerance: float | str | None = None) -> pl.DataFrame:
    """One row a measured job, in natural job order: ``job_id, model, gpus, slow_spans, slow_s, slow_gpu_h,
    ideal_pace_per_s, ett_pct, ett_ideal_pct``."""
    prepare(trace, tolerance)
    return in_natural_order(metric.engine_of(trace).run("metric/job_slow"))


WINDOW_COLUMNS = ("job_id", "attempt", "rank", "node", "start", "end", "steps", "work_s", "wait_s")


def has_rank_timing(trace: Trace) -> bool:
    """Whether the trace holds rank timing windows of its measured jobs (its optional ``rank_timing`` table, or a
    fleet store's ``rows_rank_timing``)."""
    if relation_kind(trace.con, "clean_rank_timing") is None:
        return False
    # every row fetched (fetchall): a later con.sql on this connection refuses a result left unfinished
    return trace.con.execute("SELECT EXISTS (SELECT 1 FROM clean_rank_timing)").fetchall()[0][0]


def holders(trace: Trace, windows: list[dict] | None = None, tolerance: float | str | None = None) -> pl.DataFrame:
    """One row a slow span, in natural job order then by start: ``job_id, attempt, start, end, slow_s`` and the rank
    that held the job back there (``rank, node, work_share, work_s, wait_s``; ``ranks``: how many ranks had a window
    in it), from each rank's work and wait per window: the trace's ``rank_timing`` table (docs/trace-format.md), or
    ``windows`` given (rows of :func:`ettcore.importers.recorder.read_rank_timing`, ``start``/``end`` in epoch
    seconds) (``slow_holders.sql``)."""
    prepare(trace, tolerance)
    if windows is None:
        trace.con.execute(
            "CREATE OR REPLACE TEMP VIEW rank_windows AS SELECT job_id, attempt, rank, node, start_ms, end_ms, steps, "
            "work_s, wait_s FROM clean_rank_timing"
        )
        return in_natural_order(trace.sql(sql("metric/slow_holders")), "job_id", "start")
    frame = pl.DataFrame(
        [{k: w[k] for k in WINDOW_COLUMNS} for w in windows],
        schema={
            "job_id": pl.Utf8,
            "attempt": pl.Int64,
            "rank": pl.Int64,
            "node": pl.Utf8,
            "start": pl.Float64,
            "end": pl.Float64,
            "steps": pl.Int64,
            "work_s": pl.Float64,
            "wait_s": pl.Float64,
        },
    ).with_columns(
        (pl.col("start") * 1000).round().cast(pl.Int64).alias("start_ms"),
        (pl.col("end") * 1000).round().cast(pl.Int64).alias("end_ms"),
    )
    trace.con.register("ett_rank_windows_given", frame)
    trace.con.execute("CREATE OR REPLACE TEMP VIEW rank_windows AS SELECT * FROM ett_rank_windows_given")
    return in_natural_order(trace.sql(sql("metric/slow_holders")), "job_id", "start")


def group_slow(trace: Any, by: str | None = None, tolerance: float | str | None = None) -> pl.DataFrame:
    """One row for the fleet, or one row a group when ``by`` names a column a summary can be grouped by
    (:func:`ettcore.metric.group_columns`): ``<by>, jobs, slow_spans, slow_gpu_h, ett_pct, ett_ideal_pct``."""
    prepare(trace, tolerance)
    engine = metric.engine_of(trace)
    engine.set_groups(by)
    return metric.name_groups(engine.run("metric/group_slow"), by)


def trend(
    trace: Any,
    buckets: pl.DataFrame,
    every: str = "day",
    window: str | timedelta | None = None,
    tolerance: float | str | None = None,
) -> pl.DataFrame:
    """``buckets`` (:func:`ettcore.metric.trend`'s rows for the same ``every`` and ``window``) with each bucket's
    ``slow_spans``, ``slow_gpu_h`` (0 where none; a slow span counts in the bucket, or the trailing windows, where it
    starts) and ``ett_ideal_pct``, ``100 * max(0, productive_gpu_h - slow_gpu_h) / wall_gpu_h`` (``trend_slow.sql``;
    rolling: ``rolling_starts.sql`` over ``slow_span_starts.sql``)."""
    prepare(trace, tolerance)
    e = metric.engine_of(trace)
    window_ms = metric.trend_window(every, window)
    if window_ms is None:
        per_bucket = e.run("metric/trend_slow", {"every": every})
    else:
        per_bucket = metric.rolling_events(e, "slow_span_starts", every, window_ms, "slow_spans", "slow_gpu_h")
    out = metric.with_bucket_figures(buckets, per_bucket, {"slow_spans": 0, "slow_gpu_h": 0.0})
    ideal = (pl.col("productive_gpu_h") - pl.col("slow_gpu_h")).clip(lower_bound=0.0)
    wall = pl.when(pl.col("wall_gpu_h") > 0).then(pl.col("wall_gpu_h"))
    return out.with_columns((100.0 * ideal / wall).alias("ett_ideal_pct"))
