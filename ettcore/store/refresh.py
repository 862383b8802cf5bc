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
   incoming jobs left out: :func:`ettcore.trace.load.leave_out`), at the source's horizon (its latest instant or
   snapshot: :func:`ettcore.store.db.horizons`), and their per-job results inserted and their share of the fleet's
   sums added;
5. when the source's horizon moved, its stored jobs with an open attempt are attributed again from their stored
   rows (another source's running jobs stay measured to that source's own horizon);
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
from ettcore.store import db, statements
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
from ettcore.store.statements import Column, columns_of
from ettcore.trace import span_store
from ettcore.trace.load import Trace, leave_out, load_trace, parse_as_of, relation_kind
from ettcore.trace.queries import sql
from ettcore.trace.window import Window
from ettcore.trace.window import register as register_window
from ettcore.vocabulary import VOCABULARY, Vocabulary


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
    running: int = 0  # the source's running jobs measured again to its new horizon
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    as_of_ms: int | None = None  # the source's horizon
    seconds: float = 0.0


_SKIP_HASH = ("source", "ingest_id", "_file", "_row")  # where a row came from is not its content


def _incoming_views(con: duckdb.DuckDBPyConnection) -> None:
    """``ett_in_<table>``: the rows a refresh stores, the clean rows less the spans' and attempts' ``*_raw`` columns
    (the text a value was parsed from, which only the checks read: a span's is kept only where its value did not
    parse, so a clean span's is always NULL; an attempt's is the text of each clean value, and casting 1.7 M
    attempts' times to text was 3.4 s of the 4.6 s their insert took).  A store made before keeps the attempts' raw
    columns it has (its digests cover them).  The jobs' ``gpus_raw`` stays: the metric's ``metric_jobs.sql`` names
    it."""
    clean = {c.lower() for c in db.columns(con, "clean_attempts")}
    read = db.columns(con, "raw_attempts") if "nodes" not in clean and relation_kind(con, "raw_attempts") else {}
    nodes = [Column(c, t) for c, t in read.items() if c.lower() == "nodes"][:1]
    for table in db.ROW_TABLES:
        have = set(db.columns(con, f"st.rows_{table}")) if db.has_table(con, f"rows_{table}") else set()
        schema = db.columns(con, f"clean_{table}")
        raw = [c for c in schema if table != "jobs" and c.endswith("_raw") and c not in have]
        kept = columns_of(schema, skip=raw)
        if table == "attempts" and nodes:
            # an attempt's nodes (the optional ``nodes`` column, a host list: ettcore.metric.nodes) are not typed by
            # the loader, which leaves them in the rows as read; the store keeps them beside the typed columns
            statements.run(con, "incoming_attempts_with_nodes", kept=kept, nodes=nodes)
        else:
            statements.run(con, "incoming_rows", table=table, kept=kept)


def hashed_columns(con: duckdb.DuckDBPyConnection, table: str, relation: str) -> list[Column]:
    """The columns a row of ``table`` is hashed over in a digest (``job_digests.sql``): the store's columns of
    ``rows_<table>``, in their order, less where the row came from (source, ingest_id, ``_file``, ``_row``); those
    ``relation`` (the rows at hand) lacks are marked absent (read as NULL)."""
    return columns_of(db.columns(con, f"st.rows_{table}"), db.columns(con, relation), skip=_SKIP_HASH)


def _digests(con: duckdb.DuckDBPyConnection, into: str, prefix: str, key: list[Column]) -> None:
    """``into``: one row a job (by ``key``) of the relations ``<prefix><table>`` (ett_in_ or st.rows_), its digest,
    latest instant and whether an attempt is open (``job_digests.sql``)."""
    relations = {t: f"{prefix}{t}" for t in db.ROW_TABLES}
    statements.run(
        con,
        "job_digests",
        into=into,
        key=key,
        **relations,
        **{f"{t}_columns": hashed_columns(con, t, r) for t, r in relations.items()},
    )


def _rehash(con: duckdb.DuckDBPyConnection) -> None:
    """Every stored job's digest again from its stored rows (after the stored columns changed: a digest covers
    them all)."""
    _digests(con, "ett_rehash", "st.rows_", [Column("source", "VARCHAR"), Column("job_id", "VARCHAR")])
    statements.run(con, "update_job_digests")
    con.execute("DROP TABLE IF EXISTS ett_rehash")


def _compare(con: duckdb.DuckDBPyConnection, source: str) -> tuple[list[str], dict[str, list[str]]]:
    """(new job ids, changed job id -> the fields that differ): the incoming digests (``ett_in``) against the
    stored ones; the fields of a changed job from its rows, in the tables whose digest differs."""
    statements.run(con, "compared_jobs", {"source": source})
    new = [r[0] for r in statements.rows(con, "new_jobs")]
    diff: dict[str, set[str]] = {r[0]: set() for r in statements.rows(con, "changed_jobs")}
    # the changed jobs (with the ingest that stored them) and their stored rows, read once: the fields that differ
    # come from them, and they are deleted by row id
    statements.run(con, "replaced_stored_jobs", {"source": source})
    collect_rows(con, "ett_gone")
    differing = dict(zip(db.ROW_TABLES, statements.rows(con, "differing_tables")[0]))
    for table in db.ROW_TABLES:
        if not differing[table]:
            continue
        statements.run(con, "differing_jobs", table=table)
        stored = columns_of(db.columns(con, f"st.rows_{table}"), skip=_SKIP_HASH)
        # per column, the job's multiset of values (count and hash sum), on both sides, in one pass each
        got = statements.rows(
            con,
            "field_differences",
            table=table,
            stored=stored,
            incoming=hashed_columns(con, table, f"ett_in_{table}"),
        )
        for job, count_differs, *col_differs in got:
            if count_differs:
                diff[job].add(f"{table} rows")
            else:
                diff[job].update(f"{table}.{c.name}" for c, d in zip(stored, col_differs) if d)
    return new, {j: sorted(f) for j, f in sorted(diff.items())}


def collect_rows(con: duckdb.DuckDBPyConnection, keys: str) -> None:
    """``ett_old_<table>``: the row ids (``ett_rowid``) of the stored rows of the jobs of ``keys`` (source, job_id,
    job_key, ingest_id), found once (reading only the key columns: their other columns are read for the jobs whose
    fields are named, by row id), narrowed to the row groups of the ingests that stored those jobs
    (``stored_row_ids.sql``)."""
    for table in db.row_tables(con):
        statements.run(con, "stored_row_ids", table=table, keys=keys)


def delete_jobs(con: duckdb.DuckDBPyConnection, keys: str, grid_ms: int, collected: bool = True) -> None:
    """Delete the stored rows and results of the jobs of the temporary table ``keys`` (source, job_id, job_key),
    after subtracting their share of the fleet's sums; the rows by row id when ``collected`` (:func:`collect_rows`),
    else by key."""
    delete_results(con, keys, grid_ms)
    for table in db.row_tables(con):
        if collected:
            statements.run(con, "delete_rows_by_id", table=table)
        else:
            statements.run(con, "delete_rows_of_jobs", table=table, keys=keys)


def _measure(trace: Trace, source: str, ingest_id: int | None, grid_ms: int) -> None:
    """The metric on ``trace`` (at the store's analysis time, already in ``ett_params``), its per-job results written
    into the store and its share of the fleet's sums added."""
    drop_metric_views(trace.con)
    trace.attribution = None
    metric.prepare(trace, grid_ms=grid_ms)
    metric.job_metrics(trace)
    # the paces, read twice (res_job_pace and, through train_pace, the stalls): computed once (each is a pass over
    # every span, 2.9 s at 42 M spans), and the stalls read them from there
    statements.create_as(trace.con, "TABLE", "ett_job_pace", sql("metric/job_pace"))
    trace.stored_views = {**trace.stored_views, "job_pace": statements.text("computed_job_pace")}
    stalls.prepare(trace, None)
    write_results(trace.con, source, ingest_id)
    add_sums(trace.con)


def _attribute_stored(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    phase_map: PhaseMap,
    as_of_ms: int | None,
    grid_ms: int,
    vocabulary: Vocabulary,
) -> None:
    """The metric on the stored rows of the jobs of ``ett_attr`` (source, job_id, job_key), per source, at
    ``as_of_ms``, with the store's ``vocabulary`` (its causes registered on ``con``); their results and sums written
    (their old ones are already gone)."""
    for (source,) in statements.rows(con, "sources_of", relation="ett_attr"):
        statements.run(con, "jobs_of_source", {"source": source}, into="ett_attr_one", keys="ett_attr")
        row_views(con, qualified=False, restrict="ett_attr_one")
        set_params(con, as_of_ms)
        register_window(con, Window())
        n = statements.value(con, "row_count", relation="clean_spans")
        trace = Trace(
            path=path,
            con=con,
            phase_map=phase_map,
            as_of_ms=as_of_ms,
            labels=labels(con, "clean_jobs"),
            accounting={"spans": {"used": n}},
            spans=span_store.SpanStore(con, 1),
            vocabulary=vocabulary,
        )
        _measure(trace, source, None, grid_ms)


def remeasure_open(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    source: str,
    phase_map: PhaseMap,
    as_of_ms: int | None,
    grid_ms: int,
    replaced: str,
    vocabulary: Vocabulary,
) -> int:
    """After ``source``'s horizon moved to ``as_of_ms``: its stored jobs with an open attempt (less those of the
    temporary table ``replaced``: source, job_id, just attributed) measured again up to it, from their stored rows,
    with the store's ``vocabulary``; returns how many."""
    statements.run(con, "open_jobs_to_measure", {"source": source}, replaced=replaced)
    running = statements.value(con, "row_count", relation="ett_attr")
    if running:
        delete_results(con, "ett_attr", grid_ms)
        _attribute_stored(con, path, phase_map, as_of_ms, grid_ms, vocabulary)
    return running


def _check_keys(con: duckdb.DuckDBPyConnection, path: Path, source: str) -> None:
    """Two job ids of a source with one job key (the 64-bit hash the metric joins on) are refused: the jobs just
    inserted (``ett_replace``) against every stored job of the source."""
    dup = statements.rows(con, "job_key_collision", {"source": source})
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


def _check_causes(path: Path, kept: list[dict], vocabulary: Vocabulary) -> None:
    """A source read with other causes than the store keeps (its first ingest's ``--causes-file``) is refused: the
    stored results number the causes as the store's vocabulary does."""
    if kept == vocabulary.added_entries():
        return
    names = ", ".join(e["cause"] for e in kept) or "none"
    raise InputError(
        Problem(
            "--causes-file",
            None,
            "causes_file",
            f"{path} keeps other causes than this source was read with (the store's own: {names}); ingest with the "
            "store's --causes-file, or none (a store's later ingests read its causes)",
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
        with db.transaction(con, path):
            if creating or not db.has_table(con, "ett_store"):
                db.create(con, trace.phase_map, db.grid_of(grid), trace.vocabulary)
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
            _check_causes(path, db.kept_causes(meta), trace.vocabulary)
            db.add_digest_columns(con)
            ingest_id = db.next_ingest_id(con)
            old_as_of = db.horizons(con).get(source)
            db.step("attached")
            _incoming_views(con)
            reshaped = False
            for table in db.ROW_TABLES:
                reshaped |= db.merge_schema(con, f"rows_{table}", f"ett_in_{table}")
            if reshaped:
                _rehash(con)
            statements.run(con, "insert_labels", {"source": source, "labels": list(trace.labels)})
            _digests(con, "ett_in", "ett_in_", [Column("job_id", "VARCHAR")])
            new, changed = _compare(con, source)
            jobs_read = statements.value(con, "row_count", relation="ett_in")
            statements.run(con, "replaced_jobs", {"source": source})
            db.step("compared")
            sum_tables(con)
            delete_jobs(con, "ett_gone", grid_ms)
            statements.run(con, "delete_stored_jobs", {"source": source})
            db.step("deleted")
            if len(new) + len(changed) < jobs_read:  # the unchanged jobs are left out of the views from here on
                statements.run(con, "unchanged_jobs")
                leave_out(trace, "ett_same")
            for table in db.ROW_TABLES:
                statements.run(con, "insert_rows", {"source": source, "ingest_id": ingest_id}, table=table)
            statements.run(con, "insert_jobs", {"source": source, "ingest_id": ingest_id})
            _check_keys(con, path, source)
            db.step("inserted")
            # the source's own horizon: its running jobs are measured to its latest snapshot, not another source's
            as_of_ms = max(t for t in (db.horizons(con).get(source), snapshot_ms) if t is not None)
            if new or changed:  # the loaded source itself, its other jobs left out, at the source's horizon
                set_params(con, as_of_ms)
                _measure(trace, source, ingest_id, grid_ms)
            db.step("attributed")
            running = 0
            if as_of_ms != old_as_of:
                running = remeasure_open(
                    con, path, source, trace.phase_map, as_of_ms, grid_ms, "ett_replace", trace.vocabulary
                )
            db.step("running")
            sum_tables(con, apply=True)
            db.step("summed")
            notes = [f"job {j!r} replaced as a whole: {', '.join(f)} differ" for j, f in changed.items()]
            if notes:  # bound lists, one statement (executemany is a statement a row)
                statements.run(
                    con,
                    "insert_notes",
                    {"ingest_id": ingest_id, "source": source, "jobs": list(changed), "notes": notes},
                )
            left_out = set(skipped_ids)
            skipped = [p for p in trace.problems if p.job_id in left_out]
            if skipped:
                statements.run(
                    con,
                    "insert_skipped",
                    {
                        "ingest_id": ingest_id,
                        "source": source,
                        "jobs": [p.job_id for p in skipped],
                        "files": [p.file for p in skipped],
                        "rows": [p.row for p in skipped],
                        "fields": [p.field for p in skipped],
                        "messages": [p.message for p in skipped],
                    },
                )
            db.set_meta(con, "as_of_ms", db.as_of_ms(con, snapshot_ms))
            if trace.synthetic:
                db.set_meta(con, "synthetic", "true")
                db.set_meta(con, "description", str(trace.metadata.get("description", "generated data, not measured")))
            seconds = time.monotonic() - t_start
            statements.run(
                con,
                "insert_ingest",
                {
                    "ingest_id": ingest_id,
                    "source": source,
                    "ingested_at": datetime.now(timezone.utc).replace(tzinfo=None),
                    "snapshot_ms": snapshot_ms if snapshot_ms is not None else trace.as_of_ms,
                    "explicit_as_of": snapshot_ms is not None,
                    "as_of_ms": as_of_ms,
                    "inputs": inputs,
                    "jobs_read": jobs_read,
                    "new": len(new),
                    "changed": len(changed) + running,
                    "unchanged": jobs_read - len(new) - len(changed),
                    "running_remeasured": running,
                    "skipped_jobs": len(skipped_ids),
                    "seconds": seconds,
                },
            )
            db.step("recorded")
        db.checkpoint(con, path)
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
    statements.run(con, "stored_cells", keys=keys)
    old_sums(con, keys, grid_ms)
    statements.run(con, "delete_cells")
    for target in db.RESULT_TABLES:
        if target == "res_attributed" or not db.has_table(con, target):
            continue
        by = "delete_results_by_id" if target in db.KEYED_BY_ID else "delete_results_by_key"
        statements.run(con, by, result=target, keys=keys)


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
    causes_file: str | Path | None = None,
) -> Refresh:
    """Load and check the trace at ``source_path`` (a folder or DuckDB trace file) and refresh ``store`` with it.
    ``causes_file``: a user's causes file, kept by a new store; without one, the causes the store keeps
    (:func:`source_vocabulary`)."""
    if is_store(source_path):
        raise InputError(Problem(str(source_path), None, None, "is a store, not a trace; ingest the store's sources"))
    trace = load_trace(
        source_path,
        mapping=mapping,
        skip_invalid=skip_invalid,
        memory_limit=memory_limit,
        vocabulary=source_vocabulary(store, causes_file),
    )
    return ingest_trace(store, trace, source=source, inputs=str(source_path), snapshot_ms=parse_as_of(as_of), grid=grid)


def source_vocabulary(store: str | Path, causes_file: str | Path | None) -> Vocabulary:
    """The vocabulary a source for ``store`` is read with: the package's with the causes of ``causes_file`` where
    given (a new store keeps them; an existing one must keep the same: :func:`ingest_trace`), else with the causes
    the store keeps (:func:`ettcore.store.db.vocabulary_at`)."""
    return db.vocabulary_at(store) if causes_file is None else VOCABULARY.with_causes(causes_file)
