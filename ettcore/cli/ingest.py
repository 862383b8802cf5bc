"""``ett ingest STORE SOURCE...`` and ``ett ingest STORE --slurm``: refresh a fleet store (:mod:`ettcore.store`).

A SOURCE is anything ``ett`` reads: a trace folder or DuckDB trace file, a sacct export (text or JSON), a recorder
run folder, MLPerf result logs, ml-goodput-measurement entries.  What it is is told from the files (:func:`kind_of`)
or given with ``--kind``; it is read by the importer ``ett import`` / ``ett from-recorder`` uses, with the same
options (:mod:`ettcore.cli.import_options`), into a trace folder, which the store ingests as it ingests a trace.

``--slurm`` runs ``sacct`` itself (:mod:`ettcore.importers.sacct_poll`) for what changed since the source's last poll
(less ``--overlap``) and the jobs the store holds open (:mod:`ettcore.store.polls`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ettcore import store
from ettcore.cli import import_options as io
from ettcore.cli import mirror
from ettcore.cli.imports import as_of_seconds
from ettcore.cli.measure_options import is_run_folder
from ettcore.errors import InputError, Problem
from ettcore.importers import sacct_poll
from ettcore.store import polls
from ettcore.store.refresh import source_vocabulary
from ettcore.trace.instants import HOUR_MS, iso, parse_duration
from ettcore.trace.load import is_uri, load_trace, parse_as_of

KINDS = ("auto", "trace", *io.IMPORTER_KINDS)
OVERLAP_DEFAULT = "10m"
SACCT_TIMEOUT_DEFAULT = f"{sacct_poll.TIMEOUT_S_DEFAULT:g}s"  # how long one sacct call may take (--sacct-timeout)
FIRST_POLL_DEFAULT_MS = 24 * HOUR_MS  # a source's first poll without --poll-since reads the last 24 hours
GOODPUT_KEYS = {"job_name", "jsonPayload", "step_count", "step_start_time", "job_start_time", "job_end_time"}


def _first_line_object(head: str) -> dict | None:
    try:
        value = json.loads(head.splitlines()[0]) if head else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def kind_of(path: str) -> str:
    """What the source at ``path`` is, from what its files say; an error naming it when they do not say."""
    if is_uri(path):
        local = path[len("file://") :] if path.lower().startswith("file://") else None
        hint = (
            f"; for a local file give its path ({local})"
            if local
            else (
                "; copy the trace here (e.g. aws s3 cp --recursive, gsutil cp -r, hdfs dfs -get) and ingest the folder"
            )
        )
        raise InputError(
            Problem(path, None, None, "a store ingests local sources only: DuckDB reads local paths" + hint)
        )
    p = Path(path)
    if not p.exists():
        raise InputError(Problem(path, None, None, "does not exist"))
    if p.is_dir():
        if any(p.glob("attempts.*")) or (p / "attempts").is_dir():
            return "trace"
        if is_run_folder(path):
            return "recorder"
        if any(f.is_file() for f in p.rglob("result_*.txt")):
            return "mlperf"
        raise InputError(
            Problem(
                path,
                None,
                None,
                "cannot tell what this folder is (no attempts table, recorder *.jsonl files or MLPerf result_*.txt); "
                "give --kind",
            )
        )
    with p.open("rb") as f:
        raw = f.read(65536)
    if raw[8:12] == b"DUCK":
        return "trace"
    head = raw.decode("utf-8", "replace").lstrip("\ufeff").lstrip()
    first = head.splitlines()[0] if head else ""
    if ":::MLLOG" in head:
        return "mlperf"
    if "|" in first and "jobid" in [c.strip().lower() for c in first.split("|")]:
        return "sacct"
    if head.startswith("["):
        return "goodput"
    if head.startswith("{"):
        obj = _first_line_object(head)
        if obj is not None and "jobs" not in obj and (GOODPUT_KEYS & set(obj) or not obj):
            return "goodput"
        if obj is not None and "jobs" in obj or obj is None and ('"jobs"' in head or '"meta"' in head):
            return "sacct"
    raise InputError(
        Problem(
            path,
            None,
            None,
            "cannot tell what this file is (a DuckDB trace, a sacct export, MLPerf MLLOG lines or goodput entries); "
            f"give --kind ({', '.join(KINDS[1:])})",
        )
    )


def _kind(sources: list[str], given: str) -> str:
    if given != "auto":
        return given
    kinds = {s: kind_of(s) for s in sources}
    if len(set(kinds.values())) > 1:
        raise InputError(
            Problem(
                sources[0],
                None,
                None,
                "sources of different kinds ("
                + ", ".join(f"{s}: {k}" for s, k in kinds.items())
                + "): ingest each kind in a refresh of its own",
            )
        )
    return kinds[sources[0]]


NOTES_SHOWN = 20  # notes of replaced jobs a refresh prints (--all-notes: every one); a daily export may change 10,000


def summary_lines(r: store.Refresh, all_notes: bool = False) -> list[str]:
    """What a refresh prints: counts, the source's analysis time (its horizon: the store measures each source's
    running jobs to its own), and a note per job replaced (the first
    :data:`NOTES_SHOWN`, and how many more, unless ``all_notes``)."""
    lines = [
        f"ingest {r.ingest_id} into {r.store} (source {r.source}): {r.jobs_read} job(s) read: {len(r.new)} new, "
        f"{len(r.changed) + r.running} changed ({r.running} running job(s) measured to the new analysis time), "
        f"{r.unchanged} unchanged; {r.skipped} left out by --skip-invalid; analysis time {iso(r.as_of_ms)}; "
        f"{r.seconds:.2f} s"
    ]
    shown = r.notes if all_notes else r.notes[:NOTES_SHOWN]
    lines += [f"note: {n}" for n in shown]
    if len(shown) < len(r.notes):
        lines.append(f"note: and {len(r.notes) - len(shown)} more of the kind (--all-notes prints every one)")
    return lines


def _ingest_folder(
    args: argparse.Namespace, folder: Path | str, inputs: str, snapshot_ms: int | None, vocabulary=None
) -> None:
    """Ingest the trace ``folder``, read with ``vocabulary`` (default: the store's, or its ``--causes-file``'s)."""
    trace = load_trace(
        folder,
        mapping=args.mapping,
        skip_invalid=args.skip_invalid,
        vocabulary=vocabulary or source_vocabulary(args.store, args.causes_file),
    )
    r = store.ingest_trace(args.store, trace, source=args.source, inputs=inputs, snapshot_ms=snapshot_ms)
    for line in summary_lines(r, args.all_notes):
        print(line)


def _ingest_import(
    args: argparse.Namespace, kind: str, sources: list[str], inputs: str, snapshot_ms: int | None, as_of_s=None
) -> None:
    """Import ``sources`` as ``ett import``/``ett from-recorder`` would, into a temporary trace folder, and ingest
    it.  The store is touched only after the import and the checks passed."""
    with tempfile.TemporaryDirectory(prefix="ett-ingest-") as tmp:
        out = Path(tmp) / "trace"
        vocabulary = source_vocabulary(args.store, args.causes_file)  # what the cause mapping may name
        if kind == "recorder":
            conv = io.convert_recorder(sources, out, args, vocabulary)
            for line in conv.note_lines():
                print(f"note: {line}")
        else:
            frames, report = io.read_import(kind, sources, args, as_of_s=as_of_s, vocabulary=vocabulary)
            io.write_frames(out, frames, report)
            what = f"{frames.jobs.height} job(s), {frames.attempts.height} attempt(s)"
            print(io.import_line(what, report, f"from {kind} for the refresh"))
            io.print_warnings(report)
            if kind == "sacct" and args.recorder is None and not args.slurm:
                print(io.NO_RECORDER_NOTE)
        _ingest_folder(args, out, inputs, snapshot_ms, vocabulary)


def _run_sources(args: argparse.Namespace) -> int:
    if not args.sources:
        raise InputError(Problem("SOURCE", None, None, "give a SOURCE to ingest, or --slurm to poll Slurm's sacct"))
    for flag in ("poll_since", "overlap", "accounts", "partition", "sacct_timeout"):
        if getattr(args, flag) is not None:
            raise InputError(Problem(f"--{flag.replace('_', '-')}", None, flag, "is an option of --slurm polls"))
    kind = _kind(args.sources, args.kind)
    snapshot = parse_as_of(args.as_of)
    inputs = " ".join(args.sources)
    if kind == "trace":
        io.one(args.sources, "trace")
        if store.is_store(args.sources[0]):
            raise InputError(Problem(args.sources[0], None, None, "is a store, not a trace; ingest its sources"))
        _ingest_folder(args, args.sources[0], inputs, snapshot)
    else:
        _ingest_import(args, kind, args.sources, inputs, snapshot, as_of_s=as_of_seconds(args.as_of))
    return 0


def _run_slurm(args: argparse.Namespace) -> int:
    if args.sources:
        raise InputError(Problem(args.sources[0], None, None, "--slurm runs sacct itself: give no SOURCE"))
    if args.as_of is not None:
        raise InputError(Problem("--as-of", None, "as_of", "a --slurm poll's snapshot time is when its sacct ran"))
    if args.kind not in ("auto", "sacct"):
        raise InputError(Problem("--kind", None, "kind", "--slurm reads sacct exports"))
    overlap_ms = parse_duration(args.overlap or OVERLAP_DEFAULT, "--overlap")
    last = polls.last_poll_ms(args.store, args.source)
    if args.poll_since is not None:
        since_ms, why = parse_as_of(args.poll_since), "--poll-since"
    elif last is not None:
        since_ms, why = last - overlap_ms, f"the last poll less --overlap {args.overlap or OVERLAP_DEFAULT}"
    else:
        since_ms = int(time.time() * 1000) - FIRST_POLL_DEFAULT_MS
        why = "first poll of this source: the last 24 h"
    open_ids = polls.open_jobs(args.store, args.source)
    timeout_ms = parse_duration(args.sacct_timeout or SACCT_TIMEOUT_DEFAULT, "--sacct-timeout")
    p = sacct_poll.poll(
        since_ms / 1000, open_ids, accounts=args.accounts, partition=args.partition, timeout_s=timeout_ms / 1000
    )
    taken_ms = int(p.taken_s * 1000)
    states = ", ".join(f"{s} {n}" for s, n in sorted(p.states.items())) or "none"
    print(
        f"sacct at {iso(taken_ms)}: {p.window_jobs} job(s) with a run from {iso(since_ms)} ({why}), "
        f"{p.open_asked} more held open in the store; {p.jobs} job(s), {p.rows} run(s) in {p.calls} sacct call(s): "
        f"{states}"
    )
    if not p.rows:
        print(f"nothing to ingest: {args.store} unchanged")
        return 0
    inputs = polls.poll_inputs(since_ms, p.open_asked, p.window_jobs)
    with tempfile.TemporaryDirectory(prefix="ett-poll-") as tmp:
        export = Path(tmp) / "sacct.txt"
        export.write_text(p.text)
        _ingest_import(args, "sacct", [str(export)], inputs, taken_ms, as_of_s=taken_ms / 1000)
    return 0


def run(args: argparse.Namespace) -> int:
    rc = _run_slurm(args) if args.slurm else _run_sources(args)
    mirror.publish_after_refresh(args.store, args.parquet)  # a store with a Parquet mirror publishes what it committed
    return rc


class _OldSince(argparse.Action):
    """``ett ingest --since``, the old spelling of ``--poll-since``: still works, and says once that it is renamed
    (``--since`` is the start of the measured window in every measuring command)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(
            "ett: warning: ett ingest --since is now --poll-since (--since is the start of the measured window in "
            "every measuring command); the old spelling still works",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


class _Intermixed(argparse.ArgumentParser):
    """A parser whose positionals may come between the options (``ett ingest STORE --gpus 1 SACCT``): SOURCE is
    optional (none with ``--slurm``), and argparse would otherwise take an empty SOURCE list before the first option."""

    _inside = False

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        if self._inside:  # parse_known_intermixed_args calls this twice, positionals off then on
            return super().parse_known_args(args, namespace)
        self._inside = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inside = False


def register(sub: Any) -> None:
    """Add ``ett ingest``."""
    p = sub.add_parser(
        "ingest",
        help="refresh a fleet store with a trace, a sacct export, a recorder run folder, MLPerf logs or goodput "
        "entries, or by polling Slurm's sacct (incremental)",
    )
    p.add_argument("store", help="store file (a DuckDB database; created by the first ingest)")
    p.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        help="a trace folder or DuckDB trace file, sacct exports (text or JSON), a recorder run folder, MLPerf "
        "result logs or folders of them, or a goodput entries file (one kind a refresh)",
    )
    p.add_argument("--kind", choices=KINDS, default="auto", help="what SOURCE is (default: told from the files)")
    p.add_argument("--source", default=store.DEFAULT_SOURCE, help="source name: jobs are keyed by source and id")
    p.add_argument(
        "--as-of",
        metavar="T",
        help="when the snapshot was taken (ISO-8601 or epoch seconds); for a sacct export also the end of queue "
        "time of jobs still waiting",
    )
    p.add_argument("--skip-invalid", action="store_true", help="leave out jobs with problems (recorded in the store)")
    p.add_argument("--mapping", metavar="FILE", help="phase/owner mapping file (the same for every ingest of a store)")
    p.add_argument(
        "--causes-file",
        metavar="FILE",
        help="interruption causes of your own (docs/causes.md), kept by a new store, which every measuring command "
        "then reads with its rows; a later ingest reads the store's (give the same file, or none)",
    )
    p.add_argument(
        "--all-notes",
        action="store_true",
        help=f"print a note for every job replaced (default: the first {NOTES_SHOWN} and how many more)",
    )
    mirror.add_parquet_arg(p)
    s = p.add_argument_group("polling Slurm (--slurm)")
    s.add_argument(
        "--slurm",
        action="store_true",
        help="run sacct for the jobs changed since this source's last poll and the jobs the store holds open",
    )
    s.add_argument(
        "--poll-since",
        metavar="T",
        help="read jobs with a run from T on (ISO-8601 or epoch seconds); default: the last poll less --overlap, or "
        "the last 24 h on a source's first poll",
    )
    s.add_argument("--since", dest="poll_since", action=_OldSince, help=argparse.SUPPRESS)
    s.add_argument(
        "--overlap",
        metavar="DURATION",
        help=f"margin before the last poll read again (default {OVERLAP_DEFAULT}: accounting that reached "
        "slurmdbd late is not missed)",
    )
    s.add_argument(
        "--sacct-timeout",
        metavar="DURATION",
        help=f"how long one sacct call may take before the poll gives up, the store untouched (default "
        f"{SACCT_TIMEOUT_DEFAULT}; e.g. 90s, 5m)",
    )
    s.add_argument("--accounts", metavar="LIST", help="only jobs of these accounts (sacct --accounts)")
    s.add_argument("--partition", metavar="LIST", help="only jobs of these partitions (sacct --partition)")
    io.add_options(
        p.add_argument_group("importer options (as ett import and ett from-recorder)"), defined=("--causes-file",)
    )
    p.set_defaults(func=run)
    p.__class__ = _Intermixed
