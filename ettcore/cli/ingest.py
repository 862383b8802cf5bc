"""``ett ingest STORE SOURCE...``: refresh a fleet store (:mod:`ettcore.store`) with a trace or a sacct export."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from ettcore import store
from ettcore.cli import mirror
from ettcore.cli.imports import _as_of_seconds
from ettcore.errors import InputError, Problem
from ettcore.importers.frames import write_import
from ettcore.importers.slurm import import_sacct
from ettcore.trace.instants import iso
from ettcore.trace.load import load_trace, parse_as_of

KINDS = ("auto", "trace", "sacct")


def _kind(paths: list[str], kind: str) -> str:
    if kind != "auto":
        return kind
    p = Path(paths[0])
    if p.is_dir() or p.suffix == ".duckdb":
        return "trace"
    if p.is_file():
        head = p.read_bytes()[:4096].decode("utf-8", "replace").lstrip()
        if head.startswith("{") or head.lower().startswith("jobid|"):
            return "sacct"
    raise InputError(Problem(paths[0], None, None, "cannot tell what this source is; give --kind trace or sacct"))


def summary_lines(r: store.Refresh) -> list[str]:
    """What a refresh prints: counts, the store's analysis time, and a note per job replaced."""
    lines = [
        f"ingest {r.ingest_id} into {r.store} (source {r.source}): {r.jobs_read} job(s) read: {len(r.new)} new, "
        f"{len(r.changed) + r.running} changed ({r.running} running job(s) measured to the new analysis time), "
        f"{r.unchanged} unchanged; {r.skipped} left out by --skip-invalid; analysis time {iso(r.as_of_ms)}; "
        f"{r.seconds:.2f} s"
    ]
    lines += [f"note: {n}" for n in r.notes]
    return lines


def run(args: argparse.Namespace) -> int:
    kind = _kind(args.sources, args.kind)
    snapshot = parse_as_of(args.as_of)
    if kind == "trace":
        if len(args.sources) != 1:
            raise InputError(Problem(args.sources[1], None, None, "give one trace a refresh"))
        if store.is_store(args.sources[0]):
            raise InputError(Problem(args.sources[0], None, None, "is a store, not a trace"))
        trace = load_trace(args.sources[0], mapping=args.mapping, skip_invalid=args.skip_invalid)
        r = store.ingest_trace(args.store, trace, source=args.source, inputs=args.sources[0], snapshot_ms=snapshot)
    else:
        frames, report = import_sacct(
            args.sources,
            recorder_dir=args.recorder,
            gpus=args.gpus,
            keep_users=args.keep_users,
            timezone=args.timezone,
            as_of=_as_of_seconds(args.as_of),
            timeout_as=args.timeout_as,
        )
        with tempfile.TemporaryDirectory(prefix="ett-ingest-") as tmp:
            out = write_import(Path(tmp) / "trace", frames, report)
            trace = load_trace(out, mapping=args.mapping, skip_invalid=args.skip_invalid)
            r = store.ingest_trace(
                args.store, trace, source=args.source, inputs=" ".join(args.sources), snapshot_ms=snapshot
            )
    for line in summary_lines(r):
        print(line)
    mirror.publish_after_refresh(args.store, args.parquet)
    return 0


def register(sub: Any) -> None:
    """Add ``ett ingest``."""
    p = sub.add_parser("ingest", help="refresh a fleet store with a trace or a sacct export (incremental)")
    p.add_argument("store", help="store file (a DuckDB database; created by the first ingest)")
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="a trace folder or DuckDB trace file, or sacct exports")
    p.add_argument("--kind", choices=KINDS, default="auto", help="what SOURCE is (default: told from the files)")
    p.add_argument("--source", default=store.DEFAULT_SOURCE, help="source name: jobs are keyed by source and id")
    p.add_argument("--as-of", metavar="T", help="when the snapshot was taken (ISO-8601 or epoch seconds)")
    p.add_argument("--skip-invalid", action="store_true", help="leave out jobs with problems (recorded in the store)")
    p.add_argument("--mapping", metavar="FILE", help="phase/owner mapping file (the same for every ingest of a store)")
    mirror.add_parquet_arg(p)
    p.add_argument("--recorder", metavar="RUN_DIR", help="sacct: recorder folder of the jobs' in-job spans")
    p.add_argument("--gpus", type=int, default=None, help="sacct: GPUs of a job whose AllocTRES has no gres/gpu")
    p.add_argument("--keep-users", action="store_true", help="sacct: keep user names (default: a stable hash)")
    p.add_argument("--timezone", default="UTC", help="sacct: zone of zone-less times (default UTC)")
    p.add_argument("--timeout-as", choices=("failure", "cancelled"), default="failure", help="sacct: TIMEOUT as")
    p.set_defaults(func=run)
