"""A store's housekeeping: removing a source (``ett store remove-source``) and compaction (``ett store compact``).

Removing a source is one transaction: its jobs' rows, results and index rows go, their share of the fleet's sums is
subtracted, and the removal is recorded in ``ett_removals`` (its id from the sequence ingests use).  Each other
source's running jobs stay measured to that source's own horizon (:func:`ettcore.store.db.horizons`), which the
removal does not move; the store's analysis time (the latest horizon) may move back.  The store then gives the
figures a store built without that source gives.

A DuckDB file does not shrink when rows are deleted.  Compaction copies the store into a new file next to it while
holding the store's write lock (a refresh or a reader waits, bounded), then puts the copy in its place with one
atomic rename: a process killed before the rename leaves the store as it was (and a ``.<name>.compact-*`` file
that the next compaction removes), one killed after it leaves the compacted store.  Ids, rows and results are copied
as they are.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from ettcore.errors import InputError, Problem, io_cause
from ettcore.store import db, statements
from ettcore.store.read import register_phases
from ettcore.store.refresh import delete_jobs
from ettcore.store.results import sum_tables
from ettcore.store.statements import Column


@dataclass
class Removal:
    """What one removal did (what ``ett store remove-source`` prints)."""

    store: Path
    source: str
    ingest_id: int
    jobs: int
    as_of_ms: int | None  # the store's analysis time after it (the latest of the sources' horizons left)


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise InputError(Problem(str(path), None, None, "store file does not exist"))
    return path


def remove_source(store: str | Path, source: str) -> Removal:
    """Remove every job of ``source`` from ``store`` (one transaction)."""
    path = _existing(Path(store))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    db.attach(con, path, read_only=False)
    try:
        with db.transaction(con, path, "the removal"):
            meta = db.meta(con, path)
            db.step("attached")
            statements.run(con, "removed_jobs", {"source": source})
            jobs = statements.value(con, "row_count", relation="ett_gone")
            if not jobs:
                have = [r[0] for r in statements.rows(con, "sources_of", relation="st.ett_jobs")]
                raise InputError(
                    Problem(
                        str(path),
                        None,
                        "source",
                        f"no source {source!r} in the store (its sources: {', '.join(have) or 'none'})",
                    )
                )
            ingest_id = db.next_ingest_id(con)
            rows = json.loads(meta["phases"])
            register_phases(con, rows, db.vocabulary_of(meta, path))
            sum_tables(con)
            delete_jobs(con, "ett_gone", int(meta["grid_ms"]), collected=False)
            statements.run(con, "delete_stored_jobs", {"source": source})
            _drop_labels(con, source)
            statements.run(
                con,
                "insert_removal",
                {
                    "ingest_id": ingest_id,
                    "source": source,
                    "removed_at": datetime.now(timezone.utc).replace(tzinfo=None),
                    "jobs": jobs,
                },
            )
            db.step("removed")
            as_of_ms = db.as_of_ms(con)
            sum_tables(con, apply=True)
            db.step("summed")
            db.set_meta(con, "as_of_ms", as_of_ms)
            db.step("recorded")
        db.checkpoint(con, path, "the removal")
    finally:
        con.close()
    return Removal(store=path, source=source, ingest_id=ingest_id, jobs=jobs, as_of_ms=as_of_ms)


def _drop_labels(con: duckdb.DuckDBPyConnection, source: str) -> None:
    """The label columns only ``source`` brought leave the rows and the per-job results (a store built without the
    source never had them)."""
    gone = [r[0] for r in statements.rows(con, "labels_only_of", {"source": source})]
    statements.run(con, "delete_labels", {"source": source})
    for table in ("rows_jobs", *db.LABELLED):
        if not db.has_table(con, table):
            continue
        have = {c.lower(): (c, t) for c, t in db.columns(con, f"st.{table}").items()}
        for label in gone:
            if label.lower() in have:
                statements.run(con, "drop_column", target=table, column=[Column(*have[label.lower()])])


@dataclass
class Compaction:
    """What one compaction did (what ``ett store compact`` prints)."""

    store: Path
    bytes_before: int
    bytes_after: int


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(str(path), os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def compact(store: str | Path) -> Compaction:
    """Copy ``store`` into a new file and put it in its place (see the module docs)."""
    path = _existing(Path(store))
    con = duckdb.connect()
    db.attach(con, path, read_only=False)  # the write lock: no refresh, no reader, until the copy is in place
    tmp = path.with_name(f".{path.name}.compact-{os.getpid()}")
    swapped = False
    try:
        db.meta(con, path)
        con.execute("CHECKPOINT st")  # nothing of the store left in its write-ahead log
        before = path.stat().st_size
        for stale in path.parent.glob(f".{path.name}.compact-*"):  # a compaction killed before its rename
            stale.unlink()
        db.step("attached")
        con.execute(f"ATTACH {db.literal(tmp)} AS ct")
        con.execute("COPY FROM DATABASE st TO ct")
        con.execute("DETACH ct")
        _fsync(tmp)
        db.step("copied")
        os.replace(tmp, path)
        swapped = True
        _fsync(path.parent, directory=True)
        db.step("swapped")
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
        if isinstance(exc, (OSError, *db.WRITE_FAULTS)) and not swapped:  # a full disk: the copy goes, the store stays
            raise InputError(
                Problem(
                    str(path),
                    None,
                    None,
                    f"the compaction is not done: {io_cause(exc)}; the store is as before (a compaction needs free "
                    "space about the store's size beside it)",
                )
            ) from None
        raise
    finally:
        con.close()
    return Compaction(store=path, bytes_before=before, bytes_after=path.stat().st_size)
