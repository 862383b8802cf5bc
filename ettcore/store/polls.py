"""What a store knows about its polls of Slurm (``ett ingest STORE --slurm``): read-only queries.

A poll is an ingest whose ``ett_ingests.inputs`` starts with :data:`POLL_INPUTS`; its ``snapshot_ms`` is when its
``sacct`` ran.  The next poll of the same source asks for what changed since then (less an overlap margin), and for
every job of the source the store still holds open (an attempt without an end: running, or requeued and waiting),
by its Slurm id, until it ends.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ettcore.store.db import attach, meta
from ettcore.trace.instants import iso

POLL_INPUTS = "sacct --slurm"


def poll_inputs(since_ms: int, open_asked: int, window_jobs: int) -> str:
    """What a poll records as its ingest's inputs (``ett store info`` shows it)."""
    return (
        f"{POLL_INPUTS}: jobs from {iso(since_ms)} ({window_jobs}), "
        f"open jobs asked by id ({open_asked} more), every run of each"
    )


def _read(path: Path) -> duckdb.DuckDBPyConnection | None:
    """The store attached read-only as ``st`` (waiting, bounded, while a refresh holds it); None before its first
    ingest."""
    if not path.exists():
        return None
    con = duckdb.connect()
    attach(con, path, read_only=True)
    meta(con, path)
    return con


def _has(con: duckdb.DuckDBPyConnection, table: str, column: str | None = None) -> bool:
    q = "SELECT count(*) FROM duckdb_columns() WHERE database_name = 'st' AND table_name = $t"
    params = {"t": table}
    if column is not None:
        q += " AND column_name = $c"
        params["c"] = column
    return bool(con.execute(q, params).fetchall()[0][0])


def last_poll_ms(path: str | Path, source: str) -> int | None:
    """When the last poll of ``source`` ran ``sacct`` (epoch ms), or None when it has never been polled."""
    con = _read(Path(path))
    if con is None:
        return None
    try:
        row = con.execute(
            "SELECT max(snapshot_ms) FROM st.ett_ingests WHERE source = $s AND starts_with(inputs, $p)",
            {"s": source, "p": POLL_INPUTS},
        ).fetchall()
        return None if row[0][0] is None else int(row[0][0])
    finally:
        con.close()


def open_jobs(path: str | Path, source: str) -> list[str]:
    """The Slurm ids (``slurm_job_id``, else the job id) of the jobs of ``source`` with an attempt without an end."""
    con = _read(Path(path))
    if con is None:
        return []
    try:
        if not _has(con, "rows_attempts"):
            return []
        raw = "j.slurm_job_id" if _has(con, "rows_jobs", "slurm_job_id") else "NULL"
        rows = con.execute(
            f"SELECT DISTINCT coalesce(CAST({raw} AS VARCHAR), a.job_id) AS id FROM st.rows_attempts AS a "
            "LEFT JOIN st.rows_jobs AS j ON j.source = a.source AND j.job_id = a.job_id "
            "WHERE a.source = $s AND a.end_ms IS NULL ORDER BY id",
            {"s": source},
        ).fetchall()
        return [r[0] for r in rows]
    finally:
        con.close()
