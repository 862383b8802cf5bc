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
from ettcore.store import db
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


def _aligned(w: Window, grid: int) -> bool:
    """Every window and exclusion bound on the stored grid: the stored cells lie wholly inside or outside."""
    bounds = [w.since_ms, w.until_ms, *[b for x in w.exclusions for b in (x.start_ms, x.end_ms)]]
    return all(b is None or b % grid == 0 for b in bounds)


def register_phases(con: duckdb.DuckDBPyConnection, rows: list) -> None:
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_phases (phase_id BIGINT, phase VARCHAR, component VARCHAR, owner VARCHAR)"
    )
    con.executemany("INSERT INTO ett_phases VALUES (?, ?, ?, ?)", [tuple(r) for r in rows])
    con.execute("ALTER TABLE ett_phases ADD COLUMN is_train BOOLEAN")
    con.execute("UPDATE ett_phases SET is_train = phase = 'train'")
    load_mod.register_causes(con)


def labels(con: duckdb.DuckDBPyConnection, relation: str) -> list[str]:
    skip = {"_file", "_row", "job_id", "model", "gpus", "gpus_raw", "source", "ingest_id", "job_key"}
    return [c for c in db.columns(con, relation) if c.lower() not in skip]


def open_store(path: str | Path, options: TraceOptions | None = None, **given: Any) -> StoreTrace:
    """A store as a trace every function of :mod:`ettcore.metric` takes (read-only); ``options``
    (:class:`~ettcore.trace.options.TraceOptions`, or its fields as keyword arguments on top) as for a trace.

    The default analysis time is the store's latest snapshot's.  The stored results answer the default phase
    mapping, the store's as-of and windows whose bounds lie on the stored (hourly) grid; another ``mapping``, another
    ``as_of`` or an unaligned window attributes again from the stored rows with the same SQL (``recomputed`` says so).
    A store holds only rows checked when they were ingested, so ``skip_invalid`` is refused (``ett ingest
    --skip-invalid`` leaves out a source's bad jobs, and the store records them).
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
    sources = [r[0] for r in con.execute("SELECT DISTINCT source FROM st.ett_jobs ORDER BY 1").fetchall()]
    qualified = len(sources) > 1
    why = []
    if [list(r) for r in phase_map.rows()] != stored_phases:
        why.append("--mapping differs from the store's")
    if as_of_ms is not None and as_of_ms != store_as_of:
        why.append("--as-of differs from the store's analysis time")
    if not _aligned(window, grid):
        why.append(
            f"--since/--until/--exclude bounds off the store's grid (every {'hour' if grid == HOUR_MS else 'UTC day'})"
        )
    register_phases(con, phase_map.rows() if why else stored_phases)
    row_views(con, qualified=qualified, restrict=None)
    explicit = as_of_ms is not None
    a = as_of_ms if explicit else store_as_of
    set_params(con, a, explicit=explicit and as_of_ms != store_as_of)
    register_window(con, window)
    counts = {t: con.execute(f"SELECT count(*) FROM st.rows_{t}").fetchall()[0][0] for t in db.ROW_TABLES}
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
    )
    if explicit and as_of_ms != store_as_of:
        trace.not_started = _not_started(con)
    if why:
        trace.recomputed = "; ".join(why)
        if qualified:  # clean_jobs carries each job's source (row_views), as the stored results do
            trace.labels = [*trace.labels, "source"]
        return trace  # the metric attributes from the stored rows on first need
    _stored_results(trace, qualified, window)
    return trace


def _not_started(con: duckdb.DuckDBPyConnection) -> dict:
    out = {
        t: con.execute(f"SELECT count(*) FROM clean_{t} AS r, ett_params AS p WHERE r.start_ms >= p.cut_ms").fetchall()[
            0
        ][0]
        for t in ("attempts", "spans")
    }
    out["jobs"] = con.execute(
        "SELECT count(*) FROM (SELECT job_id FROM clean_attempts GROUP BY job_id "
        "HAVING min(start_ms) >= (SELECT cut_ms FROM ett_params))"
    ).fetchall()[0][0]
    return out


def _open_spans(con: duckdb.DuckDBPyConnection, qualified: bool) -> str:
    """SQL of metric_spans.sql over the stored spans of the jobs with an open attempt (those running at the store's
    analysis time), read only from the row groups of the ingests that stored those jobs (a running job is replaced
    by every refresh that sees it, so its rows are among the latest)."""
    jid = "s.source || '/' || s.job_id" if qualified else "s.job_id"
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW ett_open_keyed AS SELECT hash({jid}) AS job_key, s.attempt, p.phase_id, "
        "p.is_train, s.start_ms, s.end_ms, s.cursor_start, s.cursor_end FROM st.rows_spans AS s "
        "JOIN ett_phases AS p ON p.phase = s.phase "
        "SEMI JOIN st.ett_jobs AS k ON k.source = s.source AND k.job_id = s.job_id AND k.open "
        "WHERE s.ingest_id IN (SELECT ingest_id FROM st.ett_jobs WHERE open)"
    )
    # the metric's own query, read from those rows instead of every job's (keyed_spans)
    return sql("metric/metric_spans").replace("keyed_spans", "ett_open_keyed")


def _stored_results(trace: StoreTrace, qualified: bool, window: Window) -> None:
    """The metric's tables as views of the stored per-job results (the ``prepare`` steps that follow the
    attribution, in the same order); for the whole of time, the fleet's slots are the stored sums and the per-job
    results, causes, paces and stalls the stored ones."""
    con = trace.con
    grid = int(trace.store_meta["grid_ms"])
    if qualified:
        con.execute(
            "CREATE TEMP TABLE ett_rekey AS SELECT source, job_key, hash(source || '/' || job_id) AS read_key "
            "FROM st.ett_jobs"
        )

    def keyed(target: str) -> str:
        if not qualified:
            return f"SELECT * EXCLUDE (source, ingest_id) FROM st.{target}"
        if target in db.KEYED_BY_ID:
            return (
                "SELECT r.source || '/' || r.job_id AS job_id, * EXCLUDE (source, ingest_id, job_id) "
                f"FROM st.{target} AS r"
            )
        return (
            f"SELECT k.read_key AS job_key, * EXCLUDE (source, ingest_id, job_key, read_key) "
            f"FROM st.{target} AS r JOIN ett_rekey AS k USING (source, job_key)"
        )

    con.execute("CREATE OR REPLACE TEMP TABLE ett_grid AS SELECT $g::BIGINT AS grid_ms", {"g": grid})
    # views, not tables: a command reads only what it needs (a trend reads the stored slots alone)
    if qualified:
        con.execute(
            "CREATE TEMP VIEW metric_jobs AS SELECT hash(r.source || '/' || r.job_id) AS job_key, "
            "r.source || '/' || r.job_id AS job_id, * EXCLUDE (source, ingest_id, job_key, job_id), "
            "r.source AS source FROM st.res_metric_jobs AS r"
        )
        trace.labels = [*trace.labels, "source"]
    else:
        con.execute("CREATE TEMP VIEW metric_jobs AS SELECT * EXCLUDE (source, ingest_id) FROM st.res_metric_jobs")
    con.execute(f"CREATE TEMP VIEW metric_attempts AS {keyed('res_metric_attempts')}")
    con.execute(f"CREATE TEMP VIEW attributed_time AS {keyed('res_attributed')}")
    window_mod.check_labels(window, metric.group_columns(trace))
    window_mod.match_jobs(con, window, quote_ident)
    con.execute(f"CREATE OR REPLACE TEMP TABLE unmeasured_time AS {sql('metric/unmeasured_time')}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW analysis_cuts AS {sql('metric/analysis_cuts')}")
    span_store.register_keyed(con, excluded=False)
    trace.spans_keyed = True
    con.execute(f"CREATE OR REPLACE TEMP VIEW metric_spans AS {sql('metric/metric_spans')}")
    # the attribution's segments over the stored rows, as a view: only a timeline reads them (the current spells of
    # the Prometheus export, the gantt), for the jobs it names; the figures come from the stored attributed_time
    con.execute(f"CREATE OR REPLACE TEMP VIEW attributed_segments AS {sql('metric/attributed_segments')}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW measured_time AS {sql('metric/measured_time')}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW measured_interruptions AS {sql('metric/measured_interruptions')}")
    trace.attribution = Attribution(batches=1, grid_ms=grid)
    trace.stored_views = {"job_pace": keyed("res_job_pace"), "live_spans": _open_spans(con, qualified)}
    if not window.whole:  # a window's figures: the metric's queries over the stored cells (job_summary.sql, ...)
        for view in ("fleet_slots", "interruption_slots"):
            con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS {sql('metric/' + view)}")
        return
    for view, target in (("fleet_slots", "res_fleet_slots"), ("interruption_slots", "res_interruption_slots")):
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM st.{target}")
    # materialized on first need (ettcore.metric.job_metrics), in job id order as job_summary.sql writes it
    if qualified:
        per_job = (
            "SELECT r.source || '/' || r.job_id AS job_id, * EXCLUDE (source, ingest_id, job_id), r.source AS source "
            "FROM st.res_job_metrics AS r ORDER BY 1"
        )
    else:
        per_job = "SELECT * EXCLUDE (source, ingest_id) FROM st.res_job_metrics ORDER BY job_id"
    trace.stored_views.update(
        {
            "job_metrics": per_job,
            "job_component_time": keyed("res_job_components"),
            "job_cause_time": keyed("res_job_causes"),
            # in train_stalls.sql's order (a stored table keeps its rows in the order they were written)
            "train_stalls": f'SELECT * FROM ({keyed("res_train_stalls")}) ORDER BY job_id, "start"',
        }
    )


def skipped_problems(trace: StoreTrace) -> list[Problem]:
    """The problems of the jobs the store's ingests left out (``ett ingest --skip-invalid``) and does not hold now:
    each names the source's file, row and field, as ``ett validate`` of that source did (``ett validate STORE``)."""
    rows = trace.con.execute(
        "SELECT DISTINCT k.file, k.row, k.field, k.message, k.job_id FROM st.ett_skipped AS k "
        "ANTI JOIN st.ett_jobs AS j ON j.source = k.source AND j.job_id = k.job_id ORDER BY ALL"
    ).fetchall()
    return [Problem(f, r, fld, m, job_id=j) for f, r, fld, m, j in rows]
