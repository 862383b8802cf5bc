"""Reading a store: the measuring commands open it as a trace whose metric tables are the stored results."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ettcore import metric
from ettcore.errors import InputError, Problem
from ettcore.phases import load_phase_map
from ettcore.store import db, statements
from ettcore.store.results import row_views, set_params
from ettcore.trace import load as load_mod
from ettcore.trace import span_store
from ettcore.trace import window as window_mod
from ettcore.trace.instants import HOUR_MS
from ettcore.trace.load import Attribution, Trace, parse_as_of, quote_ident
from ettcore.trace.options import TraceOptions
from ettcore.trace.queries import sql
from ettcore.trace.window import Window, make_window
from ettcore.trace.window import register as register_window
from ettcore.vocabulary import VOCABULARY, Vocabulary, kept_vocabulary


def is_store(path: Any) -> bool:
    """True when ``path`` is a DuckDB file holding a store's metadata table (a DuckDB trace file is not)."""
    p = Path(str(path))
    if not p.is_file():
        return False
    try:
        with p.open("rb") as f:
            head = f.read(16)
    except OSError:
        return False
    if head[8:12] != b"DUCK":
        return False
    con = duckdb.connect()
    try:
        db.attach(con, p, read_only=True, wait=False)
        return db.has_table(con, "ett_store")
    except InputError:
        return True  # a held or damaged DuckDB file: open_store waits for it (bounded) or says what is wrong
    finally:
        con.close()


@dataclass(kw_only=True)
class StoreTrace(Trace):
    """A store opened as a trace: the metric's tables are the stored results (or attributed again, when a flag
    needs it: ``recomputed`` says why)."""

    store_meta: dict = field(default_factory=dict)
    recomputed: str | None = None
    sources_n: int = 1
    # each source's horizon (epoch ms), where the figures measure each source's running jobs to its own: a store of
    # several sources read without --as-of; empty where one analysis time (``as_of_ms``) holds for every job
    horizons: dict[str, int] = field(default_factory=dict)


def _aligned(w: Window, grid: int) -> bool:
    """Every window and exclusion bound on the stored grid: the stored cells lie wholly inside or outside."""
    bounds = [w.since_ms, w.until_ms, *[b for x in w.exclusions for b in (x.start_ms, x.end_ms)]]
    return all(b is None or b % grid == 0 for b in bounds)


def register_phases(con: duckdb.DuckDBPyConnection, rows: list, vocabulary: Vocabulary = VOCABULARY) -> None:
    """``ett_phases`` from a phase map's rows (``PhaseMap.rows()``: id, phase, component, owner), and ``ett_causes``
    from ``vocabulary`` (the store's: :func:`ettcore.store.db.vocabulary_of`)."""
    ids, phases, components, owners = (list(c) for c in zip(*rows))
    statements.run(con, "phases", {"phase_ids": ids, "phases": phases, "components": components, "owners": owners})
    load_mod.register_causes(con, vocabulary)


def labels(con: duckdb.DuckDBPyConnection, relation: str) -> list[str]:
    skip = {"_file", "_row", "job_id", "model", "gpus", "gpus_raw", "source", "ingest_id", "job_key"}
    return [c for c in db.columns(con, relation) if c.lower() not in skip]


def open_store(path: str | Path, options: TraceOptions | None = None, **given: Any) -> StoreTrace:
    """A store as a trace every function of :mod:`ettcore.metric` takes (read-only); ``options``
    (:class:`~ettcore.trace.options.TraceOptions`, or its fields as keyword arguments on top) as for a trace.

    The default analysis time is the store's latest snapshot's; the stored results measure each source's running jobs
    to that source's own horizon (``horizons``, with several sources).  The stored results answer the default phase
    mapping, the store's as-of and windows whose bounds lie on the stored (hourly) grid; another ``mapping``, another
    ``as_of`` or an unaligned window attributes again from the stored rows with the same SQL (``recomputed`` says so).
    A store holds only rows checked when they were ingested, so ``skip_invalid`` is refused (``ett ingest
    --skip-invalid`` leaves out a source's bad jobs, and the store records them).  The store's causes are those of
    its first ingest's causes file (:func:`ettcore.vocabulary.kept_vocabulary`); another ``causes_file`` that has
    them all attributes again.
    """
    opts = TraceOptions.of(options, **given)
    if opts.skip_invalid:
        why = "a fleet store holds only rows checked when they were ingested: give --skip-invalid to `ett ingest`"
        raise InputError(Problem("--skip-invalid", None, "skip_invalid", why))
    path = Path(path)
    if not path.is_file():
        raise InputError(Problem(str(path), None, None, "store file does not exist"))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    load_mod.apply_limits(con, opts.memory_limit, opts.temp_directory)
    db.attach(con, path, read_only=True)
    meta = db.meta(con, path)
    phase_map = load_phase_map(opts.mapping)
    stored_phases = json.loads(meta["phases"])
    store_as_of = int(meta["as_of_ms"]) if meta.get("as_of_ms") else None
    as_of_ms = parse_as_of(opts.as_of)
    window = make_window(opts.since, opts.until, opts.exclude)
    grid = int(meta["grid_ms"])
    if not db.has_table(con, "res_job_metrics"):
        raise InputError(Problem(str(path), None, None, "the store holds no jobs yet (ett ingest STORE SOURCE)"))
    sources = [r[0] for r in statements.rows(con, "sources_of", relation="st.ett_jobs")]
    qualified = len(sources) > 1
    horizons = db.horizons(con)  # each source's, to which the stored results measure its running jobs
    vocabulary, other_causes = kept_vocabulary(db.kept_causes(meta), f"{path} (its causes)", opts.causes_file)
    why = [other_causes] if other_causes else []
    if [list(r) for r in phase_map.rows()] != stored_phases:
        why.append("--mapping differs from the store's")
    if as_of_ms is not None and as_of_ms != store_as_of:
        why.append("--as-of differs from the store's analysis time")
    elif as_of_ms is not None and set(horizons.values()) != {as_of_ms}:
        why.append("--as-of differs from a source's horizon")
    if not _aligned(window, grid):
        why.append(
            f"--since/--until/--exclude bounds off the store's grid (every {'hour' if grid == HOUR_MS else 'UTC day'})"
        )
    register_phases(con, phase_map.rows() if why else stored_phases, vocabulary)
    explicit = as_of_ms is not None
    # several sources without --as-of: each source's running jobs to its own horizon, stored or attributed again
    row_views(con, qualified=qualified, restrict=None, horizons=qualified and not explicit)
    a = as_of_ms if explicit else store_as_of
    set_params(con, a, explicit=explicit and as_of_ms != store_as_of)
    register_window(con, window)
    held = db.row_tables(con)  # (a table a store made before it kept it lacks has no rows)
    counts = {t: statements.value(con, "row_count", relation=f"st.rows_{t}") if t in held else 0 for t in db.ROW_TABLES}
    trace = StoreTrace(
        path=path,
        con=con,
        phase_map=phase_map,
        as_of_ms=a,
        labels=labels(con, "clean_jobs"),
        accounting={t: {"read": n, "used": n, "rejected": 0, "rejected_by_reason": {}} for t, n in counts.items()},
        not_started={"attempts": 0, "spans": 0, "jobs": 0},
        window=window,
        metadata={"synthetic": meta.get("synthetic") == "true", "description": meta.get("description", "")},
        latest_ms=store_as_of,
        spans=span_store.SpanStore(con, 1),
        store_meta=meta,
        sources_n=len(sources),
        horizons=horizons if qualified and not explicit else {},
        vocabulary=vocabulary,
    )
    if explicit and as_of_ms != store_as_of:
        trace.not_started = dict(zip(("attempts", "spans", "jobs"), statements.rows(con, "not_started")[0]))
    if why:
        trace.recomputed = "; ".join(why)
        if qualified:  # clean_jobs carries each job's source (row_views), as the stored results do
            trace.labels = [*trace.labels, "source"]
        return trace  # the metric attributes from the stored rows on first need
    _stored_results(trace, qualified, window)
    return trace


def _open_spans(con: duckdb.DuckDBPyConnection) -> str:
    """SQL of metric_spans.sql over the stored spans of the jobs with an open attempt (those running at the store's
    analysis time: ``open_job_spans.sql``)."""
    statements.run(con, "open_job_spans")
    # the metric's own query, read from those rows instead of every job's (keyed_spans)
    return sql("metric/metric_spans").replace("keyed_spans", "ett_open_keyed")


def _stored_results(trace: StoreTrace, qualified: bool, window: Window) -> None:
    """The metric's tables as views of the stored per-job results (the ``prepare`` steps that follow the
    attribution, in the same order); for the whole of time, the fleet's slots are the stored sums and the per-job
    results, causes, paces and stalls the stored ones."""
    con = trace.con
    grid = int(trace.store_meta["grid_ms"])
    if qualified:
        statements.run(con, "rekeyed_jobs")

    def keyed(result: str) -> str:
        """The metric's table of the stored rows of ``result``, as read on this store."""
        if result in db.KEYED_BY_ID:
            return statements.text("stored_results_by_id", result=result)
        return statements.text("stored_results_rekeyed" if qualified else "stored_results", result=result)

    statements.run(con, "grid", {"grid_ms": grid})
    # views, not tables: a command reads only what it needs (a trend reads the stored slots alone)
    statements.run(con, "stored_metric_jobs_with_sources" if qualified else "stored_metric_jobs")
    if qualified:
        trace.labels = [*trace.labels, "source"]
    statements.create_as(con, "VIEW", "metric_attempts", keyed("res_metric_attempts"))
    statements.create_as(con, "VIEW", "attributed_time", keyed("res_attributed"))
    window_mod.check_labels(window, metric.group_columns(trace))
    window_mod.match_jobs(con, window, quote_ident)
    statements.create_as(con, "TABLE", "unmeasured_time", sql("metric/unmeasured_time"))
    statements.create_as(con, "VIEW", "analysis_cuts", sql("metric/analysis_cuts"))
    span_store.register_keyed(con, excluded=False)
    trace.spans_keyed = True
    # the attribution's segments over the stored rows, as a view: only a timeline reads them (the current spells of
    # the Prometheus export, the gantt), for the jobs it names; the figures come from the stored attributed_time
    for view in ("metric_spans", "attributed_segments", "measured_time", "measured_interruptions"):
        statements.create_as(con, "VIEW", view, sql("metric/" + view))
    trace.attribution = Attribution(batches=1, grid_ms=grid)
    trace.stored_views = {"job_pace": keyed("res_job_pace"), "live_spans": _open_spans(con)}
    if not window.whole:  # a window's figures: the metric's queries over the stored cells (job_summary.sql, ...)
        for view in ("fleet_slots", "interruption_slots"):
            statements.create_as(con, "VIEW", view, sql("metric/" + view))
        return
    for view, result in (("fleet_slots", "res_fleet_slots"), ("interruption_slots", "res_interruption_slots")):
        statements.create_as(con, "VIEW", view, statements.text("stored_sums", target=result))
    # materialized on first need (ettcore.metric.job_metrics), in job id order as job_summary.sql writes it
    trace.stored_views.update(
        {
            "job_metrics": statements.text("stored_job_metrics_with_sources" if qualified else "stored_job_metrics"),
            "job_component_time": keyed("res_job_components"),
            "job_cause_time": keyed("res_job_causes"),
            "train_stalls": statements.text("stored_train_stalls"),
        }
    )


def skipped_problems(trace: StoreTrace) -> list[Problem]:
    """The problems of the jobs the store's ingests left out (``ett ingest --skip-invalid``) and does not hold now:
    each names the source's file, row and field, as ``ett validate`` of that source did (``ett validate STORE``)."""
    rows = statements.rows(trace.con, "skipped_problems")
    return [Problem(f, r, fld, m, job_id=j) for f, r, fld, m, j in rows]
