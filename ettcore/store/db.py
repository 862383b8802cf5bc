"""The store file itself: its tables, opening it (waiting, bounded, for another process), its metadata, its ids.

Every other module of :mod:`ettcore.store` opens a store through :func:`attach` and names its tables as listed here.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from ettcore.errors import REBUILD, InputError, Problem, io_cause
from ettcore.phases import PhaseMap
from ettcore.store import statements
from ettcore.store.statements import Column
from ettcore.trace.instants import DAY_MS, HOUR_MS
from ettcore.vocabulary import VOCABULARY, Vocabulary

FORMAT = "ett-store"
VERSION = 2
DEFAULT_SOURCE = "default"
# The stored attribution's grid, chosen when a store is made: a UTC day by default (daily, weekly and monthly trends
# are unions of days), or an hour (hourly and rolling-hour trends then read the store too, for about twice the
# attribution's time and rows: a job's wall time is cut at every hour)
GRIDS = {"day": DAY_MS, "hour": HOUR_MS}
GRID_MS = GRIDS["day"]
ROW_TABLES = VOCABULARY.tables  # the trace's tables, kept as rows_<table>
HASH_PROBE = "ett-store"  # hash() of this text is kept in the metadata: a DuckDB that hashes otherwise is refused
WAIT_S_DEFAULT = 60.0
_NULL_TYPES = ("NULL", '"NULL"')  # DuckDB's type of a column that is only NULL literals

# The per-job results the store keeps: result table -> the metric's table or view of the same rows (one a job and
# whatever else the table is keyed by).  KEYED_BY_ID: keyed by job_id (the others by job_key, the metric's
# hash(job_id) within a source).
RESULT_TABLES = {
    "res_metric_jobs": "metric_jobs",
    "res_metric_attempts": "metric_attempts",
    "res_attributed": "attributed_time",
    "res_job_metrics": "job_metrics",
    "res_job_components": "job_component_time",
    "res_job_causes": "job_cause_time",
    "res_job_pace": "job_pace",
    "res_train_stalls": "train_stalls",
}
LABELLED = ("res_metric_jobs", "res_job_metrics")  # the result tables that carry the jobs' labels
KEYED_BY_ID = {"res_job_metrics", "res_job_components", "res_job_causes", "res_train_stalls"}
# The fleet's sums the store keeps up to date: table -> the metric's view whose rows it sums (all of them whole
# numbers, so adding a job's rows and subtracting them again is exact), and the columns it is keyed by.
SUM_TABLES = {
    "res_fleet_slots": ("fleet_slots", ("slot_ms", "component")),
    "res_interruption_slots": ("interruption_slots", ("slot_ms",)),
}

# The named points of a refresh, a removal, a compaction and a Parquet publish (``exported``: the new folders
# written; ``published``: the mirror's pointer replaced), in order.  Test hooks: ETT_STORE_KILL_AT=<name> makes the
# process kill itself (SIGKILL) on reaching one (the kill-safety test); ETT_STORE_HOLD_AT=<name> makes it wait there
# ETT_STORE_HOLD_S seconds (default 5), holding the store (the concurrency tests); ETT_STORE_FILL_AT=<name> fills the
# file system of the file ETT_STORE_FILL_FILE names until no byte is left (the full-disk test).
# ETT_STORE_PROFILE=1 prints the seconds spent since the previous point, on stderr.
STEPS = (
    "attached",
    "compared",
    "deleted",
    "inserted",
    "attributed",
    "running",
    "summed",
    "recorded",
    "committed",
    "checkpointed",
    "removed",
    "copied",
    "swapped",
    "exported",
    "published",
)
_clock = {"t": time.monotonic()}


def step(name: str) -> None:
    """A named point of a store operation (:data:`STEPS`): the kill hook and the profile (see above)."""
    if os.environ.get("ETT_STORE_PROFILE"):
        now = time.monotonic()
        print(f"ett store: {name} +{now - _clock['t']:.2f} s", file=sys.stderr, flush=True)
        _clock["t"] = now
    if os.environ.get("ETT_STORE_KILL_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get("ETT_STORE_HOLD_AT") == name:
        time.sleep(float(os.environ.get("ETT_STORE_HOLD_S", "5")))
    if os.environ.get("ETT_STORE_FILL_AT") == name:
        _fill(Path(os.environ["ETT_STORE_FILL_FILE"]))


def _fill(filler: Path) -> None:
    """Write ``filler`` until its file system has no byte left (the full-disk test hook)."""
    block = b"\0" * (1 << 16)
    with filler.open("ab", buffering=0) as f:
        try:
            while f.write(block):
                pass
        except OSError:
            pass


def wait_seconds() -> float:
    """How long a command waits for a store another process holds (``ETT_STORE_WAIT``, seconds; default 60)."""
    try:
        return float(os.environ.get("ETT_STORE_WAIT", WAIT_S_DEFAULT))
    except ValueError:
        return WAIT_S_DEFAULT


def literal(path: Path) -> str:
    """A SQL string literal of a path (ATTACH takes no bound parameter)."""
    return "'" + str(path).replace("'", "''") + "'"


def damaged(path: str | Path, exc: BaseException) -> InputError | None:
    """The one line of a store file found damaged while it was read (a block failing DuckDB's checksum, a file
    shorter than its own index); None for another error."""
    text = str(exc)
    if "Corrupt database file" in text:
        why = "a block of the file fails its checksum"
    elif "Could not read enough bytes" in text:
        why = "the file is shorter than its own index says (truncated)"
    else:
        return None
    return InputError(Problem(str(path), None, None, f"damaged: {why}; no answer given{REBUILD}"))


def attach(con: duckdb.DuckDBPyConnection, path: Path, read_only: bool, name: str = "st", wait: bool = True) -> None:
    """ATTACH the store as ``name``; while another process holds it, wait (bounded, saying so once), then refuse
    (at once without ``wait``)."""
    _clock["t"] = time.monotonic()
    mode = " (READ_ONLY)" if read_only else ""
    if not read_only:
        # a checkpoint never merges row groups thinned by deletes (DuckDB's vacuum): that rewrites whole tables, the
        # cost of the store's size, not of what changed; ett store compact rewrites the file instead.  And rows are
        # appended in any order (no stored table has one; the reading side sorts): in insertion order, DuckDB's
        # parallel writers leave part-filled row groups that the next checkpoint rewrites, twice the work and the
        # file (9.4 s more and 167 MB for 85 MB, 4.2 M spans)
        con.execute("SET max_vacuum_tasks = 0")
        con.execute("SET preserve_insertion_order = false")

    def attempt() -> bool:
        try:
            con.execute(f"ATTACH {literal(path)} AS {name}{mode}")
            return True
        except duckdb.IOException as exc:
            text = str(exc)
            if "No space left on device" in text:  # the write-ahead log of a commit, not yet in the file
                raise InputError(
                    Problem(str(path), None, None, f"cannot open it: {io_cause(exc)}; free space, then run it again")
                ) from None
            if "lock" not in text.lower():
                raise InputError(
                    Problem(str(path), None, None, f"not a readable store: {io_cause(exc)}{REBUILD}")
                ) from None
            return False
        except duckdb.OutOfMemoryException:
            raise  # the memory budget, not the file: said as such (ettcore.cli.main)
        except duckdb.Error as exc:
            raise InputError(
                Problem(str(path), None, None, f"damaged or not a store: {io_cause(exc)}{REBUILD}")
            ) from None

    held = "held by another process (a refresh or a reader)"
    retry_while_held(
        attempt,
        str(path),
        f"the store is {held} for more than {wait_seconds():g} s",
        f"{path} is {held}",
        wait_seconds() if wait else 0.0,
    )


def retry_while_held(attempt: Callable[[], bool], where: str, refusal: str, waiting: str, limit_s: float) -> None:
    """Call ``attempt`` until it gets what it asks for (True); while another process holds it (False), wait up to
    ``limit_s`` seconds, saying ``waiting`` once on stderr, then refuse in one line naming ``where``."""
    deadline = time.monotonic() + limit_s
    said = False
    while not attempt():
        if time.monotonic() >= deadline:
            raise InputError(
                Problem(where, None, None, f"{refusal}; try again later (ETT_STORE_WAIT sets the wait)")
            ) from None
        if not said:
            print(f"ett: {waiting}; waiting up to {wait_seconds():g} s", file=sys.stderr)
            said = True
        time.sleep(0.2)


@contextmanager
def opened(path: Path, read_only: bool = True) -> Iterator[tuple[duckdb.DuckDBPyConnection, dict[str, str]]]:
    """A connection with the store at ``path`` attached as ``st`` (:func:`attach`: waiting, bounded, while another
    process holds it) and its checked metadata (:func:`meta`); closed on leaving."""
    con = duckdb.connect()
    try:
        attach(con, path, read_only=read_only)
        yield con, meta(con, path)
    finally:
        con.close()


def has_table(con: duckdb.DuckDBPyConnection, table: str, db: str = "st") -> bool:
    return bool(statements.value(con, "table_exists", {"database": db, "table": table}))


def hash_probe(con: duckdb.DuckDBPyConnection) -> str:
    """This DuckDB's hash() of :data:`HASH_PROBE`, as the metadata keeps it."""
    return str(statements.value(con, "hash_probe", {"probe": HASH_PROBE}))


def meta(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, str]:
    """The store's metadata; a store of another format version, or written by a DuckDB that hashes otherwise, is
    refused."""
    try:
        rows = statements.rows(con, "metadata")
    except duckdb.Error as exc:
        raise damaged(path, exc) or InputError(
            Problem(str(path), None, None, f"damaged or not a store: {io_cause(exc)}{REBUILD}")
        ) from None
    m = dict(rows)
    if m.get("format") != FORMAT:
        raise InputError(Problem(str(path), None, "format", f"not an ett store (format {m.get('format')!r})"))
    if m.get("version") != str(VERSION):
        raise InputError(
            Problem(
                str(path),
                None,
                "version",
                f"store format version {m.get('version')!r}; this ett reads version {VERSION} only "
                "(ingest the sources into a new store)",
            )
        )
    if m.get("hash_probe") != hash_probe(con):
        raise InputError(
            Problem(
                str(path),
                None,
                "hash_probe",
                "the store was written by a DuckDB whose hash() differs from this one's (the store keys jobs and "
                "compares rows by it); ingest the sources into a new store",
            )
        )
    return m


def grid_of(grid: str | None) -> int:
    """The grid (ms) a store is made with: ``day`` (default) or ``hour``."""
    if grid is None:
        return GRID_MS
    if grid not in GRIDS:
        raise InputError(Problem("--grid", None, "grid", f"unknown grid {grid!r}; choose one of: {', '.join(GRIDS)}"))
    return GRIDS[grid]


def create(
    con: duckdb.DuckDBPyConnection, phase_map: PhaseMap, grid_ms: int = GRID_MS, vocabulary: Vocabulary = VOCABULARY
) -> None:
    """The metadata tables of a new store (the rows and results tables take the loader's and the metric's columns
    on the first ingest); the metadata keeps the phase map and the causes a user's causes file added to
    ``vocabulary`` (:func:`kept_causes`)."""
    statements.run(con, "create_ett_store")
    pairs = {
        "format": FORMAT,
        "version": str(VERSION),
        "grid_ms": str(grid_ms),
        "phases": json.dumps(phase_map.rows()),
        "causes": json.dumps(vocabulary.added_entries()),
        "as_of_ms": "",
        "synthetic": "false",
        "description": "",
        "hash_probe": hash_probe(con),
    }
    statements.run(con, "insert_metadata", {"keys": list(pairs), "values": list(pairs.values())})
    for definition in (
        "create_ett_ingests",
        "create_ett_removals",
        "create_ett_notes",
        "create_ett_skipped",
        "create_ett_labels",
        "create_ett_jobs",
    ):
        statements.run(con, definition)


def row_tables(con: duckdb.DuckDBPyConnection) -> tuple[str, ...]:
    """The :data:`ROW_TABLES` the store holds a ``rows_<table>`` of: a store made before it kept a table (a trace's
    ``rank_timing``) has none until an ingest brings one, and is read as holding no row of it."""
    return tuple(t for t in ROW_TABLES if has_table(con, f"rows_{t}"))


def add_digest_columns(con: duckdb.DuckDBPyConnection) -> None:
    """The digest columns (``n_<table>``, ``h_<table>``) of ``ett_jobs`` that a store made before it kept a table
    lacks, each 0 for the jobs stored then (they hold no row of it), so that the next ingest finds them unchanged
    unless the source now has rows of that table."""
    have = {c.lower() for c in columns(con, "st.ett_jobs")}
    for table in ROW_TABLES:
        for column in (Column(f"n_{table}", "BIGINT"), Column(f"h_{table}", "HUGEINT")):
            if column.name not in have:
                statements.run(con, "add_digest_column", column=[column])


def kept_causes(m: dict[str, str]) -> list[dict]:
    """The causes a user's causes file added that the store with metadata ``m`` keeps (those of its first ingest's
    ``--causes-file``; none in a store made before stores kept them), as
    :meth:`~ettcore.vocabulary.Vocabulary.added_entries` writes them."""
    return json.loads(m.get("causes") or "[]")


def vocabulary_of(m: dict[str, str], path: Path) -> Vocabulary:
    """The vocabulary the store with metadata ``m`` was ingested with: the package's and the causes it keeps."""
    return VOCABULARY.with_cause_entries(kept_causes(m), f"{path} (its causes)")


def vocabulary_at(path: str | Path) -> Vocabulary:
    """The vocabulary the store at ``path`` was ingested with (:func:`vocabulary_of`); the package's before its first
    ingest (a new file, or a DuckDB file without a store's tables yet)."""
    p = Path(path)
    if not p.exists():
        return VOCABULARY
    con = duckdb.connect()
    try:
        attach(con, p, read_only=True)
        return vocabulary_of(meta(con, p), p) if has_table(con, "ett_store") else VOCABULARY
    finally:
        con.close()


def next_ingest_id(con: duckdb.DuckDBPyConnection) -> int:
    """The next id of the one sequence ingests and removals share: one more than the largest of either."""
    return statements.value(con, "next_ingest_id")


def columns(con: duckdb.DuckDBPyConnection, relation: str) -> dict[str, str]:
    return {r[0]: r[1] for r in con.execute(f"DESCRIBE {relation}").fetchall()}


def merge_schema(con: duckdb.DuckDBPyConnection, target: str, source_relation: str) -> bool:
    """Create ``st.<target>`` like ``source_relation`` (after the columns ``source`` and ``ingest_id``), or add the
    columns it lacks: the store keeps whatever typed columns the loader produces.  True when an existing table's
    columns changed."""
    if not has_table(con, target):
        statements.run(con, "create_store_table", target=target, relation=source_relation)
        return False
    have = {c.lower(): (c, t) for c, t in columns(con, f"st.{target}").items()}
    changed = False
    for col, dtype in columns(con, source_relation).items():
        if col.lower() not in have:
            statements.run(con, "add_column", target=target, column=[Column(col, dtype)])
            changed = True
        elif have[col.lower()][1] in _NULL_TYPES and dtype not in _NULL_TYPES:
            # a column no row had a value for (e.g. gpus of a trace without a jobs table) takes the first real type
            statements.run(con, "retype_column", target=target, column=[Column(have[col.lower()][0], dtype)])
            changed = True
    return changed


def horizons(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Each source's horizon (epoch ms), the instant its running jobs are measured to: the latest instant of its jobs
    (as a trace's default as-of), or a later snapshot time given to one of its ingests since its last removal
    (``source_horizons.sql``); in source order.  Two clusters polled at different times are each known only up to
    their own latest snapshot."""
    return {source: int(ms) for source, ms in statements.rows(con, "source_horizons") if ms is not None}


def as_of_ms(con: duckdb.DuckDBPyConnection, given: int | None = None) -> int | None:
    """The store's analysis time: the latest of its sources' horizons (:func:`horizons`), or ``given`` (this
    ingest's snapshot time) where later; None for a store without jobs."""
    times = [*horizons(con).values(), *([] if given is None else [given])]
    return max(times) if times else None


def set_meta(con: duckdb.DuckDBPyConnection, key: str, value: Any) -> None:
    statements.run(con, "update_metadata", {"key": key, "value": "" if value is None else str(value)})


# What DuckDB raises when it cannot write the store's file or its write-ahead log (a full disk, a file it may not
# write, a device gone): a fault of the deployment, said in one line, not a bug's traceback
WRITE_FAULTS = (duckdb.IOException, duckdb.TransactionException, duckdb.FatalException)


def not_committed(path: Path, what: str, exc: BaseException) -> InputError:
    """The one line of a store write that failed before its commit: nothing of it is in the store."""
    return InputError(
        Problem(
            str(path),
            None,
            None,
            f"{what} is not committed: {io_cause(exc)}; the store is as before (free space, then run it again)",
        )
    )


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection, path: Path, what: str = "the refresh") -> Iterator[None]:
    """One transaction on the store at ``path``: committed when the block ends (step ``committed``), rolled back when
    it raises; a write DuckDB cannot do (:data:`WRITE_FAULTS`, a full disk) is one line saying ``what`` is not
    committed."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException as exc:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:
            pass
        if isinstance(exc, WRITE_FAULTS):
            raise not_committed(path, what, exc) from None
        raise
    step("committed")


def checkpoint(con: duckdb.DuckDBPyConnection, path: Path, what: str = "the refresh") -> None:
    """Write the committed write-ahead log into the store file (DuckDB would at DETACH: a reader then opens a
    checkpointed file; step ``checkpointed``).  Where it cannot (a full disk), the commit stands in the log beside the
    file, which readers replay and the next write finishes: one line says so."""
    try:
        con.execute("CHECKPOINT st")
    except WRITE_FAULTS as exc:
        raise InputError(
            Problem(
                str(path),
                None,
                None,
                f"{what} is committed, but not yet written into the store file: {io_cause(exc)}; it is kept in "
                f"{path.name}.wal beside it, readers see it, and the next ett ingest or ett store command that "
                "writes the store finishes writing it (free space first)",
            )
        ) from None
    step("checkpointed")


def detach(con: duckdb.DuckDBPyConnection, name: str = "st") -> None:
    """DETACH the store and put back the settings a writer's :func:`attach` changed (the connection may be a
    trace's, used on)."""
    try:
        con.execute(f"DETACH {name}")
    except duckdb.Error:
        pass
    con.execute("RESET max_vacuum_tasks")
    con.execute("RESET preserve_insertion_order")
