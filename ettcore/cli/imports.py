"""``ett import mlperf|goodput|slurm ... --out TRACE``: other tools' logs in,
a trace folder out (:mod:`ettcore.importers`)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

from ettcore.cli.common import add_cause_mapping_arg
from ettcore.errors import InputError, Problem
from ettcore.importers.frames import write_import
from ettcore.importers.goodput import import_entries
from ettcore.importers.mlperf import import_logs
from ettcore.importers.slurm import import_sacct


def _summary(what: str, out: Path, report) -> None:
    """The line ``ett import`` prints (note counts, warnings included), and each warning on stderr."""
    counts = {
        k: sum(f.counts()[k] for f in report.files)
        for k in ("dropped", "merged", "inferred", "corrected", "clipped", "warning")
    }
    print(
        f"imported {what} into {out} ({', '.join(f'{k} {v}' for k, v in counts.items())}; "
        f"see {Path(out) / 'import_report.md'})"
    )
    for line in report.warnings():
        print(f"ett: warning: {line}", file=sys.stderr)


def _gpus_option(values: list[str] | None) -> int | dict[str, int] | None:
    """``--gpus N`` (every log) or ``--gpus LOG=N`` (repeatable, one log each)."""
    if not values:
        return None
    if len(values) == 1 and "=" not in values[0]:
        return _positive(values[0])
    out = {}
    for v in values:
        log, sep, n = v.rpartition("=")
        if not sep or not log:
            raise InputError(
                Problem("--gpus", None, "gpus", f"give one number for every log, or LOG=N for each: {v!r}")
            )
        out[log] = _positive(n)
    return out


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise InputError(Problem("--gpus", None, "gpus", f"must be an integer >= 1, got {text!r}"))
    return n


def _run_mlperf(args: argparse.Namespace) -> int:
    # InputError: the ett command prints it, exit 2
    frames, report = import_logs(
        args.logs, systems_dir=args.systems, gpus=_gpus_option(args.gpus), cause_mapping=args.cause_mapping
    )
    out = write_import(args.out, frames, report, fmt=args.format)
    _summary(f"{frames.jobs.height} MLPerf run(s)", out, report)
    return 0


def _run_goodput(args: argparse.Namespace) -> int:
    # InputError: the ett command prints it, exit 2
    frames, report = import_entries(args.entries, gpus=args.gpus, cause_mapping=args.cause_mapping)
    out = write_import(args.out, frames, report, fmt=args.format)
    _summary(f"{frames.jobs.height} job(s), {frames.attempts.height} attempt(s)", out, report)
    return 0


def _as_of_seconds(text: str | None) -> float | None:
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
    frames, report = import_sacct(
        args.sacct,
        recorder_dir=args.recorder,
        gpus=args.gpus,
        keep_users=args.keep_users,
        timezone=args.timezone,
        as_of=_as_of_seconds(args.as_of),
        timeout_as=args.timeout_as,
        clock_tolerance_s=args.clock_tolerance,
        cause_mapping=args.cause_mapping,
    )  # InputError: the ett command prints it, exit 2
    out = write_import(args.out, frames, report, fmt=args.format)
    counts = {k: sum(f.counts()[k] for f in report.files) for k in ("dropped", "clipped", "inferred", "corrected")}
    print(
        f"imported {frames.jobs.height} Slurm job(s), {frames.attempts.height} attempt(s), "
        f"{frames.spans.height} span(s) into {out} ({', '.join(f'{k} {v}' for k, v in counts.items())}; "
        f"see {Path(out) / 'import_report.md'})"
    )
    if args.recorder is None:
        print(
            "note: without --recorder the trace has no train spans: ETT% is 0 and time inside runs is unattributed; "
            "wall, queue time, runs, NoF and GPU-hours are complete"
        )
    return 0


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
    m.add_argument(
        "--systems",
        metavar="DIR",
        default=None,
        help="folder of system descriptions: <round>/<submitter>/<system>.json, else any <system>.json below it "
        "(default: a 'systems' folder above each log, or <submitter>/systems/ of the results repositories)",
    )
    m.add_argument(
        "--gpus",
        metavar="N|LOG=N",
        action="append",
        default=None,
        help="accelerators of every log (N), or of one log (LOG=N, repeatable): "
        "replaces the log's SYSJSON and the system description",
    )
    add_cause_mapping_arg(m)
    m.add_argument("--out", required=True, metavar="TRACE", help="trace folder to write")
    m.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet")
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
    g.add_argument("--gpus", type=int, default=1, help="accelerators per job (the entries do not say; default 1)")
    add_cause_mapping_arg(g)
    g.add_argument("--out", required=True, metavar="TRACE", help="trace folder to write")
    g.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet")
    g.set_defaults(func=_run_goodput)

    s = sub.add_parser(
        "slurm", help="Slurm accounting: sacct --parsable2 or --json (docs/slurm.md has the export commands)"
    )
    s.add_argument("sacct", nargs="+", metavar="SACCT", help="sacct export(s), text (--parsable2) or JSON (--json)")
    s.add_argument(
        "--recorder",
        metavar="RUN_DIR",
        default=None,
        help="recorder folder of the jobs' in-job spans (ettcore.integrations.recorder inside the Slurm jobs)",
    )
    s.add_argument(
        "--gpus", type=int, default=None, help="GPUs of a job whose AllocTRES has no gres/gpu (default: refuse)"
    )
    s.add_argument("--keep-users", action="store_true", help="keep user names (default: a stable hash)")
    s.add_argument(
        "--timezone",
        default="UTC",
        help="zone of sacct's zone-less times (default UTC; not needed with SLURM_TIME_FORMAT=%%s)",
    )
    s.add_argument(
        "--as-of",
        default=None,
        metavar="TIME",
        help="end of queue time of jobs still waiting (ISO-8601 or epoch seconds; default: the export's latest time)",
    )
    s.add_argument(
        "--timeout-as",
        choices=("failure", "cancelled"),
        default="failure",
        help="end reason of a TIMEOUT run (default failure; docs/slurm.md); its cause is time_limit",
    )
    add_cause_mapping_arg(s)
    s.add_argument(
        "--clock-tolerance",
        type=float,
        default=2.0,
        metavar="S",
        help="seconds a recorder span may stick out of its run and still be clipped into it (default 2)",
    )
    s.add_argument("--out", required=True, metavar="TRACE", help="trace folder to write")
    s.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet")
    s.set_defaults(func=_run_slurm)
