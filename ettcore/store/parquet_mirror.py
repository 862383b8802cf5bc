"""Publishing a fleet store's Parquet mirror, which Spark reads (:mod:`ettcore.engines.spark.mirror`).

The mirror's layout and pointer are :mod:`ettcore.engines.mirror_format`'s: a folder ``ingest-<N>`` of Parquet files
a refresh that inserted rows, and ``CURRENT.json``, the pointer to the last published state.  :func:`publish` is
driven by the store's durable tables: it exports every committed refresh the pointer does not include yet (the rows
that carry its ingest id), each into a folder written under a temporary name and renamed once complete, then replaces
the pointer atomically.  So its cost is what changed since the last publish, and a publish killed at any point leaves
the previous pointer, which names only complete folders; the next publish clears what the killed one left and
exports again what it had not published.

A store remembers its mirror folder in its metadata (``ett_store``, key :data:`MIRROR_KEY`), with an id that the
pointer repeats (:data:`ID_KEY`): ``ett ingest STORE SOURCE --parquet DIR`` or ``ett store publish STORE DIR`` sets it
once, every later ``ett ingest`` publishes there after its refresh commits, and ``ett summarize STORE --engine spark``
reads it.  Two publishes at once take turns (a lock file in the folder; the second waits, bounded like a store).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import duckdb

from ettcore import atomic
from ettcore.engines.mirror_format import (
    FORMAT,
    POINTER,
    VERSION,
    check_files,
    file_digest,
    folder_id,
    folder_name,
    pointer_text,
    read_local_pointer,
)
from ettcore.errors import InputError, Problem, io_cause
from ettcore.store import db, statements
from ettcore.store.read import labels
from ettcore.store.statements import Column

MIRROR_KEY = "parquet_mirror"  # ett_store: the folder of the store's Parquet mirror
ID_KEY = "parquet_mirror_id"  # ett_store: the id a mirror's pointer repeats (which store it mirrors)
LOCK = ".lock"
_NULL_TYPES = ("NULL", '"NULL"')  # DuckDB's type of a column that holds only NULL: not written (Parquet has no type)


@dataclass
class Published:
    """What one publish did (what ``ett ingest`` and ``ett store publish`` print)."""

    folder: Path
    published_id: int  # the last refresh or removal the pointer includes now
    previous_id: int  # ... and before (0: the folder had no mirror)
    folders: list[int] = field(default_factory=list)  # the folders written now
    rows: int = 0  # the rows written now
    seconds: float = 0.0

    def line(self) -> str:
        if self.published_id == self.previous_id:
            return f"parquet mirror {self.folder}: up to date (ingest {self.published_id})"
        return (
            f"parquet mirror {self.folder}: published ingest {self.previous_id + 1}..{self.published_id}: "
            f"{len(self.folders)} folder(s), {self.rows} row(s); {self.seconds:.2f} s"
        )


def _committed(con: duckdb.DuckDBPyConnection) -> tuple[list[int], list[tuple[int, str]]]:
    """The store's committed refreshes (ids) and source removals (id, source), each in id order."""
    ingests = [r[0] for r in statements.rows(con, "ingest_ids")]
    removals = statements.rows(con, "removals") if db.has_table(con, "ett_removals") else []
    return ingests, [(int(i), str(s)) for i, s in removals]


def for_reading(store_path: str | Path) -> tuple[Path, str | None]:
    """The Parquet mirror Spark reads for the store at ``store_path``, and a note when it lags the store (a publish
    that failed or was killed: ``ett store publish STORE`` repairs it)."""
    path = Path(store_path)
    with db.opened(path) as (con, meta):
        ingests, removals = _committed(con)
    if not meta.get(MIRROR_KEY):
        raise InputError(
            Problem(
                str(path),
                None,
                "engine",
                "Spark reads a store's Parquet mirror, and this store has none: publish one with "
                "ett store publish STORE DIR (or ett ingest ... --parquet DIR)",
            )
        )
    folder = Path(meta[MIRROR_KEY])
    pointer = read_local_pointer(folder)
    if pointer is None:
        raise InputError(
            Problem(str(folder), None, None, f"the store's Parquet mirror has no {POINTER}: ett store publish {path}")
        )
    check_files(folder, pointer)
    last = max([0, *ingests, *(i for i, _ in removals)])
    note = None
    if int(pointer["published_id"]) < last:
        note = (
            f"the Parquet mirror {folder} holds the store up to ingest {pointer['published_id']}, the store is at "
            f"{last}: Spark reads the mirror as published (ett store publish {path} brings it up to date)"
        )
    return folder, note


def mirror_of(store_path: str | Path) -> Path | None:
    """The folder the store at ``store_path`` publishes its Parquet mirror into (None: it has none)."""
    with db.opened(Path(store_path)) as (_con, meta):
        folder = meta.get(MIRROR_KEY)
    return Path(folder) if folder else None


def remember(store_path: str | Path, folder: str | Path | None) -> None:
    """Give the store its mirror id once and, with ``folder``, record it as the store's mirror: a short write
    transaction."""
    with db.opened(Path(store_path), read_only=False) as (con, meta):
        con.execute("BEGIN TRANSACTION")
        if folder is not None:
            statements.run(con, "upsert_metadata", {"key": MIRROR_KEY, "value": str(Path(folder).resolve())})
        if not meta.get(ID_KEY):
            statements.run(con, "upsert_metadata", {"key": ID_KEY, "value": uuid.uuid4().hex})
        con.execute("COMMIT")


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold the mirror folder's lock: a second publisher waits (bounded, saying so once), then refuses."""
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)

    def attempt() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    try:
        db.retry_while_held(
            attempt,
            str(folder),
            f"another process has been publishing this Parquet mirror for more than {db.wait_seconds():g} s",
            f"{folder} is being published by another process",
            db.wait_seconds(),
        )
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock (and a killed process's is released by the kernel)


def _clear_leftovers(folder: Path, published_id: int) -> None:
    """What a killed publish left (under the lock, no other publish runs): temporary names, and folders of ingests
    the pointer does not include (no reader reads them)."""
    for entry in folder.iterdir():
        n = folder_id(entry.name)
        if entry.name.startswith((".tmp-", ".old-")) or (n is not None and n > published_id):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def _check_empty(folder: Path) -> None:
    """A folder without a pointer becomes a mirror only if it holds nothing else (it may hold a killed first
    publish's leftovers)."""
    other = [
        e.name
        for e in folder.iterdir()
        if e.name != LOCK and not e.name.startswith((".tmp-", ".old-")) and folder_id(e.name) is None
    ]
    if other:
        raise InputError(
            Problem(
                str(folder),
                None,
                None,
                f"holds files that are not a Parquet mirror ({other[0]}, no {POINTER}); give an empty or new folder",
            )
        )


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_folder(con: duckdb.DuckDBPyConnection, target: Path, ingest_id: int, columns: dict) -> None:
    """The rows ingest ``ingest_id`` inserted (and the store still holds), a Parquet file a table, into the folder
    ``target``: written under a temporary name, synced, renamed."""
    with atomic.atomic_path(target, directory=True) as tmp:
        for table, table_columns in columns.items():
            cols = [Column(c, t) for c, t in table_columns if t not in _NULL_TYPES]
            out = tmp / f"{table}.parquet"
            query = statements.text("rows_of_ingest", table=table, columns=cols)
            con.sql(query, params={"ingest_id": ingest_id}).write_parquet(str(out))
            _fsync(out)
    _fsync(target.parent)


def publish(store_path: str | Path, folder: str | Path | None = None) -> Published:
    """Bring the store's Parquet mirror up to its last committed refresh (see the module docstring).

    ``folder`` (default: the one the store remembers) becomes the store's mirror once published into; a folder that
    mirrors another store, one ahead of this store, or one holding other files is refused.
    """
    t_start = time.monotonic()
    path = Path(store_path)
    if not path.is_file():
        raise InputError(Problem(str(path), None, None, "store file does not exist"))
    with db.opened(path) as (_con, meta):
        remembered = meta.get(MIRROR_KEY)
    if folder is None:
        if not remembered:
            raise InputError(
                Problem(str(path), None, None, "the store has no Parquet mirror yet: ett store publish STORE DIR")
            )
        target = Path(remembered)
    else:
        target = Path(folder).resolve()
        if not meta.get(ID_KEY):
            remember(path, None)
    try:
        doc, written, rows, previous = _publish_into(path, target)
    except (OSError, duckdb.IOException) as exc:  # the folder cannot be written (a file in its place, a full disk)
        raise InputError(
            Problem(
                str(target),
                None,
                None,
                f"cannot write the Parquet mirror: {io_cause(exc)}; the mirror is as before (readers read it)",
            )
        ) from None
    if str(target) != remembered:  # a folder given becomes the store's mirror once it holds the store
        remember(path, target)
    return Published(
        folder=target,
        published_id=previous if doc is None else doc["published_id"],
        previous_id=previous,
        folders=written,
        rows=rows,
        seconds=time.monotonic() - t_start,
    )


def _publish_into(path: Path, target: Path) -> tuple[dict | None, list[int], int, int]:
    """Under the mirror's lock: clear a killed publish's leftovers, export, replace the pointer (see :func:`publish`);
    returns the new pointer (None: up to date), the folders and rows written, and the id published before."""
    target.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        pointer = read_local_pointer(target)
        if pointer is None:
            _check_empty(target)
        previous = int(pointer["published_id"]) if pointer else 0
        _clear_leftovers(target, previous)
        with db.opened(path) as (con, _meta):
            doc, written, rows = _export(con, path, target, pointer)
        if doc is not None:
            atomic.write_text(target / POINTER, pointer_text(doc))
            _fsync(target)
            db.step("published")
    return doc, written, rows, previous


def _export(
    con: duckdb.DuckDBPyConnection, path: Path, target: Path, pointer: dict | None
) -> tuple[dict | None, list[int], int]:
    """Under the mirror's lock, on one read of the store: the folders of the refreshes the pointer lacks, and the new
    pointer (None: the mirror is up to date)."""
    meta = db.meta(con, path)
    where = str(target / POINTER)
    if pointer is not None and pointer["store_id"] != meta.get(ID_KEY):
        raise InputError(
            Problem(where, None, "store_id", f"this folder mirrors another store than {path}; give a new folder")
        )
    ingests, removals = _committed(con)
    last = max([0, *ingests, *(r[0] for r in removals)])
    previous = int(pointer["published_id"]) if pointer else 0
    if previous > last:
        raise InputError(
            Problem(
                where,
                None,
                "published_id",
                f"the mirror is ahead of {path} (ingest {previous} published, the store's last is {last}): it mirrors "
                "an older copy of the store; give a new folder",
            )
        )
    if pointer is not None and previous == last:
        return None, [], 0
    # the tables the store holds (one a store made before it kept it lacks is left out of the pointer: no rows)
    columns = {t: list(db.columns(con, f"st.rows_{t}").items()) for t in db.row_tables(con)}
    counts: dict[int, int] = {}
    for table in columns:  # the rows of each refresh not published yet (the ids are a stored column: zone maps)
        for n, k in statements.rows(con, "unpublished_row_counts", {"published_id": previous}, table=table):
            counts[n] = counts.get(n, 0) + k
    written = sorted(n for n in counts if counts[n])
    for n in written:
        _write_folder(con, target / folder_name(n), n, columns)
    db.step("exported")
    sources = [r[0] for r in statements.rows(con, "sources_of", relation="st.rows_attempts")]
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "store": str(path.resolve()),
        "store_id": meta.get(ID_KEY),
        "published_id": last,
        "published_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "as_of_ms": int(meta["as_of_ms"]) if meta.get("as_of_ms") else None,
        "horizons": db.horizons(con),
        "phases": json.loads(meta["phases"]),
        "causes": db.kept_causes(meta),
        "synthetic": meta.get("synthetic") == "true",
        "description": meta.get("description", ""),
        "sources": sources,
        "removals": [{"id": i, "source": s} for i, s in removals],
        "folders": sorted({*(pointer["folders"] if pointer else []), *written}),
        "files": {
            **((pointer or {}).get("files") or {}),
            **{
                f"{folder_name(n)}/{f.name}": file_digest(f)
                for n in written
                for f in sorted((target / folder_name(n)).glob("*.parquet"))
            },
        },
        "rows": {t: statements.value(con, "row_count", relation=f"st.rows_{t}") for t in columns},
        "columns": {t: dict(c) for t, c in columns.items()},
        "labels": labels(con, "st.rows_jobs"),
    }
    return doc, written, sum(counts[n] for n in written)
