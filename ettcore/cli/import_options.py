"""The importers' options, defined once, and the one place each importer is called from the command line.

``ett import mlperf|goodput|slurm``, ``ett from-recorder`` and ``ett ingest`` add their importer options from
:data:`OPTIONS` (:func:`add_options`): one definition a flag, with the importers that take it.  :func:`read_import`
calls an importer with what those flags say, so ``ett ingest STORE SOURCE`` reads a source exactly as ``ett import``
would, and :func:`import_line` is the line both print about what the import decided.

The kinds of source (the names ``ett ingest --kind`` takes): ``sacct`` (``ett import slurm``), ``mlperf``,
``goodput`` and ``recorder`` (``ett from-recorder``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ettcore.errors import InputError, Problem
from ettcore.importers.frames import TraceFrames, write_import
from ettcore.importers.import_report import ImportReport
from ettcore.vocabulary import Vocabulary

IMPORTER_KINDS = ("sacct", "mlperf", "goodput", "recorder")
NOTE_KINDS = ("dropped", "merged", "inferred", "corrected", "clipped", "warning")
NO_RECORDER_NOTE = (
    "note: without --recorder the trace has no train spans: ETT% is 0 and time inside runs is unattributed; "
    "wall, queue time, runs, NoF and GPU-hours are complete"
)


def _gpus_value(text: str) -> str:
    """``--gpus``: ``N`` or ``LOG=N`` with N an integer >= 1 (checked when parsed: nothing else reaches an importer)."""
    n = text.rpartition("=")[2] if "=" in text else text
    try:
        ok = int(n) >= 1 and (n.strip() == n)
    except ValueError:
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(f"must be N or LOG=N, N an integer >= 1: {text!r}")
    return text


@dataclass(frozen=True)
class Option:
    """One importer flag: its argparse keywords, the importers that take it and what it means to each."""

    flag: str
    kinds: tuple[str, ...]
    help: str | dict[str, str]  # one text, or one a kind
    kwargs: dict[str, Any] = field(default_factory=dict)

    def help_for(self, kind: str | None) -> str:
        if isinstance(self.help, str):
            return self.help if kind is not None else f"{'/'.join(self.kinds)}: {self.help}"
        if kind is not None:
            return self.help[kind]
        return "; ".join(f"{k}: {self.help[k]}" for k in self.kinds)


OPTIONS: tuple[Option, ...] = (
    Option(
        "--gpus",
        ("sacct", "mlperf", "goodput"),
        {
            "sacct": "GPUs of a job whose AllocTRES has no gres/gpu (default: refuse)",
            "mlperf": "accelerators of every log (N), or of one log (LOG=N, repeatable): replaces the log's SYSJSON "
            "and the system description",
            "goodput": "accelerators per job (the entries do not say; default 1)",
        },
        {"metavar": "N|LOG=N", "action": "append", "type": _gpus_value, "default": None},
    ),
    Option(
        "--systems",
        ("mlperf",),
        "folder of system descriptions: <round>/<submitter>/<system>.json, else any <system>.json below it "
        "(default: a 'systems' folder above each log, or <submitter>/systems/ of the results repositories)",
        {"metavar": "DIR", "default": None},
    ),
    Option(
        "--recorder",
        ("sacct",),
        "recorder folder of the jobs' in-job spans (ettcore.integrations.recorder inside the Slurm jobs)",
        {"metavar": "RUN_DIR", "default": None},
    ),
    Option("--keep-users", ("sacct",), "keep user names (default: a stable hash)", {"action": "store_true"}),
    Option(
        "--timezone",
        ("sacct",),
        "zone of sacct's zone-less times (default UTC; not needed with SLURM_TIME_FORMAT=%%s)",
        {"default": "UTC"},
    ),
    Option(
        "--timeout-as",
        ("sacct",),
        "end reason of a TIMEOUT run (default failure; docs/slurm.md); its cause is time_limit",
        {"choices": ("failure", "cancelled"), "default": "failure"},
    ),
    Option(
        "--clock-tolerance",
        ("sacct",),
        "seconds a recorder span may stick out of its run and still be clipped into it (default 2)",
        {"type": float, "default": 2.0, "metavar": "S"},
    ),
    Option(
        "--open-last-attempt",
        ("recorder",),
        "how to treat a job's last attempt that has no end record (default: running)",
        {"choices": ("running", "failure"), "default": "running"},
    ),
    Option(
        "--cause-mapping",
        ("sacct", "mlperf", "goodput", "recorder"),
        "rules deciding each interruption's cause, tried before the shipped ones (YAML/JSON; docs/causes.md)",
        {"metavar": "FILE", "default": None},
    ),
    Option(
        "--causes-file",
        ("sacct", "mlperf", "goodput", "recorder"),
        "a user's causes file (the measuring commands' --causes-file; docs/causes.md) whose causes --cause-mapping's "
        "rules may give; measure the trace written with the same file",
        {"metavar": "FILE", "default": None},
    ),
)


def add_options(p: argparse.ArgumentParser, kind: str | None = None, defined: tuple[str, ...] = ()) -> None:
    """Add the options of importer ``kind`` to ``p``, or (``None``) every importer's, each help naming its kinds;
    ``defined``: flags the command defines itself, with a meaning of its own that covers the importer's (``ett
    ingest --causes-file``: a store keeps the causes)."""
    for o in OPTIONS:
        if (kind is None or kind in o.kinds) and o.flag not in defined:
            p.add_argument(o.flag, help=o.help_for(kind), **o.kwargs)


def _causes(args: argparse.Namespace, vocabulary: Vocabulary | None) -> dict[str, Any]:
    """The causes an importer's cause mapping may name: ``vocabulary`` where given (``ett ingest``: the store's, or
    its ``--causes-file``'s), else those of ``--causes-file``."""
    return {"vocabulary": vocabulary} if vocabulary is not None else {"causes_file": args.causes_file}


def _one_gpus(values: list[str] | None, kind: str) -> int | None:
    """``--gpus N`` given once (the importers other than MLPerf take one number)."""
    if not values:
        return None
    if len(values) > 1 or "=" in values[0]:
        raise InputError(
            Problem("--gpus", None, "gpus", f"{kind}: give one number for every job (LOG=N is for MLPerf logs)")
        )
    return int(values[0])


def mlperf_gpus(values: list[str] | None) -> int | dict[str, int] | None:
    """``--gpus N`` (every log) or ``--gpus LOG=N`` (repeatable, one log each)."""
    if not values:
        return None
    if len(values) == 1 and "=" not in values[0]:
        return int(values[0])
    out = {}
    for v in values:
        log, sep, n = v.rpartition("=")
        if not sep or not log:
            raise InputError(
                Problem("--gpus", None, "gpus", f"give one number for every log, or LOG=N for each: {v!r}")
            )
        out[log] = int(n)
    return out


def read_import(
    kind: str,
    sources: list[str],
    args: argparse.Namespace,
    as_of_s: float | None = None,
    vocabulary: Vocabulary | None = None,
) -> tuple[TraceFrames, ImportReport]:
    """Import ``sources`` with importer ``kind`` (``sacct``, ``mlperf`` or ``goodput``) and the options in ``args``.

    ``as_of_s`` (sacct): the end of queue time of jobs still waiting (epoch seconds; default: the export's latest
    time).  ``vocabulary``: the causes the cause mapping may name (default: ``--causes-file``'s).  Input errors are
    raised as :class:`InputError` (file, row, field)."""
    if kind == "sacct":
        from ettcore.importers.slurm import import_sacct

        return import_sacct(
            sources,
            recorder_dir=args.recorder,
            gpus=_one_gpus(args.gpus, kind),
            keep_users=args.keep_users,
            timezone=args.timezone,
            as_of=as_of_s,
            timeout_as=args.timeout_as,
            clock_tolerance_s=args.clock_tolerance,
            cause_mapping=args.cause_mapping,
            **_causes(args, vocabulary),
        )
    if kind == "mlperf":
        from ettcore.importers.mlperf import import_logs

        return import_logs(
            sources,
            systems_dir=args.systems,
            gpus=mlperf_gpus(args.gpus),
            cause_mapping=args.cause_mapping,
            **_causes(args, vocabulary),
        )
    if kind == "goodput":
        from ettcore.importers.goodput import import_entries

        one(sources, "a goodput entries file")
        return import_entries(
            sources[0],
            gpus=_one_gpus(args.gpus, kind) or 1,
            cause_mapping=args.cause_mapping,
            **_causes(args, vocabulary),
        )
    raise ValueError(f"not an importer of frames: {kind!r}")


def convert_recorder(
    sources: list[str], out: str | Path, args: argparse.Namespace, vocabulary: Vocabulary | None = None
):
    """``ett from-recorder``'s conversion of one recorder run folder into the trace folder ``out`` (``vocabulary``:
    as :func:`read_import`'s)."""
    from ettcore.importers.recorder import convert

    one(sources, "a recorder run folder")
    return convert(
        sources[0],
        out,
        open_last_attempt=args.open_last_attempt,
        cause_mapping=args.cause_mapping,
        **_causes(args, vocabulary),
    )


def one(sources: list[str], what: str) -> None:
    """Refuse more than one source where the importer reads one."""
    if len(sources) != 1:
        raise InputError(Problem(sources[1], None, None, f"give one {what} at a time (got {len(sources)} sources)"))


def write_frames(out: str | Path, frames: TraceFrames, report: ImportReport, fmt: str = "parquet") -> Path:
    """The imported trace folder, with its import report inside."""
    return write_import(out, frames, report, fmt=fmt)


def import_line(what: str, report: ImportReport, where: str) -> str:
    """The line an import prints: what it read, and how many notes of each kind (``where``: where the report is)."""
    counts = {k: sum(f.counts()[k] for f in report.files) for k in NOTE_KINDS}
    return f"imported {what} {where} ({', '.join(f'{k} {v}' for k, v in counts.items())})"


def print_warnings(report: ImportReport) -> None:
    """Each warning of the import on stderr."""
    for line in report.warnings():
        print(f"ett: warning: {line}", file=sys.stderr)
