"""ETT%, Level 1 and Level 2, per job, per group, for the fleet and over time.

Every number is computed by the DuckDB queries in ``ettcore/sql/metric/`` (one
query a file, named after what it returns) and returned as a Polars frame.
The definitions are in ``docs/metric.md``; the plain-Python oracle the tests
compare against is :mod:`ettcore.reference`.

The views are built once per trace, in this order::

    clean_* --> metric_jobs, metric_attempts, metric_spans --> attributed_time (materialized)
        --> job_summary (materialized as job_metrics), job_l2_matrix, phase_busy
        --> group_summary / owner_gpu_hours (through job_groups), fleet_trend
"""

from __future__ import annotations

import duckdb
import polars as pl

from .errors import Problem, TraceError
from .phases import ALL_COMPONENTS
from .queries import sql
from .trace import Trace, damaged_file, quote_ident

TREND_BUCKETS = ("day", "week", "month")
COMPONENT_COLUMNS = tuple(f"{c}_s" for c in ALL_COMPONENTS)


def _prepare(trace: Trace) -> None:
    """Create the metric views and materialize the per-instant attribution, once."""
    if trace._cache.get("prepared"):
        return
    con = trace.con
    try:
        # materialized once: the attribution reads spans twice and attempts four times
        for table in ("metric_jobs", "metric_attempts", "metric_spans"):
            con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {sql('metric/' + table)}")
        con.execute(f"CREATE OR REPLACE TEMP TABLE attributed_time AS {sql('metric/attributed_time')}")
        con.execute(f"CREATE OR REPLACE TEMP TABLE job_metrics AS {sql('metric/job_summary')}")
    except duckdb.Error as exc:
        bad = damaged_file(trace.sources)  # a damaged column the checks never read (e.g. a label) shows up here
        if bad is None:
            raise
        raise TraceError(Problem(bad, None, None, f"cannot read the data: {str(exc).splitlines()[0]}")) from None
    trace._cache["prepared"] = True


def group_columns(trace: Trace) -> list[str]:
    """Columns a summary can be grouped by: ``model``, ``gpus`` and every label of ``jobs``."""
    return ["model", "gpus", *trace.labels]


def _set_groups(trace: Trace, by: str | None) -> None:
    """Point the ``job_groups`` view at one column (checked against the schema, then quoted)."""
    if by is None:
        expr = "'fleet'"
    else:
        allowed = group_columns(trace)
        if by not in allowed:
            raise TraceError(Problem("--by", None, "by", f"unknown grouping column {by!r}; choose one of: {', '.join(allowed)}"))
        expr = f"CAST({quote_ident(by)} AS VARCHAR)"
    trace.con.execute(f"CREATE OR REPLACE TEMP VIEW job_groups AS SELECT job_id, {expr} AS group_key FROM metric_jobs")


def job_summary(trace: Trace) -> pl.DataFrame:
    """One row a job: L1 numbers, the seconds of each L2 component, status, labels."""
    _prepare(trace)
    return trace.sql("SELECT * FROM job_metrics ORDER BY job_id")


def l2_matrix(trace: Trace) -> pl.DataFrame:
    """Long frame ``job_id, bucket, phase, component, owner, seconds``; sums to each job's wall."""
    _prepare(trace)
    return trace.sql(sql("metric/job_l2_matrix"))


def phase_busy(trace: Trace) -> pl.DataFrame:
    """Busy seconds per job and phase (overlapping spans counted twice)."""
    _prepare(trace)
    return trace.sql(sql("metric/phase_busy"))


def fleet_summary(trace: Trace, by: str | None = None) -> pl.DataFrame:
    """One row for the fleet, or one row a group when ``by`` names a column of ``jobs``."""
    _prepare(trace)
    _set_groups(trace, by)
    df = trace.sql(sql("metric/group_summary"))
    if by is None:
        return df.drop("group_key")
    return df.rename({"group_key": by})


def owner_gpu_hours(trace: Trace, by: str | None = None) -> pl.DataFrame:
    """GPU-hours lost per component and owner (per group when ``by`` is given)."""
    _prepare(trace)
    _set_groups(trace, by)
    df = trace.sql(sql("metric/owner_gpu_hours"))
    return df.drop("group_key") if by is None else df.rename({"group_key": by})


def trend(trace: Trace, every: str = "day") -> pl.DataFrame:
    """GPU-time-weighted ETT% and component GPU-hours per UTC calendar bucket, prorated per instant."""
    if every not in TREND_BUCKETS:
        raise TraceError(Problem("--every", None, "every", f"unknown bucket {every!r}; choose one of: {', '.join(TREND_BUCKETS)}"))
    _prepare(trace)
    return trace.sql(sql("metric/fleet_trend"), {"every": every})
