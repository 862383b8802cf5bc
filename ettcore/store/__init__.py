"""The fleet store: one DuckDB database file that keeps a fleet's checked rows and each job's results.

``ett ingest STORE SOURCE`` reads a source through the loader (:func:`ettcore.trace.load_trace`, or an importer first),
compares each job's rows with the stored ones, replaces the jobs that are new or changed as a whole, and attributes
again only those (and running jobs, when the store's analysis time moved) with the metric's own SQL
(:func:`ettcore.metric.prepare` on a trace whose ``clean_*`` views are the store's rows of those jobs): there is no
second attribution kernel.  The measuring commands open a store (:func:`open_store`) as a trace whose
``attributed_time``, ``job_metrics`` and ``job_component_time`` are the stored per-job results, so fleet figures,
trends and the Prometheus export are queries over them.  A refresh is one DuckDB transaction.  See ``docs/store.md``.

Tables of a store (``st.`` while attached): ``ett_store`` (key, value: format, version, grid, phase map, as-of),
``ett_ingests``, ``ett_notes``, ``ett_skipped``; the rows ``rows_jobs``, ``rows_attempts``, ``rows_spans`` (the loader's
typed rows as they are, any columns, with ``source`` and ``ingest_id``; ``_file``/``_row`` say where each came from);
the results ``res_metric_jobs``, ``res_metric_attempts``, ``res_attributed``, ``res_job_metrics``,
``res_job_components`` (the metric's tables of the same names without ``res_``, with ``source``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from ettcore import metric
from ettcore.errors import InputError, Problem
from ettcore.phases import PhaseMap, load_phase_map
from ettcore.trace import load as load_mod
from ettcore.trace import memory, span_store
from ettcore.trace import window as window_mod
from ettcore.trace.instants import HOUR_MS
from ettcore.trace.load import Attribution, Trace, load_trace, parse_as_of, quote_ident
from ettcore.trace.queries import sql
from ettcore.trace.window import Window, make_window
from ettcore.trace.window import register as register_window

FORMAT = "ett-store"
VERSION = 1
DEFAULT_SOURCE = "default"
GRID_MS = HOUR_MS  # the stored attribution's grid: hourly trends read it, and every day, week or month is a union
ROW_TABLES = ("jobs", "attempts", "spans")
RESULT_TABLES = {  # the store's result table -> the metric's table it keeps (per job, with the source)
    "res_metric_jobs": "metric_jobs",
    "res_metric_attempts": "metric_attempts",
    "res_attributed": "attributed_time",
    "res_job_metrics": "job_metrics",
    "res_job_components": "job_component_time",
}
KEYED_BY_ID = {"res_job_metrics", "res_job_components"}  # keyed by job_id (the others by job_key)
WAIT_S_DEFAULT = 60.0
_NULL_TYPES = ("NULL", '"NULL"')  # DuckDB's type of a column that is only NULL literals


def wait_seconds() -> float:
    """How long a command waits for a store another process holds (``ETT_STORE_WAIT``, seconds; default 60)."""
    try:
        return float(os.environ.get("ETT_STORE_WAIT", WAIT_S_DEFAULT))
    except ValueError:
        return WAIT_S_DEFAULT


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
        _attach(con, p, read_only=True)
        n = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'st' AND table_name = 'ett_store'"
        ).fetchall()[0][0]
        return bool(n)
    except InputError:
        return True  # a locked or damaged store-looking file: let open_store say what is wrong
    finally:
        con.close()


def _attach(con: duckdb.DuckDBPyConnection, path: Path, read_only: bool) -> None:
    """ATTACH the store as ``st``; while another process holds it, wait (bounded, saying so once), then refuse."""
    deadline = time.monotonic() + wait_seconds()
    said = False
    mode = " (READ_ONLY)" if read_only else ""
    lit = "'" + str(path).replace("'", "''") + "'"  # ATTACH takes no bound parameter; the path is quoted
    while True:
        try:
            con.execute(f"ATTACH {lit} AS st{mode}")
            return
        except duckdb.IOException as exc:
            text = str(exc)
            if "lock" not in text.lower():
                raise InputError(
                    Problem(str(path), None, None, f"not a readable store: {text.splitlines()[0]}")
                ) from None
            if time.monotonic() >= deadline:
                raise InputError(
                    Problem(
                        str(path),
                        None,
                        None,
                        f"the store is held by another process (a refresh or a reader) for more than "
                        f"{wait_seconds():g} s; try again later (ETT_STORE_WAIT sets the wait)",
                    )
                ) from None
            if not said:
                print(
                    f"ett: {path} is held by another process (a refresh or a reader); waiting up to "
                    f"{wait_seconds():g} s",
                    file=sys.stderr,
                )
                said = True
            time.sleep(0.2)
        except duckdb.Error as exc:
            raise InputError(
                Problem(str(path), None, None, f"damaged or not a store: {str(exc).splitlines()[0]}")
            ) from None


def _meta(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, str]:
    """The store's metadata; a store of another format version is refused."""
    try:
        rows = con.execute("SELECT key, value FROM st.ett_store").fetchall()
    except duckdb.Error as exc:
        raise InputError(
            Problem(str(path), None, None, f"damaged or not a store: {str(exc).splitlines()[0]}")
        ) from None
    meta = dict(rows)
    if meta.get("format") != FORMAT:
        raise InputError(Problem(str(path), None, "format", f"not an ett store (format {meta.get('format')!r})"))
    if meta.get("version") != str(VERSION):
        raise InputError(
            Problem(
                str(path),
                None,
                "version",
                f"store format version {meta.get('version')!r}; this ett reads version {VERSION} only "
                "(ingest the sources into a new store)",
            )
        )
    return meta


def _create(con: duckdb.DuckDBPyConnection, phase_map: PhaseMap) -> None:
    con.execute("CREATE TABLE st.ett_store (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.executemany(
        "INSERT INTO st.ett_store VALUES (?, ?)",
        [
            ("format", FORMAT),
            ("version", str(VERSION)),
            ("grid_ms", str(GRID_MS)),
            ("phases", json.dumps(phase_map.rows())),
            ("as_of_ms", ""),
            ("synthetic", "false"),
            ("description", ""),
        ],
    )
    con.execute(
        "CREATE TABLE st.ett_ingests (ingest_id BIGINT, source VARCHAR, ingested_at TIMESTAMP, snapshot_ms BIGINT, "
        "explicit_as_of BOOLEAN, as_of_ms BIGINT, inputs VARCHAR, jobs_read BIGINT, new BIGINT, changed BIGINT, "
        "unchanged BIGINT, running_remeasured BIGINT, skipped_jobs BIGINT, seconds DOUBLE)"
    )
    con.execute("CREATE TABLE st.ett_notes (ingest_id BIGINT, source VARCHAR, job_id VARCHAR, note VARCHAR)")
    con.execute(
        "CREATE TABLE st.ett_skipped (ingest_id BIGINT, source VARCHAR, job_id VARCHAR, file VARCHAR, "
        "row BIGINT, field VARCHAR, message VARCHAR)"
    )


def _columns(con: duckdb.DuckDBPyConnection, relation: str) -> dict[str, str]:
    return {r[0]: r[1] for r in con.execute(f"DESCRIBE {relation}").fetchall()}


def _merge_schema(con: duckdb.DuckDBPyConnection, target: str, source_relation: str) -> None:
    """Create ``st.<target>`` like ``source_relation`` (with ``source`` and ``ingest_id``), or add the columns it
    lacks: the store keeps whatever typed columns the loader produces."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'st' AND table_name = $t", {"t": target}
    ).fetchall()[0][0]
    if not exists:
        con.execute(
            f"CREATE TABLE st.{target} AS SELECT ''::VARCHAR AS source, 0::BIGINT AS ingest_id, * "
            f"FROM {source_relation} LIMIT 0"
        )
        return
    have = {c.lower(): (c, t) for c, t in _columns(con, f"st.{target}").items()}
    for col, dtype in _columns(con, source_relation).items():
        if col.lower() not in have:
            con.execute(f"ALTER TABLE st.{target} ADD COLUMN {quote_ident(col)} {dtype}")
        elif have[col.lower()][1] in _NULL_TYPES and dtype not in _NULL_TYPES:
            # a column no row had a value for (e.g. gpus of a trace without a jobs table) takes the first real type
            con.execute(f"ALTER TABLE st.{target} ALTER COLUMN {quote_ident(have[col.lower()][0])} TYPE {dtype}")


def _row_hash(cols: list[str], present: set[str]) -> str:
    """SQL of one row's content hash over ``cols`` (a column the relation lacks counts as NULL)."""
    parts = [f"{quote_ident(c)} := {quote_ident(c) if c in present else 'NULL'}" for c in cols]
    return f"hash(struct_pack({', '.join(parts)}))" if parts else "0"


@dataclass
class Refresh:
    """What one refresh did (what ``ett ingest`` prints)."""

    store: Path
    source: str
    ingest_id: int
    jobs_read: int
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    running: int = 0  # running jobs measured again to the store's new analysis time
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    as_of_ms: int | None = None
    seconds: float = 0.0


def _compare(con: duckdb.DuckDBPyConnection, source: str) -> tuple[list[str], dict[str, list[str]]]:
    """(new job ids, changed job id -> changed fields) of the incoming clean rows against the store's rows."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_in_jobs AS SELECT DISTINCT job_id FROM ("
        "SELECT job_id FROM clean_jobs UNION ALL SELECT job_id FROM clean_attempts UNION ALL "
        "SELECT job_id FROM clean_spans)"
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_known AS SELECT DISTINCT r.job_id FROM ("
        "SELECT job_id FROM st.rows_jobs WHERE source = $s UNION ALL SELECT job_id FROM st.rows_attempts "
        "WHERE source = $s) AS r SEMI JOIN ett_in_jobs AS i ON i.job_id = r.job_id",
        {"s": source},
    )
    new = [r[0] for r in con.execute("SELECT job_id FROM ett_in_jobs ANTI JOIN ett_known USING (job_id)").fetchall()]
    diff: dict[str, set[str]] = {}
    for table in ROW_TABLES:
        stored = _columns(con, f"st.rows_{table}")
        cols = [c for c in stored if c not in ("source", "ingest_id", "_file", "_row")]
        incoming = set(_columns(con, f"clean_{table}"))
        q = (
            f"WITH a AS (SELECT job_id, count(*) AS n, sum({_row_hash(cols, incoming)}::HUGEINT) AS h "
            f"FROM clean_{table} SEMI JOIN ett_known USING (job_id) GROUP BY job_id), "
            f"b AS (SELECT job_id, count(*) AS n, sum({_row_hash(cols, set(stored))}::HUGEINT) AS h "
            f"FROM st.rows_{table} SEMI JOIN ett_known USING (job_id) WHERE source = $s GROUP BY job_id) "
            "SELECT coalesce(a.job_id, b.job_id) FROM a FULL JOIN b USING (job_id) "
            "WHERE a.n IS DISTINCT FROM b.n OR a.h IS DISTINCT FROM b.h"
        )
        changed = [r[0] for r in con.execute(q, {"s": source}).fetchall()]
        if not changed:
            continue
        con.execute(
            "CREATE OR REPLACE TEMP TABLE ett_diff AS SELECT unnest($ids::VARCHAR[]) AS job_id", {"ids": changed}
        )
        for job in changed:
            diff.setdefault(job, set())
        # the fields that differ: per column, the job's multiset of values
        for c in cols:
            a = quote_ident(c) if c in incoming else "NULL"
            q = (
                f"WITH a AS (SELECT job_id, count(*) AS n, sum(hash({a})::HUGEINT) AS h FROM clean_{table} "
                "SEMI JOIN ett_diff USING (job_id) GROUP BY job_id), "
                f"b AS (SELECT job_id, count(*) AS n, sum(hash({quote_ident(c)})::HUGEINT) AS h FROM st.rows_{table} "
                "SEMI JOIN ett_diff USING (job_id) WHERE source = $s GROUP BY job_id) "
                "SELECT coalesce(a.job_id, b.job_id), a.n IS DISTINCT FROM b.n FROM a FULL JOIN b USING (job_id) "
                "WHERE a.n IS DISTINCT FROM b.n OR a.h IS DISTINCT FROM b.h"
            )
            for job, count_differs in con.execute(q, {"s": source}).fetchall():
                diff[job].add(f"{table} rows" if count_differs else f"{table}.{c}")
    return new, {j: sorted(f) for j, f in sorted(diff.items())}


def _latest_ms(con: duckdb.DuckDBPyConnection) -> int | None:
    """The store rows' latest instant (every source): a trace's default as-of (``load._default_as_of``'s rule)."""
    row = con.execute(
        "SELECT greatest((SELECT max(greatest(start_ms, coalesce(end_ms, start_ms))) FROM st.rows_attempts),"
        " (SELECT max(greatest(start_ms, end_ms)) FROM st.rows_spans))"
    ).fetchall()[0]
    return None if row[0] is None else int(row[0])


def _register_phases(con: duckdb.DuckDBPyConnection, rows: list) -> None:
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_phases (phase_id BIGINT, phase VARCHAR, component VARCHAR, owner VARCHAR)"
    )
    con.executemany("INSERT INTO ett_phases VALUES (?, ?, ?, ?)", [tuple(r) for r in rows])
    con.execute("ALTER TABLE ett_phases ADD COLUMN is_train BOOLEAN")
    con.execute("UPDATE ett_phases SET is_train = phase = 'train'")
    load_mod.register_causes(con)


def _drop_any(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop the temporary table or view ``name``, whichever it is."""
    kind = con.execute(
        "SELECT 'VIEW' FROM duckdb_views() WHERE view_name = $n AND temporary UNION ALL SELECT 'TABLE' "
        "FROM duckdb_tables() WHERE table_name = $n AND temporary",
        {"n": name},
    ).fetchall()
    if kind:
        con.execute(f"DROP {kind[0][0]} temp.main.{name}")


def _row_views(con: duckdb.DuckDBPyConnection, qualified: bool, restrict: str | None) -> None:
    """``clean_<table>`` and the ``span_store`` view over the store's rows: every source, or (``restrict``) the jobs
    of the temporary table ``restrict`` (source, job_id).  ``qualified``: job ids as ``source/job_id`` (several
    sources)."""
    for table in ROW_TABLES:
        _drop_any(con, f"clean_{table}")
        jid = "r.source || '/' || r.job_id" if qualified else "r.job_id"
        semi = f"SEMI JOIN {restrict} AS k ON k.source = r.source AND k.job_id = r.job_id " if restrict else ""
        con.execute(
            f"CREATE TEMP VIEW clean_{table} AS SELECT {jid} AS job_id, * EXCLUDE (source, ingest_id, job_id) "
            f"FROM st.rows_{table} AS r {semi}"
        )
    _drop_any(con, "span_store")
    con.execute(
        "CREATE TEMP VIEW span_store AS SELECT hash(s.job_id) AS job_key, s.attempt, CAST(p.phase_id AS SMALLINT) "
        "AS phase_id, s.start_ms, s.end_ms, s.cursor_start, s.cursor_end, false AS suspect FROM clean_spans AS s "
        "JOIN ett_phases AS p ON p.phase = s.phase"
    )
    con.execute("CREATE OR REPLACE TEMP TABLE ett_excluded_jobs (job_id VARCHAR)")


def _params(con: duckdb.DuckDBPyConnection, as_of_ms: int | None, explicit: bool) -> None:
    cut = as_of_ms if explicit else (None if as_of_ms is None else as_of_ms + 1)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_params AS SELECT $a::BIGINT AS as_of_ms, $c::BIGINT AS cut_ms",
        {"a": as_of_ms, "c": cut},
    )


def _labels(con: duckdb.DuckDBPyConnection, relation: str) -> list[str]:
    skip = {"_file", "_row", "job_id", "model", "gpus", "gpus_raw", "source", "ingest_id", "job_key"}
    return [c for c in _columns(con, relation) if c.lower() not in skip]


def _spans_count(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT count(*) FROM clean_spans").fetchall()[0][0]


def _attribute(con: duckdb.DuckDBPyConnection, path: Path, phase_map: PhaseMap, as_of_ms: int | None) -> None:
    """The metric's attribution and per-job results of the jobs in ``ett_attr`` (source, job_id), written into the
    result tables in place of their old results: per source, :func:`ettcore.metric.prepare` on their rows."""
    sources = [r[0] for r in con.execute("SELECT DISTINCT source FROM ett_attr ORDER BY 1").fetchall()]
    for source in sources:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE ett_attr_one AS SELECT * FROM ett_attr WHERE source = $s", {"s": source}
        )
        _row_views(con, qualified=False, restrict="ett_attr_one")
        _params(con, as_of_ms, explicit=False)
        register_window(con, Window())
        n = _spans_count(con)
        trace = Trace(
            path=path,
            con=con,
            phase_map=phase_map,
            as_of_ms=as_of_ms,
            labels=_labels(con, "clean_jobs"),
            accounting={"spans": {"used": n}},
            spans=span_store.SpanStore(con, 1),
        )
        for name in ("metric_spans", "attributed_time", "job_metrics", "job_component_time", "metric_jobs"):
            _drop_any(con, name)
        metric.prepare(trace, grid_ms=GRID_MS)
        metric.job_metrics(trace)
        for target, table in RESULT_TABLES.items():
            _merge_schema(con, target, table)
            if target in KEYED_BY_ID:
                con.execute(
                    f"DELETE FROM st.{target} AS t WHERE source = $s AND job_id IN (SELECT job_id FROM ett_attr_one)",
                    {"s": source},
                )
            else:
                con.execute(
                    f"DELETE FROM st.{target} WHERE source = $s AND job_key IN (SELECT hash(job_id) FROM ett_attr_one)",
                    {"s": source},
                )
            con.execute(
                f"INSERT INTO st.{target} BY NAME SELECT $s AS source, 0::BIGINT AS ingest_id, * FROM {table}",
                {"s": source},
            )
        dup = con.execute(
            "SELECT min(job_id), max(job_id) FROM st.res_metric_jobs WHERE source = $s GROUP BY job_key "
            "HAVING count(*) > 1 LIMIT 1",
            {"s": source},
        ).fetchall()
        if dup:
            raise InputError(
                Problem(
                    str(path),
                    None,
                    "job_id",
                    f"job ids {dup[0][0]!r} and {dup[0][1]!r} of source {source!r} "
                    "have the same 64-bit job key (hash); rename one of them",
                )
            )


def ingest_trace(
    store: str | Path,
    trace: Trace,
    source: str = DEFAULT_SOURCE,
    inputs: str = "",
    snapshot_ms: int | None = None,
) -> Refresh:
    """Refresh ``store`` with a loaded, checked trace (its clean rows) as one transaction; see the module docs.

    ``snapshot_ms`` (``--as-of``): when the snapshot was taken; the store's analysis time is the latest of the rows'
    latest instant and every snapshot time given.
    """
    t_start = time.monotonic()
    path = Path(store)
    con = trace.con
    creating = not path.exists()
    _attach(con, path, read_only=False)
    try:
        con.execute("BEGIN TRANSACTION")
        if (
            creating
            or not con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'st' AND table_name = 'ett_store'"
            ).fetchall()[0][0]
        ):
            _create(con, trace.phase_map)
        meta = _meta(con, path)
        if json.loads(meta["phases"]) != [list(r) for r in trace.phase_map.rows()]:
            raise InputError(
                Problem(
                    "--mapping",
                    None,
                    "mapping",
                    f"{path} was attributed with another phase mapping; ingest "
                    "with the same --mapping (or none) as the store's first ingest",
                )
            )
        ingest_id = con.execute("SELECT coalesce(max(ingest_id), 0) + 1 FROM st.ett_ingests").fetchall()[0][0]
        for table in ROW_TABLES:
            _merge_schema(con, f"rows_{table}", f"clean_{table}")
        new, changed = _compare(con, source)
        jobs_read = con.execute("SELECT count(*) FROM ett_in_jobs").fetchall()[0][0]
        con.execute(
            "CREATE OR REPLACE TEMP TABLE ett_replace AS SELECT unnest($ids::VARCHAR[]) AS job_id",
            {"ids": [*new, *changed]},
        )
        for table in ROW_TABLES:
            con.execute(
                f"DELETE FROM st.rows_{table} WHERE source = $s AND job_id IN (SELECT job_id FROM ett_replace)",
                {"s": source},
            )
            con.execute(
                f"INSERT INTO st.rows_{table} BY NAME SELECT $s AS source, $i::BIGINT AS ingest_id, t.* "
                f"FROM clean_{table} AS t SEMI JOIN ett_replace USING (job_id)",
                {"s": source, "i": ingest_id},
            )
        old_as_of = int(meta["as_of_ms"]) if meta.get("as_of_ms") else None
        snapshots = con.execute("SELECT max(snapshot_ms) FROM st.ett_ingests WHERE explicit_as_of").fetchall()[0][0]
        candidates = [x for x in (_latest_ms(con), snapshots, snapshot_ms) if x is not None]
        as_of_ms = max(candidates) if candidates else None
        con.execute(
            "CREATE OR REPLACE TEMP TABLE ett_attr AS SELECT $s AS source, job_id FROM ett_replace",
            {"s": source},
        )
        running = 0
        if as_of_ms != old_as_of:  # jobs with an open attempt are measured up to the analysis time: again
            con.execute(
                "CREATE OR REPLACE TEMP TABLE ett_open AS SELECT DISTINCT source, job_id FROM st.rows_attempts "
                "WHERE end_ms IS NULL EXCEPT SELECT source, job_id FROM ett_attr"
            )
            running = con.execute("SELECT count(*) FROM ett_open").fetchall()[0][0]
            con.execute("INSERT INTO ett_attr SELECT * FROM ett_open")
        if con.execute("SELECT count(*) FROM ett_attr").fetchall()[0][0]:
            _attribute(con, path, trace.phase_map, as_of_ms)
        notes = [f"job {j!r} replaced as a whole: {', '.join(f)} differ" for j, f in changed.items()]
        if notes:
            con.executemany(
                "INSERT INTO st.ett_notes VALUES (?, ?, ?, ?)",
                [(ingest_id, source, j, n) for j, n in zip(changed, notes)],
            )
        skipped = [p for p in trace.problems if p.job_id in set(trace.excluded_jobs)]
        if skipped:
            con.executemany(
                "INSERT INTO st.ett_skipped VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(ingest_id, source, p.job_id, p.file, p.row, p.field, p.message) for p in skipped],
            )
        con.execute(
            "UPDATE st.ett_store SET value = $v WHERE key = 'as_of_ms'",
            {"v": "" if as_of_ms is None else str(as_of_ms)},
        )
        if trace.synthetic:
            con.execute("UPDATE st.ett_store SET value = 'true' WHERE key = 'synthetic'")
            con.execute(
                "UPDATE st.ett_store SET value = $v WHERE key = 'description'",
                {"v": str(trace.metadata.get("description", "generated data, not measured"))},
            )
        seconds = time.monotonic() - t_start
        con.execute(
            "INSERT INTO st.ett_ingests VALUES ($i, $s, $at, $snap, $explicit, $as_of, $inputs, $read, $new, "
            "$changed, $same, $running, $skipped, $secs)",
            {
                "i": ingest_id,
                "s": source,
                "at": datetime.now(timezone.utc).replace(tzinfo=None),
                "snap": snapshot_ms if snapshot_ms is not None else trace.as_of_ms,
                "explicit": snapshot_ms is not None,
                "as_of": as_of_ms,
                "inputs": inputs,
                "read": jobs_read,
                "new": len(new),
                "changed": len(changed) + running,
                "same": jobs_read - len(new) - len(changed),
                "running": running,
                "skipped": len(trace.excluded_jobs),
                "secs": seconds,
            },
        )
        con.execute("COMMIT")
    except BaseException:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:
            pass
        raise
    finally:
        try:
            con.execute("DETACH st")
        except duckdb.Error:
            pass
    return Refresh(
        store=path,
        source=source,
        ingest_id=ingest_id,
        jobs_read=jobs_read,
        new=new,
        changed=list(changed),
        unchanged=jobs_read - len(new) - len(changed),
        running=running,
        skipped=len(trace.excluded_jobs),
        notes=notes,
        as_of_ms=as_of_ms,
        seconds=seconds,
    )


def ingest_path(
    store: str | Path,
    source_path: str | Path,
    source: str = DEFAULT_SOURCE,
    as_of: Any = None,
    skip_invalid: bool = False,
    mapping: Any = None,
    memory_limit: str | None = None,
) -> Refresh:
    """Load and check the trace at ``source_path`` (a folder or DuckDB trace file) and refresh ``store`` with it."""
    if is_store(source_path):
        raise InputError(Problem(str(source_path), None, None, "is a store, not a trace; ingest the store's sources"))
    trace = load_trace(source_path, mapping=mapping, skip_invalid=skip_invalid, memory_limit=memory_limit)
    return ingest_trace(store, trace, source=source, inputs=str(source_path), snapshot_ms=parse_as_of(as_of))


# ----------------------------------------------------------------------------- reading


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


def open_store(
    path: str | Path,
    mapping: Any = None,
    as_of: Any = None,
    since: Any = None,
    until: Any = None,
    exclude: Any = None,
    memory_limit: str | None = None,
    **_: Any,
) -> StoreTrace:
    """A store as a trace every function of :mod:`ettcore.metric` takes (read-only).

    The default analysis time is the store's latest snapshot's.  The stored results answer the default phase
    mapping, the store's as-of and windows whose bounds lie on the stored (hourly) grid; another ``mapping``, another
    ``as_of`` or an unaligned window attributes again from the stored rows with the same SQL (``recomputed`` says so).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(Problem(str(path), None, None, "store file does not exist"))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    limit, _origin = memory.resolve(memory_limit)
    con.execute("SET memory_limit = $v", {"v": limit})
    _attach(con, path, read_only=True)
    meta = _meta(con, path)
    phase_map = load_phase_map(mapping)
    stored_phases = json.loads(meta["phases"])
    store_as_of = int(meta["as_of_ms"]) if meta.get("as_of_ms") else None
    as_of_ms = parse_as_of(as_of)
    window = make_window(since, until, exclude)
    grid = int(meta["grid_ms"])
    has_rows = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'st' AND table_name = 'res_job_metrics'"
    ).fetchall()[0][0]
    if not has_rows:
        raise InputError(Problem(str(path), None, None, "the store holds no jobs yet (ett ingest STORE SOURCE)"))
    sources = [r[0] for r in con.execute("SELECT DISTINCT source FROM st.rows_attempts ORDER BY 1").fetchall()]
    qualified = len(sources) > 1
    why = []
    if [list(r) for r in phase_map.rows()] != stored_phases:
        why.append("--mapping differs from the store's")
    if as_of_ms is not None and as_of_ms != store_as_of:
        why.append("--as-of differs from the store's analysis time")
    if not _aligned(window, grid):
        why.append("--since/--until/--exclude bounds off the store's hourly grid")
    _register_phases(con, phase_map.rows() if why else stored_phases)
    _row_views(con, qualified=qualified, restrict=None)
    explicit = as_of_ms is not None
    a = as_of_ms if explicit else store_as_of
    _params(con, a, explicit=explicit and as_of_ms != store_as_of)
    register_window(con, window)
    counts = {t: con.execute(f"SELECT count(*) FROM st.rows_{t}").fetchall()[0][0] for t in ROW_TABLES}
    trace = StoreTrace(
        path=path,
        con=con,
        phase_map=phase_map,
        as_of_ms=a,
        labels=_labels(con, "clean_jobs"),
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


def _stored_results(trace: StoreTrace, qualified: bool, window: Window) -> None:
    """The metric's tables as views of the stored per-job results (the ``prepare`` steps that follow the
    attribution, in the same order)."""
    con = trace.con
    grid = int(trace.store_meta["grid_ms"])
    key = "hash(r.source || '/' || r.job_id)" if qualified else "r.job_key"
    if qualified:
        con.execute(
            "CREATE TEMP TABLE ett_rekey AS SELECT source, job_key, hash(source || '/' || job_id) AS read_key "
            "FROM st.res_metric_jobs"
        )

    def keyed(target: str) -> str:
        if not qualified:
            return f"SELECT * EXCLUDE (source, ingest_id) FROM st.{target}"
        if target in KEYED_BY_ID:
            return (
                "SELECT r.source || '/' || r.job_id AS job_id, * EXCLUDE (source, ingest_id, job_id) "
                f"FROM st.{target} AS r"
            )
        return (
            f"SELECT k.read_key AS job_key, * EXCLUDE (source, ingest_id, job_key, read_key) "
            f"FROM st.{target} AS r JOIN ett_rekey AS k USING (source, job_key)"
        )

    con.execute("CREATE OR REPLACE TEMP TABLE ett_grid AS SELECT $g::BIGINT AS grid_ms", {"g": grid})
    if qualified:
        con.execute(
            f"CREATE TEMP TABLE metric_jobs AS SELECT {key} AS job_key, r.source || '/' || r.job_id AS job_id, "
            "* EXCLUDE (source, ingest_id, job_key, job_id), r.source AS source FROM st.res_metric_jobs AS r"
        )
        trace.labels = [*trace.labels, "source"]
    else:
        con.execute("CREATE TEMP TABLE metric_jobs AS SELECT * EXCLUDE (source, ingest_id) FROM st.res_metric_jobs")
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
    for view in ("fleet_slots", "interruption_slots"):
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS {sql('metric/' + view)}")
    trace.attribution = Attribution(batches=1, grid_ms=grid)
    if window.whole:  # the stored per-job results answer it; a window's are job_summary.sql over the stored cells
        if qualified:
            con.execute(
                "CREATE TEMP TABLE job_metrics AS SELECT r.source || '/' || r.job_id AS job_id, "
                "* EXCLUDE (source, ingest_id, job_id), r.source AS source FROM st.res_job_metrics AS r ORDER BY 1"
            )
        else:
            con.execute(
                "CREATE TEMP TABLE job_metrics AS SELECT * EXCLUDE (source, ingest_id) FROM st.res_job_metrics "
                "ORDER BY job_id"
            )
        con.execute(f"CREATE TEMP VIEW job_component_time AS {keyed('res_job_components')}")
        # the interruptions and lost time by cause, from the stored attribution (its pieces carry their cause)
        con.execute(f"CREATE TEMP TABLE job_cause_time AS {sql('metric/job_cause_time')}")
        trace.attribution.job_metrics = True
