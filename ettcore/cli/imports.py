"""``ett import mlperf|goodput|slurm ... --out TRACE``: other tools' logs in,
a trace folder out (:mod:`ettcore.importers`).

The importers' options are defined once, in :mod:`ettcore.cli.import_options` (``ett ingest`` takes the same)."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

from ettcore.cli import import_options as io
from ettcore.errors import InputError, Problem


def _done(what: str, out: Path, report) -> None:
    """The line ``ett import`` prints (note counts, warnings included), and each warning on stderr."""
    print(io.import_line(what, report, f"into {out}") + f"; see {Path(out) / 'import_report.md'}")
    io.print_warnings(report)


def _run_mlperf(args: argparse.Namespace) -> int:
    # InputError: the ett command prints it, exit 2
    frames, report = io.read_import("mlperf", args.logs, args)
    out = io.write_frames(args.out, frames, report, fmt=args.format)
    _done(f"{frames.jobs.height} MLPerf run(s)", out, report)
    return 0


def _run_goodput(args: argparse.Namespace) -> int:
    # InputError: the ett command prints it, exit 2
    frames, report = io.read_import("goodput", [args.entries], args)
    out = io.write_frames(args.out, frames, report, fmt=args.format)
    _done(f"{frames.jobs.height} job(s), {frames.attempts.height} attempt(s)", out, report)
    return 0


def as_of_seconds(text: str | None) -> float | None:
    """``--as-of``: ISO-8601 (zone-less = UTC) or epoch seconds."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(
            Problem("--as-of", None, "as_of", f"not an ISO-8601 time or epoch seconds: {text!r}")
        ) from None
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


def _run_slurm(args: argparse.Namespace) -> int:
    # InputError: the ett command prints it, exit 2
    frames, report = io.read_import("sacct", args.sacct, args, as_of_s=as_of_seconds(args.as_of))
    out = io.write_frames(args.out, frames, report, fmt=args.format)
    what = f"{frames.jobs.height} Slurm job(s), {frames.attempts.height} attempt(s), {frames.spans.height} span(s)"
    _done(what, out, report)
    if args.recorder is None:
        print(io.NO_RECORDER_NOTE)
    return 0


def _add_output(p: argparse.ArgumentParser) -> None:
    """``--out`` and ``--format``: the trace folder every import writes."""
    p.add_argument("--out", required=True, metavar="TRACE", help="trace folder to write")
    p.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet")


def register(subparsers) -> None:
    """Add ``ett import`` with its ``mlperf``, ``goodput`` and ``slurm`` sub-commands."""
    p = subparsers.add_parser(
        "import", help="import MLPerf logs, ml-goodput-measurement entries or Slurm accounting as a trace"
    )
    sub = p.add_subparsers(dest="import_format", metavar="FORMAT")
    sub.required = True

    m = sub.add_parser("mlperf", help="MLPerf Training result logs (MLLOG), one job a file")
    m.add_argument(
        "logs", nargs="+", metavar="LOG", help="result_N.txt files, or folders searched recursively for them"
    )
    io.add_options(m, "mlperf")
    _add_output(m)
    m.set_defaults(func=_run_mlperf)

    g = sub.add_parser(
        "goodput",
        help="entries written by ml-goodput-measurement's GoodputRecorder (JSON lines or a gcloud JSON array)",
    )
    g.add_argument(
        "entries",
        metavar="ENTRIES",
        help="JSON lines, or the JSON array of 'gcloud logging read --format=json'; any order",
    )
    io.add_options(g, "goodput")
    _add_output(g)
    g.set_defaults(func=_run_goodput)

    s = sub.add_parser(
        "slurm", help="Slurm accounting: sacct --parsable2 or --json (docs/slurm.md has the export commands)"
    )
    s.add_argument("sacct", nargs="+", metavar="SACCT", help="sacct export(s), text (--parsable2) or JSON (--json)")
    io.add_options(s, "sacct")
    s.add_argument(
        "--as-of",
        default=None,
        metavar="TIME",
        help="end of queue time of jobs still waiting (ISO-8601 or epoch seconds; default: the export's latest time)",
    )
    _add_output(s)
    s.set_defaults(func=_run_slurm)
