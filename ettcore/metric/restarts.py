"""Restarts that go nowhere: crash loops, retry chains and restart storms (reporting beside the metric; no figure
of the metric changes).

NoF counts a job's interruptions and ``(1 + NoF)`` prices them; a **crash loop** is the pattern the count hides: a
job that restarts from the same checkpoint and crashes again, and again (a poison batch, a deterministic bug).  In the
trace's own fields: an attempt's **resume point** is the ``cursor_start`` of its first train span; a **crash** is an
interruption whose cause's group has the vocabulary's ``crash`` flag (``ettcore/defaults/causes.yaml``: a failure of
the job's own run, not a preemption or a time limit).  A crash loop is a run of at least two consecutive attempts of
one job, each a crash, each after the first resuming from the same point as the attempt before it: no progress was
saved in between.  An attempt with no train span made no progress: it continues a loop it follows, and starts none.
Its **restarts** are the attempts after its first, its **GPU-hours** those they held (the job's GPUs times their
time, to the as-of time), and it **began** at its first attempt's end (its first crash).  A loop is **open** when
its last attempt is the job's last attempt that ended by the as-of time (a retry may be running): the job is in it
now, and ``EttCrashLoop`` alerts on it (``ett_job_crash_loop_restarts``).

A job's **retry chain** is its attempts until it completed or stopped: its attempts, interruptions and restarts (the
interruptions another attempt followed), its outcome (how its last attempt ended: completed, cancelled, running, or
interrupted with no attempt after it by the as-of time) and the wait from each interruption to the next attempt's
start.  For the fleet: the share of the jobs with an interruption whose chain completed (of those that ended), and
the median wait of every restart.  A **restart storm** is a burst of interruptions across jobs, fleet-wide or per
group (a Slurm partition, ``by``): at least ``interruptions`` of them within ``window``.

The definitions, with worked examples, are in ``docs/metric.md`` ("Crash loops", "Retry chains", "Restart
storms"); the queries are ``attempt_repeats.sql`` (each attempt's resume point and whether it repeats),
``crash_loops.sql`` and, per trend bucket, ``trend_crash_loops.sql`` and ``crash_loop_restart_starts.sql`` (with
``rolling_starts.sql``) over it,
``restart_waits.sql``, ``job_retry_chains.sql`` and ``restart_storms.sql`` in ``ettcore/sql/metric/`` (the waits'
sums and medians are taken here, alike on every engine); the plain-Python references the tests hold them to are
``reference_crash_loops``, ``reference_crash_loop_trend``, ``reference_retry_chains`` and ``reference_storms`` in
``tests/reference.py``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import polars as pl

from ettcore import metric
from ettcore.errors import InputError, Problem
from ettcore.order import in_natural_order
from ettcore.trace.instants import parse_duration
from ettcore.vocabulary import VOCABULARY

STORM_INTERRUPTIONS = 5  # interruptions within the window that make a storm (--storm-interruptions)
STORM_WINDOW = "1h"  # the storm's window (--storm-window)


def _repeats(trace: Any) -> Any:
    """The trace's engine, prepared, with the ``attempt_repeats`` view (``attempt_repeats.sql``: each attempt's resume
    point and whether it repeats), which the crash loops and their trend read."""
    e = metric.engine_of(trace)
    e.prepare()
    e.define("attempt_repeats", "metric/attempt_repeats", keep=True)  # crash_loops.sql reads it three times
    return e


def crash_loops(trace: Any) -> pl.DataFrame:
    """One row a crash loop, in natural job order then by its first attempt: ``job_id, model, first_attempt,
    last_attempt, restarts, resume_cursor, began, last_crash, gpu_h``."""
    return in_natural_order(_repeats(trace).run("metric/crash_loops"), "job_id", "first_attempt")


def trend(trace: Any, buckets: pl.DataFrame, every: str = "day", window: str | timedelta | None = None) -> pl.DataFrame:
    """``buckets`` (:func:`ettcore.metric.trend`'s rows for the same ``every`` and ``window``) with each bucket's
    ``crash_loop_restarts`` and ``crash_loop_gpu_h`` (0 where none): the crash loops' restarts that start in the bucket
    (rolling: in its trailing window), each counted whole there, and the GPU-hours they held (``trend_crash_loops.sql``;
    rolling: ``rolling_starts.sql`` over ``crash_loop_restart_starts.sql``).  Summed over calendar buckets that cover
    the trace, they are the fleet's crash-loop restarts and GPU-hours (:func:`crash_loops`)."""
    window_ms = metric.trend_window(every, window)
    e = _repeats(trace)
    if window_ms is None:
        per_bucket = e.run("metric/trend_crash_loops", {"every": every})
    else:
        per_bucket = metric.rolling_events(
            e, "crash_loop_restart_starts", every, window_ms, "crash_loop_restarts", "crash_loop_gpu_h"
        )
    return metric.with_bucket_figures(buckets, per_bucket, {"crash_loop_restarts": 0, "crash_loop_gpu_h": 0.0})


def open_crash_loops(trace: Any, loops: pl.DataFrame | None = None) -> pl.DataFrame:
    """The crash loops the jobs are in now (:func:`crash_loops`' rows whose last attempt is the job's last attempt that
    ended by the as-of time; at most one a job), in natural job order, with the same columns; ``loops``: the trace's
    :func:`crash_loops` when the caller has them."""
    loops = crash_loops(trace) if loops is None else loops
    last = metric.engine_of(trace).run("metric/job_retry_chains").select("job_id", "last_ended_attempt")
    return (
        loops.join(last, on="job_id", how="inner", maintain_order="left")
        .filter(pl.col("last_attempt") == pl.col("last_ended_attempt"))
        .drop("last_ended_attempt")
    )


def _waits(e: Any) -> pl.DataFrame:
    """``restart_waits.sql``'s rows: one a restart, ``job_id, attempt, wait_ms``."""
    e.prepare()
    return e.run("metric/restart_waits")


def retry_chains(trace: Any) -> pl.DataFrame:
    """One row a job, in natural job order: ``job_id, model, attempts, interruptions, restarts, outcome,
    restart_wait_s, median_restart_wait_s`` (the waits' sum, and their median: None without a restart)."""
    e = metric.engine_of(trace)
    waits = (
        _waits(e)
        .group_by("job_id")
        .agg(
            pl.len().cast(pl.Int64).alias("restarts"),
            (pl.col("wait_ms").sum() / 1000).cast(pl.Float64).alias("restart_wait_s"),
            (pl.col("wait_ms").median() / 1000).cast(pl.Float64).alias("median_restart_wait_s"),
        )
    )
    chains = e.run("metric/job_retry_chains").join(waits, on="job_id", how="left", maintain_order="left")
    return in_natural_order(
        chains.select(
            "job_id",
            "model",
            "attempts",
            "interruptions",
            pl.col("restarts").fill_null(0),
            "outcome",
            pl.col("restart_wait_s").fill_null(0.0),
            "median_restart_wait_s",
        )
    )


def fleet_retry_chains(trace: Any) -> dict[str, Any]:
    """The fleet's retry chains: ``retried_jobs`` (with an interruption), ``retried_ended`` (of those, not running),
    ``retried_completed``, ``retry_completion_pct`` (100 x completed / ended; None when none ended), ``restarts`` and
    ``median_restart_wait_s`` over every restart of every job (not a median of medians; None without one)."""
    e = metric.engine_of(trace)
    chains = e.run("metric/job_retry_chains").filter(pl.col("interruptions") > 0)
    ended = chains.filter(pl.col("outcome") != VOCABULARY.open_end_reason)
    completed = ended.filter(pl.col("outcome") == VOCABULARY.role("completion")[0]).height
    waits = _waits(e)["wait_ms"]
    return {
        "retried_jobs": chains.height,
        "retried_ended": ended.height,
        "retried_completed": completed,
        "retry_completion_pct": 100.0 * completed / ended.height if ended.height else None,
        "restarts": waits.len(),
        "median_restart_wait_s": float(waits.median()) / 1000 if waits.len() else None,
    }


def storm_thresholds(interruptions: int | str | None, window: str | None) -> tuple[int, int]:
    """``(interruptions, window_ms)`` of a storm, defaults :data:`STORM_INTERRUPTIONS` within :data:`STORM_WINDOW`;
    at least 2 interruptions and a positive duration, else one line naming the option."""
    n = STORM_INTERRUPTIONS if interruptions is None else interruptions
    try:
        n = int(str(n).strip())
    except ValueError:
        n = 0
    if n < 2:
        raise InputError(
            Problem(
                "--storm-interruptions",
                None,
                "storm_interruptions",
                f"a storm is at least 2 interruptions: {interruptions!r}",
            )
        )
    return n, parse_duration(STORM_WINDOW if window is None else window, "--storm-window")


def restart_storms(
    trace: Any, by: str | None = None, interruptions: int | str | None = None, window: str | None = None
) -> pl.DataFrame:
    """One row a restart storm, per group of ``by`` (a column of ``jobs``, such as ``partition``; the fleet when
    None), by group then first interruption: ``[<by>,] first_interruption, last_interruption, interruptions, jobs``.
    A ``by`` that is not a column a summary can be grouped by is refused in one line naming ``--storm-by``."""
    n, window_ms = storm_thresholds(interruptions, window)
    if by is not None and by not in metric.group_columns(trace):
        allowed = ", ".join(metric.group_columns(trace))
        why = f"unknown column {by!r} to find storms by; choose one of: {allowed}"
        raise InputError(Problem("--storm-by", None, "storm_by", why))
    e = metric.engine_of(trace)
    e.prepare()
    e.set_groups(by)
    return metric.name_groups(e.run("metric/restart_storms", {"storm_n": n, "storm_window_ms": window_ms}), by)


def storms_per_group(
    trace: Any, by: str | None = None, interruptions: int | str | None = None, window: str | None = None
) -> pl.DataFrame:
    """The restart storms of :func:`restart_storms` counted per group of ``by``: one row for every value the jobs
    hold (in natural order; jobs without a value are in no group, as in :func:`restart_storms`), or one row for the
    fleet when ``by`` is None: ``[<by>,] storms, interruptions`` (the storms and the interruptions they hold; 0 and 0
    in a group without one)."""
    storms = restart_storms(trace, by, interruptions, window)
    if by is None:
        return pl.DataFrame(
            {"storms": [storms.height], "interruptions": [int(storms["interruptions"].sum())]},
            schema={"storms": pl.Int64, "interruptions": pl.Int64},
        )
    groups = metric.fleet_summary(trace, by=by).select(pl.col(by).cast(pl.String)).drop_nulls().unique()
    sums = storms.group_by(by).agg(pl.len().cast(pl.Int64).alias("storms"), pl.col("interruptions").sum())
    counts = groups.join(sums, on=by, how="left").with_columns(
        pl.col("storms").fill_null(0), pl.col("interruptions").fill_null(0).cast(pl.Int64)
    )
    return in_natural_order(counts, by)


def job_restarts(trace: Any, loops: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row a job, in natural job order: its retry chain (:func:`retry_chains`) and its crash loops
    (``crash_loops``, ``crash_loop_restarts``, ``crash_loop_gpu_h``: 0 without one); ``loops``: the trace's
    :func:`crash_loops` when the caller has them."""
    loops = crash_loops(trace) if loops is None else loops
    per_job = loops.group_by("job_id").agg(
        pl.len().cast(pl.Int64).alias("crash_loops"),
        pl.col("restarts").sum().cast(pl.Int64).alias("crash_loop_restarts"),
        pl.col("gpu_h").sum().alias("crash_loop_gpu_h"),
    )
    return (
        retry_chains(trace)
        .join(per_job, on="job_id", how="left", maintain_order="left")
        .with_columns(
            pl.col("crash_loops").fill_null(0),
            pl.col("crash_loop_restarts").fill_null(0),
            pl.col("crash_loop_gpu_h").fill_null(0.0),
        )
    )
