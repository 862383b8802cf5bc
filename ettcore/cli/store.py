"""``ett store info|remove-source|compact STORE``: a fleet store's housekeeping (:mod:`ettcore.store`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ettcore import store
from ettcore.cli import mirror
from ettcore.cli.output import format_table
from ettcore.errors import InputError, Problem
from ettcore.store import db
from ettcore.trace.instants import iso


def run_info(args: argparse.Namespace) -> int:
    path = Path(args.store)
    if not path.is_file():
        raise InputError(Problem(str(path), None, None, "store file does not exist"))
    con = duckdb.connect()
    store.attach(con, path, read_only=True)
    meta = store.meta(con, path)
    print(f"store {path}: format {meta['format']} version {meta['version']}, {path.stat().st_size} bytes")
    jobs = con.execute("SELECT source, count(*) FROM st.ett_jobs GROUP BY 1 ORDER BY 1").fetchall()
    print("sources: " + (", ".join(f"{s} ({n} jobs)" for s, n in jobs) or "none"))
    print(f"analysis time: {iso(int(meta['as_of_ms'])) if meta.get('as_of_ms') else 'none'}")
    for source, ms in store.horizons(con).items():  # each source's running jobs are measured to its own
        print(f"horizon of {source}: {iso(ms)}")
    print(causes_text(meta, path))
    ingests = con.sql(
        "SELECT ingest_id, source, ingested_at, snapshot_ms, jobs_read, new, changed, unchanged, skipped_jobs, inputs "
        "FROM st.ett_ingests ORDER BY ingest_id"
    ).pl()
    print(format_table(ingests.with_columns(pl.col("ingested_at").dt.strftime("%Y-%m-%dT%H:%M:%SZ")), ingests.columns))
    removals = con.sql("SELECT ingest_id, source, removed_at, jobs FROM st.ett_removals ORDER BY ingest_id").pl()
    if removals.height:
        print("removals:")
        print(
            format_table(
                removals.with_columns(pl.col("removed_at").dt.strftime("%Y-%m-%dT%H:%M:%SZ")), removals.columns
            )
        )
    return 0


def causes_text(meta: dict[str, str], path: Path) -> str:
    """The causes the store keeps, for ``ett store info``: "the built-in causes", or those its first ingest's
    ``--causes-file`` added, one row a cause with its group and its display category (the file's, else the fallback
    of :attr:`~ettcore.vocabulary.Vocabulary.category_of`)."""
    kept = db.kept_causes(meta)
    if not kept:
        return "causes: the built-in causes (ettcore/defaults/causes.yaml)"
    v = db.vocabulary_of(meta, path)
    rows = pl.DataFrame(
        {
            "cause": [e["cause"] for e in kept],
            "group": [e["group"] for e in kept],
            "category": [v.category_of[e["cause"]] for e in kept],
        }
    )
    head = f"causes: the built-in causes and {len(kept)} of its first ingest's --causes-file (kept in the store):"
    return head + "\n" + format_table(rows, rows.columns)


def run_remove(args: argparse.Namespace) -> int:
    r = store.remove_source(args.store, args.source)
    print(
        f"removed source {r.source} from {r.store} (removal {r.ingest_id}): {r.jobs} job(s); "
        f"the store's analysis time {iso(r.as_of_ms)} (each source keeps its own horizon)"
    )
    return 0


def run_compact(args: argparse.Namespace) -> int:
    c = store.compact(args.store)
    print(f"compacted {c.store}: {c.bytes_before} -> {c.bytes_after} bytes")
    return 0


def register(sub: Any) -> None:
    """Add ``ett store``."""
    p = sub.add_parser("store", help="a fleet store's housekeeping")
    kinds = p.add_subparsers(dest="store_command", metavar="COMMAND", required=True)
    i = kinds.add_parser(
        "info", help="sources, horizons, the causes it keeps, ingests (times and counts), removals, jobs and size"
    )
    i.add_argument("store")
    i.set_defaults(func=run_info)
    r = kinds.add_parser(
        "remove-source", help="remove every job of a source (one transaction; the file shrinks on compact)"
    )
    r.add_argument("store")
    r.add_argument("source", metavar="NAME", help="the source name given to ett ingest --source (default: default)")
    r.set_defaults(func=run_remove)
    c = kinds.add_parser("compact", help="rewrite the store into a smaller file (deleted rows leave space behind)")
    c.add_argument("store")
    c.set_defaults(func=run_compact)
    mirror.register_publish(kinds)
