"""The format of a fleet store's Parquet mirror: one definition for its writer and its reader.

A fleet store (:mod:`ettcore.store`) is one DuckDB file, which Spark cannot read.  Its **Parquet mirror** is a folder
that :mod:`ettcore.store.parquet_mirror` writes after each committed refresh and Spark reads from any path or URI
(:mod:`ettcore.engines.spark.mirror`):

``ingest-<N>/jobs.parquet``, ``attempts.parquet``, ``spans.parquet``
    the rows refresh ``N`` inserted and the store still held when the folder was written: every column of the
    store's rows table (``source``, ``ingest_id``, ``_file``, ``_row``, the loader's typed columns, the labels) but
    one DuckDB typed NULL (no value anywhere).  A folder is written under a temporary name and renamed once complete;
    a refresh that inserted no row has none.  Once the pointer names a folder, the folder never changes.
``CURRENT.json`` (:data:`POINTER`)
    the last published state, replaced atomically once its folders are complete: ``published_id`` (the last refresh
    or source removal it includes), ``folders`` (the ids whose folder holds rows), ``removals`` (source and id), the
    store's analysis time ``as_of_ms`` and each source's ``horizons`` (source: epoch ms, the instant its running jobs
    are measured to; a pointer written before has none, and its reader measures every job to ``as_of_ms``), its
    ``phases``, the ``causes`` a user's causes file added that the store keeps (as
    :meth:`~ettcore.vocabulary.Vocabulary.added_entries` writes them; none in a pointer written before), ``synthetic``
    and ``description``, its ``sources`` (of its
    attempts, as the store's reader counts them), the count of current ``rows`` a table, each table's ``columns``
    (name: DuckDB type, in the store's order), the jobs' ``labels`` (as the store's reader tells them) and
    ``store_id`` (which store it mirrors); and ``files``, each Parquet file of the named folders (``ingest-<N>/
    <table>.parquet``) with its length in bytes and its CRC-32, which a local mirror is checked against before
    Spark reads it (:func:`check_files`: a damaged file is refused, never read into a wrong answer; a pointer
    written before ``files`` existed is read unchecked).

The **current version** of a job (source, ``job_id``) is its rows of the highest ingest id among the named folders,
less the rows of a source removed after them (a removal's id comes from the ingests' sequence): what the store holds,
because a refresh replaces a job as a whole and every row of the new version carries the new id.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from ettcore.errors import InputError, Problem
from ettcore.trace.load import is_uri
from ettcore.vocabulary import VOCABULARY

POINTER = "CURRENT.json"
FORMAT = "ett-parquet-mirror"
VERSION = 1
ROW_TABLES = VOCABULARY.tables
POINTER_KEYS = ("published_id", "folders", "removals", "as_of_ms", "sources", "rows", "columns", "labels", "store_id")
FOLDER_PREFIX = "ingest-"


def folder_name(ingest_id: int) -> str:
    """The folder of the rows refresh ``ingest_id`` inserted."""
    return f"{FOLDER_PREFIX}{int(ingest_id)}"


def folder_id(name: str) -> int | None:
    """The ingest id of a folder name (None: not a mirror folder's name)."""
    tail = name[len(FOLDER_PREFIX) :] if name.startswith(FOLDER_PREFIX) else ""
    return int(tail) if tail.isdigit() else None


def check_pointer(doc: Any, where: str) -> dict:
    """The pointer ``doc`` read from ``where``, if it is one this ett reads; otherwise a clear :class:`InputError`."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(Problem(where, None, "format", f"not the pointer of an ett Parquet mirror ({FORMAT})"))
    if doc.get("version") != VERSION:
        raise InputError(
            Problem(
                where,
                None,
                "version",
                f"Parquet mirror version {doc.get('version')!r}; this ett reads version {VERSION} only "
                "(publish the store into a new folder: ett store publish STORE DIR)",
            )
        )
    missing = [k for k in POINTER_KEYS if k not in doc]
    if missing:
        raise InputError(Problem(where, None, missing[0], f"damaged mirror pointer: no {missing[0]!r}"))
    return doc


def read_local_pointer(folder: str | Path) -> dict | None:
    """The pointer of the local mirror ``folder``, checked; None when it has none yet."""
    path = Path(folder) / POINTER
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(path), None, None, f"damaged mirror pointer: {exc}")) from None
    return check_pointer(doc, str(path))


def is_mirror(path: Any) -> bool:
    """True when the local folder ``path`` holds a mirror's pointer (a URI is told on Spark:
    :func:`ettcore.engines.spark.mirror.is_mirror_uri`)."""
    return not is_uri(path) and (Path(str(path)) / POINTER).is_file()


def file_digest(path: Path) -> list[int]:
    """A Parquet file's length in bytes and CRC-32 (zlib's), as the pointer's ``files`` keep them."""
    crc, size = 0, 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            crc, size = zlib.crc32(chunk, crc), size + len(chunk)
    return [size, crc]


def check_files(folder: str | Path, doc: dict) -> None:
    """Refuse a local mirror whose Parquet files differ from what their publish wrote (length or CRC-32): damaged
    or replaced since.  One line naming the file, and how to recover."""
    root = Path(folder)
    for name, want in (doc.get("files") or {}).items():
        f = root / name
        try:
            got = file_digest(f)
        except OSError as exc:
            got, why = None, f"cannot be read ({exc.strerror or exc})"
        else:
            why = f"its {'length' if got[0] != want[0] else 'content (CRC-32)'} differs from what was published"
        if got != list(want):
            raise InputError(
                Problem(
                    str(f),
                    None,
                    None,
                    f"damaged Parquet mirror: {why}; no answer given; publish the store into a new folder (ett store "
                    "publish STORE NEWDIR) and read that one",
                )
            )


def pointer_text(doc: dict) -> str:
    """The pointer as written: JSON, keys in the writer's order (``columns`` keep the store's column order)."""
    return json.dumps(doc, indent=1) + "\n"
