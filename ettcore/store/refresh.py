"""A refresh (``ett ingest``): compare a loaded source with the store, replace what changed, attribute only that.

One DuckDB transaction, in the order of :data:`ettcore.store.db.STEPS`:

1. the incoming jobs' digests (``ett_in``: per table, the count of a job's rows and the sum of their hashes over the
   store's columns, the job's latest instant, whether an attempt is open) are compared with the stored ones
   (``ett_jobs``, one row a stored job): no stored row is read for it;
2. a changed job's stored rows and results are deleted (its old share of the fleet's sums subtracted first), and
   the fields that differ are named (the only read of stored rows: those of the changed jobs, in the tables whose
   digest differs);
3. the new and changed jobs' rows are inserted, with this ingest's id;
4. they are attributed by the metric's own SQL on the loaded source itself (:func:`ettcore.metric.prepare`, the other
   incoming jobs left out: :func:`ettcore.trace.load.leave_out`), at the store's analysis time, and their per-job
   results inserted and their share of the fleet's sums added;
5. when the analysis time moved, the stored jobs with an open attempt are attributed again from their stored rows;
6. the fleet's sums, the notes, the skipped jobs, the metadata and the ingest's row are written; COMMIT.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from ettcore import metric
from ettcore.errors import InputError, Problem
from ettcore.metric import stalls
from ettcore.phases import PhaseMap
from ettcore.store import db
from ettcore.store.read import is_store, labels
from ettcore.store.results import (
    add_sums,
    drop_metric_views,
    old_sums,
    row_views,
    set_params,
    sum_tables,
    write_results,
)
from ettcore.trace import span_store
from ettcore.trace.load import Trace, leave_out, load_trace, parse_as_of, quote_ident, relation_kind
from ettcore.trace.window import Window
from ettcore.trace.window import register as register_window


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


_SKIP_HASH = ("source", "ingest_id", "_file", "_row")  # where a row came from is not its content
_LEAD = "''::VARCHAR AS source, 0::BIGINT AS ingest_id, "


def _incoming_views(con: duckdb.DuckDBPyConnection) -> None:
    """``ett_in_<table>``: the rows a refresh stores, the clean rows less the spans' and attempts' ``*_raw`` columns
    (the text a value was parsed from, which only the checks read: a span's is kept only where its value did not
    parse, so a clean span's is always NULL; an attempt's is the text of each clean value, and casting 1.7 M
    attempts' times to text was 3.4 s of the 4.6 s their insert took).  A store made before keeps the attempts' raw
    columns it has (its digests cover them).  The jobs' ``gpus_raw`` stays: the metric's ``metric_jobs.sql`` names
    it."""
    clean = {c.lower() for c in db.columns(con, "clean_attempts")}
    read = db.columns(con, "raw_attempts") if "nodes" not in clean and relation_kind(con, "raw_attempts") else {}
    nodes = next((c for c in read if c.lower() == "nodes"), None)
    for table in db.ROW_TABLES:
        kept = set(db.columns(con, f"st.rows_{table}")) if db.has_table(con, f"rows_{table}") else set()
        raw = [c for c in db.columns(con, f"clean_{table}") if table != "jobs" and c.endswith("_raw") and c not in kept]
        drop = f" EXCLUDE ({', '.join(quote_ident(c) for c in raw)})" if raw else ""
        if table == "attempts" and nodes:
            # an attempt's nodes (the optional ``nodes`` column, a host list: ettcore.metric.nodes) are not typed by
            # the loader, which leaves them in the rows as read; the store keeps them beside the typed columns
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW ett_in_attempts AS SELECT c.*{drop}, r.{quote_ident(nodes)}::VARCHAR "
                "AS nodes FROM clean_attempts AS c LEFT JOIN raw_attempts AS r ON r._file = c._file AND r._row = c._row"
            )
        else:
            con.execute(f"CREATE OR REPLACE TEMP VIEW ett_in_{table} AS SELECT *{drop} FROM clean_{table}")


def _row_hash(con: duckdb.DuckDBPyConnection, table: str, relation: str) -> str:
    """SQL of one row's content hash over the stored columns of ``rows_<table>`` (in their order, each cast to the
    stored type; a column ``relation`` lacks counts as NULL)."""
    stored = db.columns(con, f"st.rows_{table}")
    present = {c.lower() for c in db.columns(con, relation)}
    parts = [
        f"CAST({quote_ident(c) if c.lower() in present else 'NULL'} AS {t})"
        for c, t in stored.items()
        if c not in _SKIP_HASH
    ]
    return f"hash({', '.join(parts)})"


def _digests(con: duckdb.DuckDBPyConnection, prefix: str, where: str = "", params: dict | None = None) -> str:
    """SQL of one row a job of the relations ``<prefix><table>`` (clean_ or st.rows_): its rows' count and hash sum
    per table, its latest instant and whether an attempt is open (``where`` narrows each table)."""
    per = {}
    for t in db.ROW_TABLES:
        extra = ""
        if t == "attempts":
            extra = ", max(greatest(start_ms, coalesce(end_ms, start_ms))) AS latest_a, bool_or(end_ms IS NULL) AS open"
        elif t == "spans":
            extra = ", max(greatest(start_ms, end_ms)) AS latest_s"
        per[t] = (
            f"SELECT job_id, count(*) AS n_{t}, sum({_row_hash(con, t, prefix + t)}::HUGEINT) AS h_{t}{extra} "
            f"FROM {prefix}{t} {where} GROUP BY job_id"
        )
    return (
        f"WITH j AS ({per['jobs']}), a AS ({per['attempts']}), s AS ({per['spans']}), "
        "ids AS (SELECT job_id FROM j UNION SELECT job_id FROM a UNION SELECT job_id FROM s) "
        "SELECT ids.job_id, hash(ids.job_id) AS job_key, coalesce(n_jobs, 0) AS n_jobs, coalesce(h_jobs, 0) AS h_jobs, "
        "coalesce(n_attempts, 0) AS n_attempts, coalesce(h_attempts, 0) AS h_attempts, "
        "coalesce(n_spans, 0) AS n_spans, coalesce(h_spans, 0) AS h_spans, "
        "greatest(latest_a, latest_s) AS latest_ms, coalesce(open, false) AS open "
        "FROM ids LEFT JOIN j USING (job_id) LEFT JOIN a USING (job_id) LEFT JOIN s USING (job_id)"
    )


def _rehash(con: duckdb.DuckDBPyConnection) -> None:
    """Every stored job's digest again from its stored rows (after the stored columns changed: a digest covers
    them all)."""
    sources = [r[0] for r in con.execute("SELECT DISTINCT source FROM st.ett_jobs").fetchall()]
    for s in sources:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE ett_rehash AS {_digests(con, 'st.rows_', 'WHERE source = $s')}", {"s": s}
        )
        con.execute(
            "UPDATE st.ett_jobs AS k SET n_jobs = r.n_jobs, h_jobs = r.h_jobs, n_attempts = r.n_attempts, "
            "h_attempts = r.h_attempts, n_spans = r.n_spans, h_spans = r.h_spans FROM ett_rehash AS r "
            "WHERE k.source = $s AND k.job_id = r.job_id",
            {"s": s},
        )
    con.execute("DROP TABLE IF EXISTS ett_rehash")


def _compare(con: duckdb.DuckDBPyConnection, source: str) -> tuple[list[str], dict[str, list[str]]]:
    """(new job ids, changed job id -> the fields that differ): the incoming digests (``ett_in``) against the
    stored ones; the fields of a changed job from its rows, in the tables whose digest differs."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_cmp AS SELECT i.job_id, k.job_id IS NULL AS is_new, "
        + ", ".join(f"(i.n_{t}, i.h_{t}) IS DISTINCT FROM (k.n_{t}, k.h_{t}) AS d_{t}" for t in db.ROW_TABLES)
        + " FROM ett_in AS i LEFT JOIN (SELECT * FROM st.ett_jobs WHERE source = $s) AS k USING (job_id)",
        {"s": source},
    )
    new = [r[0] for r in con.execute("SELECT job_id FROM ett_cmp WHERE is_new ORDER BY job_id").fetchall()]
    diff: dict[str, set[str]] = {
        r[0]: set()
        for r in con.execute(
            "SELECT job_id FROM ett_cmp WHERE NOT is_new AND (d_jobs OR d_attempts OR d_spans) ORDER BY job_id"
        ).fetchall()
    }
    # the changed jobs (with the ingest that stored them) and their stored rows, read once: the fields that differ
    # come from them, and they are deleted by row id
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_gone AS SELECT k.source, k.job_id, k.job_key, k.ingest_id "
        "FROM st.ett_jobs AS k SEMI JOIN ett_cmp AS c ON c.job_id = k.job_id AND NOT c.is_new "
        "AND (c.d_jobs OR c.d_attempts OR c.d_spans) WHERE k.source = $s",
        {"s": source},
    )
    collect_rows(con, "ett_gone")
    for table in db.ROW_TABLES:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE ett_diff AS SELECT job_id FROM ett_cmp WHERE NOT is_new AND d_{table}"
        )
        if not con.execute("SELECT count(*) FROM ett_diff").fetchall()[0][0]:
            continue
        stored = db.columns(con, f"st.rows_{table}")
        incoming = {c.lower() for c in db.columns(con, f"ett_in_{table}")}
        stored_rows = f"(SELECT r.* FROM st.rows_{table} AS r SEMI JOIN ett_old_{table} AS o ON o.ett_rowid = r.rowid)"
        cols = [c for c in stored if c not in _SKIP_HASH]
        # per column, the job's multiset of values (count and hash sum), on both sides, in one pass each
        sums = ", ".join(f"sum(hash({{{i}}})::HUGEINT) AS c{i}" for i in range(len(cols)))

        def side(relation: str, have: set[str], where: str = "") -> str:
            vals = [f"CAST({quote_ident(c) if c.lower() in have else 'NULL'} AS {stored[c]})" for c in cols]
            return (
                f"SELECT job_id, count(*) AS n, {sums.format(*vals)} FROM {relation} "
                f"SEMI JOIN ett_diff USING (job_id) {where} GROUP BY job_id"
            )

        rows = con.execute(
            f"WITH a AS ({side(f'ett_in_{table}', incoming)}), "
            f"b AS ({side(stored_rows, {c.lower() for c in stored})}) "
            "SELECT coalesce(a.job_id, b.job_id), a.n IS DISTINCT FROM b.n, "
            + ", ".join(f"a.c{i} IS DISTINCT FROM b.c{i}" for i in range(len(cols)))
            + " FROM a FULL JOIN b USING (job_id)"
        ).fetchall()
        for job, count_differs, *col_differs in rows:
            if count_differs:
                diff[job].add(f"{table} rows")
            else:
                diff[job].update(f"{table}.{c}" for c, d in zip(cols, col_differs) if d)
    return new, {j: sorted(f) for j, f in sorted(diff.items())}


def collect_rows(con: duckdb.DuckDBPyConnection, keys: str) -> None:
    """``ett_old_<table>``: the row ids (``ett_rowid``) of the stored rows of the jobs of ``keys`` (source, job_id,
    job_key, ingest_id), found once (reading only the key columns: their other columns are read for the jobs whose
    fields are named, by row id), narrowed to the row groups of the ingests that stored those jobs (a table's rows
    lie in ingest order, so a running job replaced yesterday is found among yesterday's rows)."""
    for table in db.ROW_TABLES:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE ett_old_{table} AS SELECT r.rowid AS ett_rowid FROM st.rows_{table} AS r "
            f"SEMI JOIN {keys} AS k ON k.source = r.source AND k.job_id = r.job_id "
            f"WHERE r.ingest_id IN (SELECT DISTINCT ingest_id FROM {keys})"
        )


def delete_jobs(con: duckdb.DuckDBPyConnection, keys: str, grid_ms: int, collected: bool = True) -> None:
    """Delete the stored rows and results of the jobs of the temporary table ``keys`` (source, job_id, job_key),
    after subtracting their share of the fleet's sums; the rows by row id when ``collected`` (:func:`collect_rows`),
    else by key."""
    delete_results(con, keys, grid_ms)
    for table in db.ROW_TABLES:
        if collected:
            con.execute(f"DELETE FROM st.rows_{table} WHERE rowid IN (SELECT ett_rowid FROM ett_old_{table})")
        else:
            con.execute(
                f"DELETE FROM st.rows_{table} AS r WHERE EXISTS (SELECT 1 FROM {keys} AS k "
                "WHERE k.source = r.source AND k.job_id = r.job_id)"
            )


def _measure(trace: Trace, source: str, ingest_id: int | None, grid_ms: int) -> None:
    """The metric on ``trace`` (at the store's analysis time, already in ``ett_params``), its per-job results written
    into the store and its share of the fleet's sums added."""
    drop_metric_views(trace.con)
    trace.attribution = None
    metric.prepare(trace, grid_ms=grid_ms)
    metric.job_metrics(trace)
    stalls.prepare(trace, None)
    # the paces, read twice (res_job_pace and, through train_pace, the stalls): computed once (each is a pass over
    # every span, 2.9 s at 42 M spans)
    trace.con.execute("CREATE OR REPLACE TEMP TABLE ett_job_pace AS SELECT * FROM job_pace")
    trace.con.execute("CREATE OR REPLACE TEMP VIEW job_pace AS SELECT * FROM ett_job_pace")
    write_results(trace.con, source, ingest_id)
    add_sums(trace.con)


def _attribute_stored(
    con: duckdb.DuckDBPyConnection, path: Path, phase_map: PhaseMap, as_of_ms: int | None, grid_ms: int
) -> None:
    """The metric on the stored rows of the jobs of ``ett_attr`` (source, job_id, job_key), per source, at the
    store's analysis time; their results and sums written (their old ones are already gone)."""
    sources = [r[0] for r in con.execute("SELECT DISTINCT source FROM ett_attr ORDER BY 1").fetchall()]
    for source in sources:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE ett_attr_one AS SELECT * FROM ett_attr WHERE source = $s", {"s": source}
        )
        row_views(con, qualified=False, restrict="ett_attr_one")
        set_params(con, as_of_ms)
        register_window(con, Window())
        n = con.execute("SELECT count(*) FROM clean_spans").fetchall()[0][0]
        trace = Trace(
            path=path,
            con=con,
            phase_map=phase_map,
            as_of_ms=as_of_ms,
            labels=labels(con, "clean_jobs"),
            accounting={"spans": {"used": n}},
            spans=span_store.SpanStore(con, 1),
        )
        _measure(trace, source, None, grid_ms)


def remeasure_open(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    phase_map: PhaseMap,
    as_of_ms: int | None,
    grid_ms: int,
    replaced: str | None = None,
) -> int:
    """After the analysis time moved: the stored jobs with an open attempt (less those of ``replaced``: source,
    job_id, just attributed) measured again up to it, from their stored rows; returns how many."""
    skip = f"ANTI JOIN {replaced} AS x ON x.source = k.source AND x.job_id = k.job_id " if replaced else ""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE ett_attr AS SELECT k.source, k.job_id, k.job_key FROM st.ett_jobs AS k {skip}"
        "WHERE k.open"
    )
    running = con.execute("SELECT count(*) FROM ett_attr").fetchall()[0][0]
    if running:
        delete_results(con, "ett_attr", grid_ms)
        _attribute_stored(con, path, phase_map, as_of_ms, grid_ms)
    return running


def _check_keys(con: duckdb.DuckDBPyConnection, path: Path, source: str) -> None:
    """Two job ids of a source with one job key (the 64-bit hash the metric joins on) are refused: the jobs just
    inserted (``ett_replace``) against every stored job of the source."""
    dup = con.execute(
        "SELECT least(k.job_id, r.job_id), greatest(k.job_id, r.job_id) FROM st.ett_jobs AS k "
        "JOIN ett_replace AS r ON k.job_key = r.job_key AND k.job_id <> r.job_id WHERE k.source = $s LIMIT 1",
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
    source: str = db.DEFAULT_SOURCE,
    inputs: str = "",
    snapshot_ms: int | None = None,
    *,
    grid: str | None = None,
) -> Refresh:
    """Refresh ``store`` with a loaded, checked trace (its clean rows) as one transaction; see the module docs.

    ``snapshot_ms`` (``--as-of``): when the snapshot was taken; the store's analysis time is the latest of the rows'
    latest instant and every snapshot time given.  ``grid`` (``day``, the default, or ``hour``): the grid a new
    store is made with (``ettcore.store.db.GRIDS``).  The trace is used up: its views then hold only the jobs the
    refresh replaced.
    """
    t_start = time.monotonic()
    path = Path(store)
    con = trace.con
    creating = not path.exists()
    db.attach(con, path, read_only=False)
    skipped_ids = list(trace.excluded_jobs)
    try:
        with db.transaction(con):
            if creating or not db.has_table(con, "ett_store"):
                db.create(con, trace.phase_map, db.grid_of(grid))
            meta = db.meta(con, path)
            grid_ms = int(meta["grid_ms"])
            if grid is not None and db.grid_of(grid) != grid_ms:
                raise InputError(
                    Problem("--grid", None, "grid", f"{path} was made with another grid ({grid_ms} ms); give none")
                )
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
            ingest_id = db.next_ingest_id(con)
            db.step("attached")
            _incoming_views(con)
            reshaped = False
            for table in db.ROW_TABLES:
                reshaped |= db.merge_schema(con, f"rows_{table}", f"ett_in_{table}", _LEAD)
            if reshaped:
                _rehash(con)
            con.execute(
                "INSERT INTO st.ett_labels SELECT $s, unnest($l::VARCHAR[]) "
                "EXCEPT SELECT source, label FROM st.ett_labels",
                {"s": source, "l": list(trace.labels)},
            )
            con.execute(f"CREATE OR REPLACE TEMP TABLE ett_in AS {_digests(con, 'ett_in_')}")
            new, changed = _compare(con, source)
            jobs_read = con.execute("SELECT count(*) FROM ett_in").fetchall()[0][0]
            con.execute(
                "CREATE OR REPLACE TEMP TABLE ett_replace AS SELECT $s AS source, job_id, hash(job_id) AS job_key "
                "FROM ett_cmp WHERE is_new OR d_jobs OR d_attempts OR d_spans",
                {"s": source},
            )
            db.step("compared")
            sum_tables(con)
            delete_jobs(con, "ett_gone", grid_ms)
            con.execute(
                "DELETE FROM st.ett_jobs AS k WHERE k.source = $s AND k.job_id IN (SELECT job_id FROM ett_gone)",
                {"s": source},
            )
            db.step("deleted")
            if len(new) + len(changed) < jobs_read:  # the unchanged jobs are left out of the views from here on
                con.execute(
                    "CREATE OR REPLACE TEMP TABLE ett_same AS SELECT job_id FROM ett_in "
                    "ANTI JOIN ett_replace USING (job_id)"
                )
                leave_out(trace, "ett_same")
            for table in db.ROW_TABLES:
                con.execute(
                    f"INSERT INTO st.rows_{table} BY NAME SELECT $s AS source, $i::BIGINT AS ingest_id, t.* "
                    f"FROM ett_in_{table} AS t",
                    {"s": source, "i": ingest_id},
                )
            con.execute(
                "INSERT INTO st.ett_jobs BY NAME SELECT $s AS source, $i::BIGINT AS ingest_id, i.* FROM ett_in AS i "
                "SEMI JOIN ett_replace USING (job_id)",
                {"s": source, "i": ingest_id},
            )
            _check_keys(con, path, source)
            db.step("inserted")
            old_as_of = int(meta["as_of_ms"]) if meta.get("as_of_ms") else None
            as_of_ms = db.as_of_ms(con, snapshot_ms)
            if new or changed:  # the loaded source itself, its other jobs left out, at the store's analysis time
                set_params(con, as_of_ms)
                _measure(trace, source, ingest_id, grid_ms)
            db.step("attributed")
            running = 0
            if as_of_ms != old_as_of:
                running = remeasure_open(con, path, trace.phase_map, as_of_ms, grid_ms, replaced="ett_replace")
            db.step("running")
            sum_tables(con, apply=True)
            db.step("summed")
            notes = [f"job {j!r} replaced as a whole: {', '.join(f)} differ" for j, f in changed.items()]
            if notes:  # bound lists, one statement (executemany is a statement a row)
                con.execute(
                    "INSERT INTO st.ett_notes SELECT $i, $s, unnest($jobs::VARCHAR[]), unnest($notes::VARCHAR[])",
                    {"i": ingest_id, "s": source, "jobs": list(changed), "notes": notes},
                )
            left_out = set(skipped_ids)
            skipped = [p for p in trace.problems if p.job_id in left_out]
            if skipped:
                con.execute(
                    "INSERT INTO st.ett_skipped SELECT $i, $s, unnest($jobs::VARCHAR[]), unnest($files::VARCHAR[]), "
                    "unnest($rows::BIGINT[]), unnest($fields::VARCHAR[]), unnest($messages::VARCHAR[])",
                    {
                        "i": ingest_id,
                        "s": source,
                        "jobs": [p.job_id for p in skipped],
                        "files": [p.file for p in skipped],
                        "rows": [p.row for p in skipped],
                        "fields": [p.field for p in skipped],
                        "messages": [p.message for p in skipped],
                    },
                )
            db.set_meta(con, "as_of_ms", as_of_ms)
            if trace.synthetic:
                db.set_meta(con, "synthetic", "true")
                db.set_meta(con, "description", str(trace.metadata.get("description", "generated data, not measured")))
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
                    "skipped": len(skipped_ids),
                    "secs": seconds,
                },
            )
            db.step("recorded")
        # the write-ahead log into the file now (DuckDB would at DETACH): a reader then opens a checkpointed file
        con.execute("CHECKPOINT st")
        db.step("checkpointed")
    finally:
        db.detach(con)
    return Refresh(
        store=path,
        source=source,
        ingest_id=ingest_id,
        jobs_read=jobs_read,
        new=new,
        changed=list(changed),
        unchanged=jobs_read - len(new) - len(changed),
        running=running,
        skipped=len(skipped_ids),
        notes=notes,
        as_of_ms=as_of_ms,
        seconds=seconds,
    )


def delete_results(con: duckdb.DuckDBPyConnection, keys: str, grid_ms: int) -> None:
    """The stored results of the jobs of ``keys`` (their rows stay), after subtracting their share of the sums
    (their stored cells, the largest result table, read once: for the sums, then deleted by row id)."""
    if not db.has_table(con, "res_attributed"):
        return
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_old_attributed AS SELECT r.rowid AS ett_rowid, r.* FROM st.res_attributed "
        f"AS r {_of_jobs(keys, 'job_key')}"
    )
    old_sums(con, keys, grid_ms)
    con.execute("DELETE FROM st.res_attributed WHERE rowid IN (SELECT ett_rowid FROM ett_old_attributed)")
    for target in db.RESULT_TABLES:
        if target == "res_attributed" or not db.has_table(con, target):
            continue
        if target in db.KEYED_BY_ID:
            con.execute(
                f"DELETE FROM st.{target} AS r WHERE EXISTS (SELECT 1 FROM {keys} AS k "
                "WHERE k.source = r.source AND k.job_id = r.job_id)"
            )
        else:
            con.execute(
                f"DELETE FROM st.{target} WHERE rowid IN (SELECT r.rowid FROM st.{target} AS r "
                f"{_of_jobs(keys, 'job_key')})"
            )


def _of_jobs(keys: str, key: str) -> str:
    """SQL narrowing a store table ``r`` to the jobs of the temporary table ``keys`` (source, ``key``): first by the
    integer ``key`` alone, a filter DuckDB applies in the scan before reading another column, then by source too.
    Joined on both at once, every row's source text is read (0.4-0.6 s for 0.2 s among 13 M attributed cells)."""
    return (
        f"SEMI JOIN (SELECT DISTINCT {key} FROM {keys}) AS k1 ON k1.{key} = r.{key} "
        f"SEMI JOIN {keys} AS k ON k.source = r.source AND k.{key} = r.{key}"
    )


def ingest_path(
    store: str | Path,
    source_path: str | Path,
    source: str = db.DEFAULT_SOURCE,
    as_of: Any = None,
    skip_invalid: bool = False,
    mapping: Any = None,
    memory_limit: str | None = None,
    *,
    grid: str | None = None,
) -> Refresh:
    """Load and check the trace at ``source_path`` (a folder or DuckDB trace file) and refresh ``store`` with it."""
    if is_store(source_path):
        raise InputError(Problem(str(source_path), None, None, "is a store, not a trace; ingest the store's sources"))
    trace = load_trace(source_path, mapping=mapping, skip_invalid=skip_invalid, memory_limit=memory_limit)
    return ingest_trace(store, trace, source=source, inputs=str(source_path), snapshot_ms=parse_as_of(as_of), grid=grid)
