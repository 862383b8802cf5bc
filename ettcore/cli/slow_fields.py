"""Slow time in the answers of ``ett summarize`` (per job, per group, the fleet) and ``ett trend`` (docs/metric.md).

Measured by :mod:`ettcore.metric.slow` at the ``--slow-tolerance`` given (default 0.25), beside ETT%, which slow
time does not change:

- per job (``--json`` top-level keys of each job, and the text table): ``slow_spans`` (train spans slower than
  ``(1 + tolerance)`` times the job's ideal pace), ``slow_s`` (their slow seconds), ``slow_gpu_h`` (``gpus x slow_s /
  3600``), ``ideal_pace_per_s`` (the job's ideal pace, cursor units per second; null without one) and
  ``ett_ideal_pct`` (the ETT at ideal pace, %);
- per group and for the fleet: ``slow_spans``, ``slow_gpu_h`` and the GPU-time-weighted ``ett_ideal_pct``;
- per trend bucket (``ett trend``, fixed and rolling): ``slow_spans`` (the slow spans that start in the bucket, or
  its trailing window), ``slow_gpu_h`` and ``ett_ideal_pct``;
- the answer's ``slow`` object: the tolerance it was measured at;
- with ``--gpu-hour-price`` (summarize): each job's ``money.slow_cost`` (``slow_gpu_h x`` the job's price per GPU-hour)
  and the fleet's in ``slow.cost`` with its ``currency``.  Slow time is productive time, billed in ``cost`` and not in
  ``lost_cost``: ``slow_cost`` is the part of ``cost`` spent running slower than the ideal pace.

The slow queries run on either engine (the same files of ``ettcore/sql/metric/``, translated for Spark).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from ettcore.cli.output import format_table, jsonable, write_table
from ettcore.metric import slow

JOB_KEYS = ("slow_spans", "slow_s", "slow_gpu_h", "ideal_pace_per_s", "ett_ideal_pct")
GROUP_KEYS = ("slow_spans", "slow_gpu_h", "ett_ideal_pct")


@dataclass(frozen=True)
class SlowFigures:
    """One measurement of slow time: its tolerance, one row a job, the fleet's row and, with ``--by``, a row a group."""

    tolerance: float
    jobs: pl.DataFrame
    fleet: pl.DataFrame
    groups: pl.DataFrame | None


def measure(trace: Any, tolerance: float | str | None, by: str | None) -> SlowFigures:
    """The slow figures of ``trace`` (a trace or a store on DuckDB, or a trace on Spark)."""
    t = slow.check_tolerance(tolerance)
    groups = slow.group_slow(trace, by, t) if by else None
    return SlowFigures(t, slow.job_slow(trace, t), slow.group_slow(trace, None, t), groups)


def with_trend_columns(
    trace: Any, buckets: pl.DataFrame, every: str, window: str | None, tolerance: float | str | None
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """``ett trend``'s ``buckets`` with each bucket's ``slow_spans``, ``slow_gpu_h`` and ``ett_ideal_pct``
    (:func:`ettcore.metric.slow.trend`), and the answer's ``slow`` object."""
    t = slow.check_tolerance(tolerance)
    return slow.trend(trace, buckets, every, window, t), {"tolerance": t}


def with_job_columns(jobs: pl.DataFrame, figures: SlowFigures) -> pl.DataFrame:
    """``jobs`` (one row a job) with the slow columns of :data:`JOB_KEYS`, in ``jobs``'s order."""
    return jobs.join(figures.jobs.select("job_id", *JOB_KEYS), on="job_id", how="left", maintain_order="left")


def group_fields(figures: SlowFigures, by: str | None, value: Any = None) -> dict[str, Any]:
    """The slow keys of the fleet's record (``by`` None) or of the group ``value`` of ``by`` (none: zero slow time)."""
    frame = figures.fleet if by is None else figures.groups
    if by is not None:
        frame = frame.filter(pl.col(by).cast(pl.Utf8) == str(value))
    if frame.height == 0:
        return {"slow_spans": 0, "slow_gpu_h": 0.0, "ett_ideal_pct": None}
    row = frame.row(0, named=True)
    return {k: jsonable(row[k]) for k in GROUP_KEYS}


def with_job_cost(money_jobs: pl.DataFrame, figures: SlowFigures) -> pl.DataFrame:
    """:func:`ettcore.metric.money.job_money`'s rows with ``slow_cost``: the job's slow GPU-hours at its price."""
    slow_gpu_h = figures.jobs.select("job_id", "slow_gpu_h")
    return (
        money_jobs.join(slow_gpu_h, on="job_id", how="left", maintain_order="left")
        .with_columns((pl.col("slow_gpu_h").fill_null(0.0) * pl.col("price_per_gpu_h")).alias("slow_cost"))
        .drop("slow_gpu_h")
    )


def answer(figures: SlowFigures, money_jobs: pl.DataFrame | None = None, currency: str | None = None) -> dict:
    """The answer's ``slow`` object (with the money of :func:`with_job_cost`: the fleet's ``cost`` and ``currency``)."""
    out: dict[str, Any] = {"tolerance": figures.tolerance}
    if money_jobs is not None:
        out.update(cost=jsonable(money_jobs["slow_cost"].sum()), currency=currency)
    return out


def print_tables(figures: SlowFigures, by: str | None, money: dict | None = None) -> None:
    """The text answer's slow-time section: a row a job with slow time, the groups and the fleet (and ``money``, the
    ``slow`` object of :func:`answer` with a cost: what the fleet's slow time cost)."""
    print(f"Slow time (train spans slower than {1 + figures.tolerance:g} x their job's ideal pace, docs/metric.md;")
    print("counted beside ETT%, which it does not change; ett_ideal_pct: the ETT at ideal pace):")
    slowed = figures.jobs.filter(pl.col("slow_spans") > 0)
    if slowed.height:
        write_table(slowed, ["job_id", "slow_spans", "slow_s", "slow_gpu_h", "ett_pct", "ett_ideal_pct"], digits=2)
    else:
        print("no job has slow time")
    keys = ["slow_spans", "slow_gpu_h", "ett_pct", "ett_ideal_pct"]
    if figures.groups is not None:
        print()
        print(f"Slow time by {by}:")
        print(format_table(figures.groups, [by, "jobs", *keys], digits=2))
    print()
    print("Fleet slow time (GPU-time weighted):")
    print(format_table(figures.fleet, ["jobs", *keys], digits=2))
    if money is not None and "cost" in money:
        print(f"Slow time cost: {money['cost']:,.2f} {money['currency']} (each job's slow GPU-hours at its price)")
