"""ETT%, Level 1 and Level 2, per job, per group, for the fleet and over time.

Every number is computed by the DuckDB queries in ``ettcore/sql/metric/`` (one
query a file, named after what it returns) and returned as a Polars frame.
The definitions are in ``docs/metric.md``; the plain-Python oracle the tests
compare against is ``tests/reference.py``.

The views are built once per trace, in this order::

    clean_* --> metric_jobs, metric_attempts
    span store (typed at load, :mod:`ettcore.trace.span_store`) --> keyed_spans (clean jobs' spans) --> metric_spans
        ett_window, ett_exclusions --> ett_exclusion_jobs --> unmeasured_time; analysis_cuts
    --> attributed_segments (the attribution: each job's wall time cut into segments; a view)
        --> attributed_time (materialized; every instant of every job, per cell), attributed_intervals (timelines)
    --> measured_time, measured_interruptions (inside the window, outside the job's exclusions)
        --> job_summary (materialized as job_metrics on first need) and job_component_time, job_l2_matrix,
            exclusion_summary, phase_busy
        --> group_summary and group_component_time / owner_gpu_hours (through job_groups)
        --> fleet_slots, interruption_slots --> fleet_trend, fleet_rolling

The Level 2 components are rows, not columns, in every query (one row a job, group or bucket and component); the
one place they become columns (``<component>_s``, ``<component>_gpu_h``, in the phase map's order) is
:func:`with_components`.

A trace measures every instant by default; ``load_trace(..., since=, until=, exclude=)`` or :func:`set_window`
choose a window and exclusion windows (:mod:`ettcore.trace.window`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

import duckdb
import polars as pl

from ettcore.errors import InputError, Problem
from ettcore.order import in_natural_order
from ettcore.phases import ALL_COMPONENTS, PhaseMap
from ettcore.trace import span_store, window
from ettcore.trace.instants import DAY_MS, HOUR_MS, parse_duration
from ettcore.trace.load import Attribution, Trace, damaged_file, quote_ident, relation_kind
from ettcore.trace.queries import sql
from ettcore.vocabulary import VOCABULARY, Vocabulary

TREND_BUCKETS = ("hour", "day", "week", "month")
ROLLING_BUCKETS = {"hour": HOUR_MS, "day": DAY_MS}  # buckets a trailing window can roll over (fixed length)
COMPONENT_COLUMNS = tuple(f"{c}_s" for c in ALL_COMPONENTS)  # a trace read without a mapping file


def attribution_batches(trace: Trace) -> int:
    """How many job batches the attribution runs in: 1 unless the trace's spans would not fit in half the memory limit
    (:func:`ettcore.trace.span_store.batches`)."""
    spans = (trace.accounting.get("spans") or {}).get("used", 0)
    return span_store.batches(trace.con, spans)


def _drop(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop the temporary table or view ``name`` (one of this module's), whichever it is now."""
    kind = relation_kind(con, name)
    if kind:
        con.execute(f"DROP {kind} {name}")


def _attribute_in_batches(trace: Trace, batches: int) -> None:
    """``attributed_time`` computed one batch of jobs at a time (jobs split by their key modulo ``batches``).

    Each batch reads only its part of the span store (:mod:`ettcore.trace.span_store`: written partitioned by batch at
    load), so the window and the sorts of one batch fit in memory.  Every job is in exactly one batch and the
    attribution of a job reads nothing of other jobs, so the union of the batches is the single-pass result
    (``tests/test_memory_limit.py`` checks it).
    """
    con = trace.con
    store = trace.span_store()
    excluded = bool(trace.excluded_jobs)
    # while the batches run, metric_attempts and metric_spans hold one batch; both are put back after
    con.execute("ALTER TABLE metric_attempts RENAME TO metric_attempts_all")
    try:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE ett_batch AS SELECT 0::UBIGINT AS b, $n::UBIGINT AS n", {"n": batches}
        )
        con.execute(
            "CREATE OR REPLACE TEMP VIEW metric_attempts AS SELECT a.* FROM metric_attempts_all AS a, ett_batch AS x "
            "WHERE a.job_key % x.n = x.b"
        )
        for b in range(batches):
            con.execute("UPDATE ett_batch SET b = $b", {"b": b})
            span_store.register_keyed(con, excluded, store.batch_source(b, batches))
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE metric_spans AS {sql('metric/metric_spans')}"
            )  # read once, used twice
            con.execute(f"CREATE OR REPLACE TEMP VIEW attributed_segments AS {sql('metric/attributed_segments')}")
            verb = "CREATE OR REPLACE TEMP TABLE attributed_time AS" if b == 0 else "INSERT INTO attributed_time"
            con.execute(f"{verb} {sql('metric/attributed_time')}")
    finally:
        con.execute("DROP VIEW IF EXISTS metric_attempts")
        con.execute("ALTER TABLE metric_attempts_all RENAME TO metric_attempts")
        _drop(con, "metric_spans")
        span_store.register_keyed(con, excluded)
        con.execute(f"CREATE OR REPLACE TEMP VIEW metric_spans AS {sql('metric/metric_spans')}")


def check_job_keys(con: duckdb.DuckDBPyConnection, where: str) -> None:
    """Refuse a trace in which two job ids share a job key (the 64-bit ``hash(job_id)`` the metric sorts and joins on).

    At a million jobs the chance is about 3e-8; when it happens the two jobs' numbers would be merged,
    so it is an error.
    """
    dup = con.execute(
        "SELECT min(job_id), max(job_id) FROM metric_jobs GROUP BY job_key HAVING count(*) > 1 ORDER BY 1 LIMIT 1"
    ).fetchall()
    if not dup:  # a job left out for a finding must not share its key either: its spans are left out by key
        dup = con.execute(
            "SELECT j.job_id, x.job_id FROM metric_jobs AS j JOIN ett_excluded_jobs AS x "
            "ON hash(x.job_id) = j.job_key AND x.job_id <> j.job_id ORDER BY ALL LIMIT 1"
        ).fetchall()
    if dup:
        a, b = dup[0]
        raise InputError(
            Problem(
                where,
                None,
                "job_id",
                f"job ids {a!r} and {b!r} have the same 64-bit job key (hash); rename one of them",
            )
        )


def _attribute(trace: Trace, n: int) -> None:
    """Materialize ``attributed_time`` for the trace's grid and analysis cuts (in ``n`` batches of jobs when n > 1)."""
    con = trace.con
    trace.span_store()
    _drop(con, "attributed_time")  # a fleet store's is a view of its stored cells (ettcore.store)
    if n <= 1:
        # materialized once: the attribution reads spans twice
        _drop(con, "metric_spans")
        con.execute(f"CREATE OR REPLACE TEMP TABLE metric_spans AS {sql('metric/metric_spans')}")
        con.execute(f"CREATE OR REPLACE TEMP VIEW attributed_segments AS {sql('metric/attributed_segments')}")
        con.execute(f"CREATE OR REPLACE TEMP TABLE attributed_time AS {sql('metric/attributed_time')}")
    else:
        _attribute_in_batches(trace, n)


def prepare(trace: Trace, batches: int | None = None, grid_ms: int | None = None) -> None:
    """Create the metric views and materialize the per-instant attribution, once.

    ``batches`` (default: :func:`attribution_batches`) > 1 computes the attribution one batch of jobs at a time, so
    a trace larger than DuckDB's memory limit is processed without the sorts spilling; the answer is the same.
    ``grid_ms`` (default: a UTC day) is the regular cut of the attribution: the hourly trend asks for an hour, and a
    trace already cut finer keeps its finer grid (every coarser bucket is a union of its cells).
    """
    grid = DAY_MS if grid_ms is None else int(grid_ms)
    if trace.attribution is not None:
        if grid >= trace.attribution.grid_ms:
            return
        _regrid(trace, grid)
        return
    con = trace.con
    n = attribution_batches(trace) if batches is None else int(batches)
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE ett_grid AS SELECT $g::BIGINT AS grid_ms", {"g": grid})
        con.execute(f"CREATE OR REPLACE TEMP TABLE metric_jobs AS {sql('metric/metric_jobs')}")
        check_job_keys(con, str(trace.path))
        con.execute(f"CREATE OR REPLACE TEMP TABLE metric_attempts AS {sql('metric/metric_attempts')}")
        window.check_labels(trace.window, group_columns(trace))
        window.match_jobs(con, trace.window, quote_ident)
        con.execute(f"CREATE OR REPLACE TEMP TABLE unmeasured_time AS {sql('metric/unmeasured_time')}")
        con.execute(f"CREATE OR REPLACE TEMP VIEW analysis_cuts AS {sql('metric/analysis_cuts')}")
        _attribute(trace, n)
        con.execute(f"CREATE OR REPLACE TEMP VIEW measured_time AS {sql('metric/measured_time')}")
        con.execute(f"CREATE OR REPLACE TEMP VIEW measured_interruptions AS {sql('metric/measured_interruptions')}")
        for view in ("fleet_slots", "interruption_slots"):
            con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS {sql('metric/' + view)}")
        _drop(con, "job_metrics")  # per-job results are materialized on first need (job_metrics): a trend needs none
    except duckdb.Error as exc:
        bad = damaged_file(trace.sources)  # a damaged column the checks never read (e.g. a label) shows up here
        if bad is None:
            raise
        raise InputError(Problem(bad, None, None, f"cannot read the data: {str(exc).splitlines()[0]}")) from None
    trace.attribution = Attribution(batches=n, grid_ms=grid)


def job_metrics(trace: Trace) -> None:
    """Materialize ``job_metrics`` (``job_summary.sql``: one row a job, in job id order) and ``job_component_time``
    once per preparation.

    Per-job results, groups and stalls read it; a trend does not, so :func:`prepare` leaves it to the first of them
    (2.9 s of a 1M-job trend otherwise)."""
    prepare(trace)
    if not trace.attribution.job_metrics:
        kept = trace.stored_views  # a fleet store keeps them computed (ettcore.store): read, not computed again
        trace.con.execute(
            f"CREATE OR REPLACE TEMP TABLE job_metrics AS {kept.get('job_metrics') or sql('metric/job_summary')}"
        )
        # the components of each job, read by the per-job and the per-group results
        for name in ("job_component_time", "job_cause_time"):
            # job_cause_time: the interruptions and lost time of each job by cause, read by the same
            trace.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {kept.get(name) or sql('metric/' + name)}")
        trace.attribution.job_metrics = True


def _regrid(trace: Trace, grid: int) -> None:
    """Attribute again on a finer grid (the per-job results do not depend on the grid, so job_metrics stays)."""
    trace.con.execute("UPDATE ett_grid SET grid_ms = $g", {"g": grid})
    _drop(trace.con, "attributed_time")  # a store's is a view of its stored (hourly) cells: attributed again here
    _attribute(trace, trace.attribution.batches)
    # the slots of the new grid (a fleet store keeps the fleet's slots of its own grid; ettcore.store)
    for view in ("fleet_slots", "interruption_slots"):
        trace.con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS {sql('metric/' + view)}")
    trace.attribution.grid_ms = grid


def set_window(trace: Trace, since=None, until=None, exclude=None) -> None:
    """Measure ``trace`` over another window: ``[since, until)`` minus the exclusions (see :mod:`ettcore.trace.window`).

    The attribution is computed again on the next metric call; ``set_window(trace)`` measures every instant again.
    """
    trace.window = window.make_window(since, until, exclude)
    window.register(trace.con, trace.window)
    trace.attribution = None


def group_columns(trace: Trace) -> list[str]:
    """Columns a summary can be grouped by: ``model``, ``gpus`` and every label of ``jobs``."""
    return ["model", "gpus", *trace.labels]


def check_by(trace, by: str) -> None:
    """Refuse a ``--by`` that is not a column a summary can be grouped by (on either engine)."""
    allowed = group_columns(trace)
    if by not in allowed:
        raise InputError(
            Problem("--by", None, "by", f"unknown grouping column {by!r}; choose one of: {', '.join(allowed)}")
        )


def bucket_ms(every: str) -> int | None:
    """The fixed length of a trend bucket in ms: an hour, a day, or a duration that divides a UTC day (``5m``,
    ``15m``, ``2h``); ``None`` for the calendar buckets week and month.  Anything else is refused."""
    if every in ROLLING_BUCKETS:
        return ROLLING_BUCKETS[every]
    if every in TREND_BUCKETS:
        return None
    try:
        ms = parse_duration(every, "--every")
    except InputError:
        ms = None
    if ms is None or ms < 1000 or DAY_MS % ms:
        raise InputError(
            Problem(
                "--every",
                None,
                "every",
                f"unknown bucket {every!r}; choose one of: {', '.join(TREND_BUCKETS)},"
                " or a duration that divides a day (5m, 15m, 2h)",
            )
        )
    return ms


def check_every(every: str) -> None:
    """Refuse a trend bucket other than hour, day, week, month or a duration dividing a day (on either engine)."""
    bucket_ms(every)


def trend_window(every: str, window: str | timedelta | None = None) -> int | None:
    """The trailing window of a trend in ms, or ``None`` for plain calendar buckets (day, week, month).

    ``--every hour`` or a duration (``5m``) always rolls (a window of one bucket unless given); a window needs
    ``--every`` hour, day or a duration, and must be a whole number of buckets (``24h``, ``7d``; ``90m`` with hours
    is refused).
    """
    step = bucket_ms(every)
    if window is None:
        return None if every in TREND_BUCKETS and every != "hour" else step
    if step is None:
        raise InputError(
            Problem(
                "--window", None, "window", f"a trailing window needs --every hour, day or a duration, not {every!r}"
            )
        )
    ms = int(window.total_seconds() * 1000) if isinstance(window, timedelta) else parse_duration(window)
    if ms <= 0 or ms % step:
        raise InputError(
            Problem(
                "--window",
                None,
                "window",
                f"the window {window!s} is not a whole number of "
                + (f"{every}s" if every in ROLLING_BUCKETS else f"{every} buckets"),
            )
        )
    return ms


def name_groups(df: pl.DataFrame, by: str | None) -> pl.DataFrame:
    """A grouped result's ``group_key`` column named after ``by``; dropped for the whole fleet."""
    return df.drop("group_key") if by is None else df.rename({"group_key": by})


def _set_groups(trace: Trace, by: str | None) -> None:
    """Point the ``job_groups`` view at one column (checked against the schema, then quoted)."""
    if by is None:
        expr = "'fleet'"
    else:
        check_by(trace, by)
        expr = f"CAST({quote_ident(by)} AS VARCHAR)"
    trace.con.execute(f"CREATE OR REPLACE TEMP VIEW job_groups AS SELECT job_id, {expr} AS group_key FROM metric_jobs")


# ----------------------------------------------------------------------------- the engines


class Engine(Protocol):
    """What the metric asks of the engine that holds a trace's views; each function below is written once over it.

    :class:`DuckDBEngine` (in process, the default) and the Spark engine
    (:class:`ettcore.engines.spark.SparkTrace`) run the same queries of ``ettcore/sql/metric/`` and give the same
    frames.
    """

    def prepare(self, grid_ms: int | None = None, per_job: bool = False) -> None:
        """The metric's views and the per-instant attribution, on a grid of ``grid_ms`` at least as fine; with
        ``per_job``, the per-job table (``job_metrics``) too."""

    def per_job(self) -> pl.DataFrame:
        """``job_summary.sql``'s rows (one a job) in job id order."""

    def per_job_components(self) -> pl.DataFrame:
        """``job_component_time.sql``'s rows (one a job and component with time), as materialized for the per-job
        and per-group results."""

    def run(self, name: str, params: dict | None = None) -> pl.DataFrame:
        """One query of ``ettcore/sql/`` (``metric/<name>``) on the prepared views, parameters bound."""

    def set_groups(self, by: str | None) -> None:
        """Point the ``job_groups`` view at one column (checked against the trace's columns) or the whole fleet."""

    def define(self, view: str, name: str, keep: bool = False) -> None:
        """Make ``view`` the result of one query of ``ettcore/sql/`` (``metric/<name>``) over the prepared views.
        ``keep``: the view is read several times and depends on no parameter (it reads the trace's views and kept
        views only): an engine that plans each read of a view again (Spark) computes it once and keeps its rows
        until the trace's views change."""

    def define_values(self, view: str, values: dict[str, float]) -> None:
        """Make ``view`` one row of the given numbers (DOUBLE columns named after the keys), bound, never pasted."""

    @property
    def phase_map(self) -> PhaseMap:
        """The trace's phases, components and owners (the defaults, or as a mapping file extends them)."""


@dataclass(frozen=True)
class DuckDBEngine:
    """The DuckDB engine: the trace's own connection (:class:`ettcore.trace.Trace`), prepared by :func:`prepare`."""

    trace: Trace

    def prepare(self, grid_ms: int | None = None, per_job: bool = False) -> None:
        prepare(self.trace, grid_ms=grid_ms)
        if per_job:
            job_metrics(self.trace)

    def per_job(self) -> pl.DataFrame:
        job_metrics(self.trace)
        # job_metrics was written in job_id order (job_summary.sql ends with ORDER BY), and DuckDB returns a table's
        # rows in the order they were inserted (preserve_insertion_order, on by default): no second sort of a
        # million ids
        return self.trace.sql("SELECT * FROM job_metrics")

    def per_job_components(self) -> pl.DataFrame:
        job_metrics(self.trace)
        return self.trace.sql("SELECT * FROM job_component_time")

    def run(self, name: str, params: dict | None = None) -> pl.DataFrame:
        return self.trace.sql(sql(name), params)

    def set_groups(self, by: str | None) -> None:
        _set_groups(self.trace, by)

    def define(self, view: str, name: str, keep: bool = False) -> None:
        # DuckDB plans a view's reads as one query and its views are cheap to read: kept or not, a view
        self.trace.con.execute(f"CREATE OR REPLACE TEMP VIEW {quote_ident(view)} AS {sql(name)}")

    def define_values(self, view: str, values: dict[str, float]) -> None:
        cols = ", ".join(f"CAST(${k} AS DOUBLE) AS {quote_ident(k)}" for k in values)
        self.trace.con.execute(f"CREATE OR REPLACE TEMP TABLE {quote_ident(view)} AS SELECT {cols}", values)

    @property
    def phase_map(self) -> PhaseMap:
        return self.trace.phase_map


def engine_of(trace: Any) -> Engine:
    """The engine that holds ``trace``'s views: DuckDB for a loaded :class:`Trace`, else the trace opened on another
    engine (:func:`ettcore.engines.open_trace` with ``engine="spark"``), which is its own engine."""
    if isinstance(trace, Trace):
        return DuckDBEngine(trace)
    methods = ("prepare", "per_job", "per_job_components", "run", "set_groups")
    if all(callable(getattr(trace, m, None)) for m in methods) and isinstance(
        getattr(trace, "phase_map", None), PhaseMap
    ):
        return trace
    raise TypeError(f"not a trace the metric can run on: {type(trace).__name__}")


# ----------------------------------------------------------------------------- the components, pivoted once


def components(trace: Any) -> tuple[str, ...]:
    """The trace's Level 2 components in report order: the six defaults, a mapping file's own, ``unattributed``."""
    return engine_of(trace).phase_map.all_components


def with_components(
    frame: pl.DataFrame,
    long: pl.DataFrame,
    key: str,
    value: str,
    suffix: str,
    before: str,
    names: tuple[str, ...],
) -> pl.DataFrame:
    """``frame`` with one column a component, ``<component><suffix>``, in ``names`` order, placed before column
    ``before``: ``long``'s ``value`` (one row a ``key`` and ``component``; no row means 0), pivoted.

    The one place the components become columns: per job (``job_summary``), per group (``fleet_summary``) and per
    bucket (``trend``)."""
    cols = [f"{c}{suffix}" for c in names]
    wide = long.filter(pl.col("component").is_in(names))
    if wide.height:
        wide = wide.pivot(on="component", index=key, values=value).rename(lambda c: c if c == key else f"{c}{suffix}")
    else:
        wide = frame.select(key).clear()
    wide = wide.with_columns([pl.lit(0.0, pl.Float64).alias(c) for c in cols if c not in wide.columns])
    out = frame.join(wide.select(key, *cols), on=key, how="left", maintain_order="left").with_columns(
        [pl.col(c).cast(pl.Float64).fill_null(0.0) for c in cols]
    )
    # by position: a label's name may read as a pattern to Polars (``*``, ``^...$``)
    names_now = out.columns
    order = [*frame.columns[: frame.columns.index(before)], *cols, *frame.columns[frame.columns.index(before) :]]
    return out.select(pl.nth([names_now.index(c) for c in order]))


def _rows_and_components(long: pl.DataFrame, key: str, suffix: str, before: str, names: tuple[str, ...]):
    """A query's long result (its own columns repeated on each component row) as one row a ``key`` with one column
    a component (:func:`with_components`)."""
    frame = long.drop("component", "gpu_h").unique(subset=[key], keep="first", maintain_order=True)
    return with_components(frame, long.select(key, "component", "gpu_h"), key, "gpu_h", suffix, before, names)


# ----------------------------------------------------------------------------- the metric, once for every engine


def job_summary(trace: Any) -> pl.DataFrame:
    """One row a job, in natural order of job ids (:mod:`ettcore.order`): L1 numbers, the seconds of each L2
    component, status, labels."""
    return job_components(trace, in_natural_order(engine_of(trace).per_job()))


def job_components(trace: Any, jobs: pl.DataFrame) -> pl.DataFrame:
    """``jobs`` (rows of the per-job table, ``Engine.per_job``: all of them or some, in any order) with the seconds
    of each L2 component as columns: the rows :func:`job_summary` gives for those jobs, pivoting only theirs (the
    Prometheus export's recent jobs of a million)."""
    e = engine_of(trace)
    long = e.per_job_components()
    if long.height > jobs.height:
        long = long.join(jobs.select("job_id"), on="job_id", how="semi")
    return with_components(jobs, long, "job_id", "seconds", "_s", "excluded_s", e.phase_map.all_components)


def job_causes(trace: Any) -> pl.DataFrame:
    """Long frame ``job_id, cause_id, cause, nof, lost_s``: each job's measured interruptions and lost (recovery)
    seconds by interruption cause (``job_cause_time.sql``), one row a job and cause with either, in natural job order
    and cause order."""
    e = engine_of(trace)
    e.prepare(per_job=True)
    return in_natural_order(e.run("metric/job_cause_time"), "job_id", "cause_id")


def cause_summary(trace: Any, by: str | None = None) -> pl.DataFrame:
    """NoF, lost seconds and lost GPU-hours by interruption cause for the fleet (or per group when ``by`` is given):
    one row a group and cause with either (``group_cause_time.sql``)."""
    e = engine_of(trace)
    e.prepare(per_job=True)
    e.set_groups(by)
    return name_groups(e.run("metric/group_cause_time"), by)


def vocabulary_of(trace: Any) -> Vocabulary:
    """The vocabulary ``trace`` is read with (a user's causes file adds to the package's), on either engine."""
    found = getattr(trace, "vocabulary", None) or getattr(getattr(trace, "trace", None), "vocabulary", None)
    return found if isinstance(found, Vocabulary) else VOCABULARY


def every_cause(long: pl.DataFrame, vocabulary: Vocabulary = VOCABULARY) -> pl.DataFrame:
    """Every cause of ``vocabulary``, in report order, with the NoF, lost seconds and lost GPU-hours of ``long``
    (:func:`cause_summary`'s rows of one fleet or group; zero for a cause without interruptions): ``cause, group,
    category, nof, lost_s, lost_gpu_h`` (``category``: a user's causes file's display category, else the group's
    label)."""
    got = long.select("cause", "nof", "lost_s", "lost_gpu_h")
    every = pl.DataFrame(
        {
            "cause": list(vocabulary.cause_names),
            "group": [c.group for c in vocabulary.causes],
            "category": [vocabulary.category_of[c] for c in vocabulary.cause_names],
        }
    )
    return every.join(got, on="cause", how="left", maintain_order="left").with_columns(
        pl.col("nof").fill_null(0).cast(pl.Int64),
        pl.col("lost_s").fill_null(0.0).cast(pl.Float64),
        pl.col("lost_gpu_h").fill_null(0.0).cast(pl.Float64),
    )


def by_category(causes: pl.DataFrame) -> pl.DataFrame:
    """:func:`every_cause`'s rows summed by display category, in the order the categories first appear:
    ``category, nof, lost_s, lost_gpu_h``."""
    return causes.group_by("category", maintain_order=True).agg(
        pl.col("nof").sum(), pl.col("lost_s").sum(), pl.col("lost_gpu_h").sum()
    )


def cause_table(trace: Any) -> pl.DataFrame:
    """The fleet's :func:`cause_summary` over every cause of the trace's vocabulary (:func:`every_cause`)."""
    return every_cause(cause_summary(trace), vocabulary_of(trace))


def l2_matrix(trace: Any) -> pl.DataFrame:
    """Long frame ``job_id, bucket, phase, component, owner, seconds``; sums to each job's wall."""
    e = engine_of(trace)
    e.prepare()
    return e.run("metric/job_l2_matrix")


def phase_busy(trace: Any) -> pl.DataFrame:
    """Busy seconds per job and phase (overlapping spans counted twice)."""
    e = engine_of(trace)
    e.prepare()
    return e.run("metric/phase_busy")


def fleet_summary(trace: Any, by: str | None = None) -> pl.DataFrame:
    """One row for the fleet, or one row a group when ``by`` names a column of ``jobs``."""
    e = engine_of(trace)
    e.prepare(per_job=True)
    e.set_groups(by)
    groups = with_components(
        e.run("metric/group_summary"),
        e.run("metric/group_component_time"),
        "group_key",
        "gpu_h",
        "_gpu_h",
        "excluded_gpu_h",
        e.phase_map.all_components,
    )
    return name_groups(groups, by)


def owner_gpu_hours(trace: Any, by: str | None = None) -> pl.DataFrame:
    """GPU-hours lost per component and owner (per group when ``by`` is given)."""
    e = engine_of(trace)
    e.prepare()
    e.set_groups(by)
    return name_groups(e.run("metric/owner_gpu_hours"), by)


def exclusion_summary(trace: Any) -> pl.DataFrame:
    """One row an exclusion window (file order): its filter, and the jobs, wall and productive GPU-hours and
    interruptions it took out of the measurement (inside the analysis window; overlapping exclusions count in each)."""
    e = engine_of(trace)
    e.prepare()
    return e.run("metric/exclusion_summary")


def with_bucket_figures(buckets: pl.DataFrame, per_bucket: pl.DataFrame, zeros: dict[str, Any]) -> pl.DataFrame:
    """:func:`trend`'s ``buckets`` with the columns of ``per_bucket`` (a query's rows keyed by ``bucket_start``, on
    either engine), each column of ``zeros`` filled with its value where a bucket has no row."""
    per_bucket = per_bucket.with_columns(pl.col("bucket_start").cast(buckets.schema["bucket_start"]))
    out = buckets.join(per_bucket, on="bucket_start", how="left", maintain_order="left")
    return out.with_columns(pl.col(c).fill_null(v) for c, v in zeros.items())


def rolling_events(e: Any, events: str, every: str, window_ms: int, count: str, gpu_h: str) -> pl.DataFrame:
    """Events counted whole where they start, per rolling bucket (``rolling_starts.sql``) on engine ``e``: the view
    ``event_starts`` made from the query ``metric/<events>`` (``start_ms, gpu_s`` a row: a trend's slow spans, its
    crash-loop restarts), then one row a bucket whose trailing window holds a start: ``bucket_start``, ``<count>`` (the
    events) and ``<gpu_h>`` (their GPU-hours)."""
    e.define("event_starts", f"metric/{events}")
    got = e.run("metric/rolling_starts", {"every_ms": bucket_ms(every), "window_ms": window_ms})
    return got.rename({"events": count, "gpu_h": gpu_h})


def trend(trace: Any, every: str = "day", window: str | timedelta | None = None) -> pl.DataFrame:
    """GPU-time-weighted ETT% and component GPU-hours per UTC bucket, prorated per instant.

    Calendar buckets (``every`` day, week or month): ``fleet_trend``, one row a bucket with measured time or an
    interruption.  ``every="hour"`` or a fixed duration that divides a day (``"5m"``, ``"15m"``), or a trailing
    ``window`` (``"24h"``, ``"7d"``, a timedelta) with such buckets or days: ``fleet_rolling``, one row a bucket from
    the first to the last, each over the window ending with it (columns ``bucket_start``, ``window_start``,
    ``window_end``, then the same figures).
    """
    e = engine_of(trace)
    window_ms = trend_window(every, window)
    names = e.phase_map.all_components
    if window_ms is None:
        e.prepare()
        long = e.run("metric/fleet_trend", {"every": every})
    else:
        step = bucket_ms(every)
        e.prepare(grid_ms=step)
        long = e.run("metric/fleet_rolling", {"every_ms": step, "window_ms": window_ms})
    return _rows_and_components(long, "bucket_start", "_gpu_h", "nof", names)
