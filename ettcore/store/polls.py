"""What a store knows about its polls of Slurm (``ett ingest STORE --slurm``): read-only queries.

A poll is an ingest whose ``ett_ingests.inputs`` starts with :data:`POLL_INPUTS`; its ``snapshot_ms`` is when its
``sacct`` ran.  The next poll of the same source asks for what changed since then (less an overlap margin), and for
every job of the source the store still holds open (an attempt without an end: running, or requeued and waiting),
by its Slurm id, until it ends.
"""

from __future__ import annotations

from pathlib import Path

from ettcore.store import statements
from ettcore.store.db import columns, has_table, opened
from ettcore.store.statements import columns_of
from ettcore.trace.instants import iso

POLL_INPUTS = "sacct --slurm"


def poll_inputs(since_ms: int, open_asked: int, window_jobs: int) -> str:
    """What a poll records as its ingest's inputs (``ett store info`` shows it)."""
    return (
        f"{POLL_INPUTS}: jobs from {iso(since_ms)} ({window_jobs}), "
        f"open jobs asked by id ({open_asked} more), every run of each"
    )


def last_poll_ms(path: str | Path, source: str) -> int | None:
    """When the last poll of ``source`` ran ``sacct`` (epoch ms), or None when it has never been polled."""
    if not Path(path).exists():  # before the store's first ingest
        return None
    with opened(Path(path)) as (con, _meta):
        got = statements.value(con, "last_poll", {"source": source, "poll_inputs": POLL_INPUTS})
    return None if got is None else int(got)


def open_jobs(path: str | Path, source: str) -> list[str]:
    """The Slurm ids (``slurm_job_id``, else the job id) of the jobs of ``source`` with an attempt without an end."""
    if not Path(path).exists():  # before the store's first ingest
        return []
    with opened(Path(path)) as (con, _meta):
        if not has_table(con, "rows_attempts"):
            return []
        # the jobs table's slurm_job_id where the store has that column (else NULL: the job id)
        slurm_id = columns_of({"slurm_job_id": "VARCHAR"}, present=columns(con, "st.rows_jobs"))
        rows = statements.rows(con, "open_slurm_jobs", {"source": source}, slurm_job_id=slurm_id)
    return [r[0] for r in rows]
