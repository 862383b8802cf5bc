"""Where the metric runs: DuckDB (default, in process) or Apache Spark.

Both engines run the same queries (``ettcore/sql/metric/``; translated for
Spark by :mod:`ettcore.engines.spark.transpile`) and return the same Polars frames.

A trace given as a local path is loaded and checked by DuckDB first
(:func:`ettcore.trace.load_trace`); with ``engine="spark"`` the metric is then
computed by Spark on the same files (:mod:`ettcore.engines.spark`).

A trace given as a URI (``scheme://...``: ``s3a://``, ``hdfs://``, ``gs://``,
``abfss://``, ``file:///``) is read by Spark alone, so it needs
``engine="spark"``: Spark finds the Parquet tables through Hadoop's FileSystem
API, runs the same data checks, the as-of time and the row accounting, then the
metric (:mod:`ettcore.engines.spark.load`).  Only Parquet traces are read from a
URI.  Object stores need their Hadoop connector and credentials in the Spark
configuration (``spark_conf``, ``spark-defaults.conf``, ``PYSPARK_SUBMIT_ARGS``).

A fleet store's Parquet mirror (:mod:`ettcore.engines.mirror_format`: a folder holding
``CURRENT.json``), given as a local folder or a URI, is read by Spark alone too
(:mod:`ettcore.engines.spark.mirror`): the store's current rows, already checked when
they were ingested, and the store's analysis time as the default as-of.

:func:`open_trace` loads a path or URI on the right engine (the ``ett`` command's ``--engine`` and
``--spark-master``), and every function of :mod:`ettcore.metric`, written once over the engine interface
(:class:`ettcore.metric.Engine`), runs on what it returns.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import polars as pl

from ettcore import metric
from ettcore.engines.mirror_format import is_mirror
from ettcore.errors import InputError, Problem
from ettcore.trace.load import is_uri, load_trace
from ettcore.trace.options import TraceOptions

ENGINES = ("duckdb", "spark")
DEFAULT_MASTER = "local[*]"


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise InputError(
            Problem("--engine", None, "engine", f"unknown engine {engine!r}; choose one of: {', '.join(ENGINES)}")
        )


def open_trace(
    path: str | Path,
    options: TraceOptions | None = None,
    *,
    engine: str = "duckdb",
    spark_master: str | None = None,
    spark_conf: dict[str, str] | None = None,
    **given: Any,
) -> Any:
    """Load and check the trace at ``path`` and open it on ``engine``: the trace every function of
    :mod:`ettcore.metric` takes.  ``options`` (:class:`~ettcore.trace.options.TraceOptions`, or its fields as keyword
    arguments on top) say how to open and cut it; ``spark_master`` (default ``local[*]``) and ``spark_conf`` are
    Spark's.

    A local path: :func:`ettcore.trace.load_trace` (DuckDB) reads and checks it, for either engine; with
    ``engine="spark"`` the checked trace is then opened on Spark (:func:`ettcore.engines.spark.open_trace`: Spark
    reads the same files, and its clean tables' fingerprint must equal DuckDB's).
    A URI (``scheme://...``): read and checked by Spark (:func:`ettcore.engines.spark.load.open_uri`); the result is
    a :class:`~ettcore.engines.spark.load.UriSparkTrace`.  DuckDB reads nothing of it, so ``memory_limit`` and
    ``temp_directory`` (DuckDB's) are refused there, as a URI with ``engine="duckdb"`` is.  A store's Parquet mirror
    (a folder or a URI holding ``CURRENT.json``) is opened by :func:`ettcore.engines.spark.mirror.open_mirror` (Spark
    only; the result is a :class:`~ettcore.engines.spark.mirror.MirrorSparkTrace`); its rows were checked when they
    were ingested, so ``skip_invalid`` is refused there.
    """
    _check_engine(engine)
    opts = TraceOptions.of(options, **given)
    master = spark_master or DEFAULT_MASTER
    if spark_master is not None and engine != "spark":
        raise InputError(Problem("--spark-master", None, "spark_master", "applies with --engine spark only"))
    mirror = is_mirror(path)  # a fleet store's Parquet mirror in a local folder (ettcore.engines.mirror_format)
    if not mirror and not is_uri(path):
        trace = load_trace(path, **opts.as_kwargs())
        if engine == "duckdb":
            return trace
        from ettcore.engines import spark

        return spark.open_trace(trace, spark.get_session(master, spark_conf))
    if engine != "spark":  # a URI or a mirror: read by Spark alone
        why = (
            "a store's Parquet mirror is read with --engine spark (DuckDB reads the store file itself)"
            if mirror
            else "DuckDB reads traces from local paths only; to read a URI (scheme://...) use --engine spark"
        )
        raise InputError(Problem(str(path), None, None, why))
    from ettcore.engines import spark
    from ettcore.engines.spark import load as spark_load
    from ettcore.engines.spark import mirror as spark_mirror

    session = spark.get_session(master, spark_conf)
    if mirror or spark_mirror.is_mirror_uri(session, str(path)):
        return spark_mirror.open_mirror(path, session, opts)
    return spark_load.open_uri(str(path), session, opts)


def job_summary(path: str | Path, options: TraceOptions | None = None, **how: Any) -> pl.DataFrame:
    """Per-job frame of the trace at ``path`` (a local path, or a URI for Spark; see
    :func:`ettcore.metric.job_summary`), opened as :func:`open_trace` opens it (``engine``, ``spark_master``,
    ``spark_conf`` and the options' fields as keyword arguments)."""
    return metric.job_summary(open_trace(path, options, **how))


def fleet_summary(path: str | Path, options: TraceOptions | None = None, by: str | None = None, **how: Any):
    """Fleet (or per-group) frame of the trace at ``path`` (see :func:`ettcore.metric.fleet_summary`), opened as
    :func:`open_trace` opens it."""
    return metric.fleet_summary(open_trace(path, options, **how), by)


def trend(path: str | Path, options: TraceOptions | None = None, every: str = "day", **how: Any) -> pl.DataFrame:
    """Trend frame of the trace at ``path`` (see :func:`ettcore.metric.trend`), opened as :func:`open_trace` opens
    it."""
    return metric.trend(open_trace(path, options, **how), every)


def max_relative_difference(a: pl.DataFrame, b: pl.DataFrame) -> float:
    """Largest relative difference between two frames of the same shape and columns (0.0: identical).

    Numbers compare as ``|x - y| / max(|x|, |y|)`` (0 when both are 0); any
    other value (text, dates, NULL against a value) that differs counts as 1.0.
    """
    if a.columns != b.columns or a.height != b.height:
        return float("inf")
    worst = 0.0
    for name in a.columns:
        x, y = a[name], b[name]
        if x.dtype.is_numeric() and y.dtype.is_numeric():
            xf, yf = x.cast(pl.Float64), y.cast(pl.Float64)
            if not (xf.is_null() == yf.is_null()).all():
                return 1.0
            rel = (
                pl.DataFrame({"x": xf, "y": yf})
                .select(
                    ((pl.col("x") - pl.col("y")).abs() / pl.max_horizontal(pl.col("x").abs(), pl.col("y").abs()))
                    .fill_nan(0.0)
                    .fill_null(0.0)
                    .max()
                )
                .item()
            )
            worst = max(worst, float(rel or 0.0))
        elif not x.equals(y, check_dtypes=False, check_names=False):
            return 1.0
    return worst


def benchmark_engines(
    path: str | Path,
    spark_master: str = DEFAULT_MASTER,
    every: str = "day",
    spark_conf: dict[str, str] | None = None,
    memory_limit: str | None = None,
) -> dict[str, Any]:
    """Time both engines on the same trace in one process, and check they agree (for ``make bench``).

    Steps, each timed with ``time.perf_counter`` (seconds): ``load_s`` (DuckDB
    loading and checks, shared by both engines); per engine ``summary_s`` (per-job
    frame and fleet row) and ``trend_s``; for Spark also ``session_s`` (starting or
    reusing the session) and ``open_s`` (Spark reading the files, the fingerprint
    comparison, registering the views).  ``spark_over_duckdb`` is Spark's
    ``open_s + summary_s + trend_s`` over DuckDB's ``summary_s + trend_s``.
    ``max_rel_diff`` is the largest relative difference between the two engines'
    per-job, fleet and trend frames (:func:`max_relative_difference`).
    ``memory_limit`` caps DuckDB (as ``load_trace``'s); Spark's memory is set through ``spark_conf``.
    """
    from ettcore.engines import spark as sp

    out: dict[str, Any] = {"trace": str(path), "spark_master": spark_master}

    def timed(key: str, work):
        t = time.perf_counter()
        result = work()
        out[key] = time.perf_counter() - t
        return result

    trace = timed("load_s", lambda: load_trace(path, memory_limit=memory_limit))
    d_jobs, d_fleet = timed("duckdb_summary_s", lambda: (metric.job_summary(trace), metric.fleet_summary(trace)))
    d_trend = timed("duckdb_trend_s", lambda: metric.trend(trace, every))
    session = timed("spark_session_s", lambda: sp.get_session(spark_master, spark_conf))
    st = timed("spark_open_s", lambda: sp.open_trace(trace, session))
    s_jobs, s_fleet = timed("spark_summary_s", lambda: (metric.job_summary(st), metric.fleet_summary(st)))
    s_trend = timed("spark_trend_s", lambda: metric.trend(st, every))

    out["jobs"] = d_jobs.height
    out["spark_over_duckdb"] = (out["spark_open_s"] + out["spark_summary_s"] + out["spark_trend_s"]) / (
        out["duckdb_summary_s"] + out["duckdb_trend_s"]
    )
    out["max_rel_diff"] = max(
        max_relative_difference(d_jobs, s_jobs),
        max_relative_difference(d_fleet, s_fleet),
        max_relative_difference(d_trend, s_trend),
    )
    return out
