"""``ett store info STORE``: a fleet store's sources, ingests, jobs and size (:mod:`ettcore.store`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ettcore import store
from ettcore.cli import mirror
from ettcore.cli.output import format_table


def run_info(args: argparse.Namespace) -> int:
    path = Path(args.store)
    if not path.is_file():
        from ettcore.errors import InputError, Problem

        raise InputError(Problem(str(path), None, None, "store file does not exist"))
    con = duckdb.connect()
    store._attach(con, path, read_only=True)
    meta = store._meta(con, path)
    print(f"store {path}: format {meta['format']} version {meta['version']}, {path.stat().st_size} bytes")
    jobs = con.execute("SELECT source, count(*) FROM st.res_job_metrics GROUP BY 1 ORDER BY 1").fetchall()
    print("sources: " + (", ".join(f"{s} ({n} jobs)" for s, n in jobs) or "none"))
    ingests = con.sql(
        "SELECT ingest_id, source, ingested_at, snapshot_ms, jobs_read, new, changed, unchanged, skipped_jobs, inputs "
        "FROM st.ett_ingests ORDER BY ingest_id"
    ).pl()
    print(format_table(ingests.with_columns(pl.col("ingested_at").dt.strftime("%Y-%m-%dT%H:%M:%SZ")), ingests.columns))
    return 0


def register(sub: Any) -> None:
    """Add ``ett store``."""
    p = sub.add_parser("store", help="a fleet store's housekeeping")
    kinds = p.add_subparsers(dest="store_command", metavar="COMMAND", required=True)
    i = kinds.add_parser("info", help="sources, ingests (times and counts), jobs and size")
    i.add_argument("store")
    i.set_defaults(func=run_info)
    mirror.register_publish(kinds)
