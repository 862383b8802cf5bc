"""Importers: other people's lifecycle logs in, ETT traces out.

- :mod:`ettcore.importers.mlperf`        MLPerf Training result logs (MLLOG)
- :mod:`ettcore.importers.goodput`       entries written by ml-goodput-measurement's recorder
- :mod:`ettcore.importers.import_report` what an import dropped, merged, inferred, and why
- :mod:`ettcore.importers.frames`        the imported tables and how they are written

The ``ett import`` command::

    ett import mlperf LOG... [--systems DIR] --out TRACE
    ett import goodput ENTRIES.jsonl --out TRACE

Each writes the trace folder ``TRACE`` (``trace.json`` says ``"synthetic": false``
and lists the source files) with ``import_report.json`` and
``import_report.md`` inside it.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def _run_mlperf(args: argparse.Namespace) -> int:
    from .frames import write_import
    from .mlperf import import_logs

    frames, report = import_logs(args.logs, systems_dir=args.systems)  # TraceError: the ett command prints it, exit 2
    out = write_import(args.out, frames, report, fmt=args.format)
    counts = {k: sum(f.counts()[k] for f in report.files) for k in ("dropped", "merged", "inferred", "corrected", "clipped")}
    print(f"imported {frames.jobs.height} MLPerf run(s) into {out} "
          f"({', '.join(f'{k} {v}' for k, v in counts.items())}; see {Path(out) / 'import_report.md'})")
    return 0


def _run_goodput(args: argparse.Namespace) -> int:
    from .frames import write_import
    from .goodput import import_entries

    frames, report = import_entries(args.entries, gpus=args.gpus)  # TraceError: the ett command prints it, exit 2
    out = write_import(args.out, frames, report, fmt=args.format)
    print(f"imported {frames.jobs.height} job(s), {frames.attempts.height} attempt(s) into {out} "
          f"(see {Path(out) / 'import_report.md'})")
    return 0


def register(subparsers) -> None:
    """Add ``ett import`` with its ``mlperf`` and ``goodput`` sub-commands."""
    p = subparsers.add_parser("import", help="import MLPerf or ml-goodput-measurement logs as a trace")
    sub = p.add_subparsers(dest="import_format", metavar="FORMAT")
    sub.required = True

    m = sub.add_parser("mlperf", help="MLPerf Training result logs (MLLOG), one job a file")
    m.add_argument("logs", nargs="+", metavar="LOG", help="result_N.txt files")
    m.add_argument("--systems", metavar="DIR", default=None,
                   help="folder of system descriptions <round>/<submitter>/<system>.json "
                        "(default: a 'systems' folder above each log)")
    m.add_argument("--out", required=True, metavar="TRACE", help="trace folder to write")
    m.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet")
    m.set_defaults(func=_run_mlperf)

    g = sub.add_parser("goodput", help="entries written by ml-goodput-measurement's GoodputRecorder (JSON lines)")
    g.add_argument("entries", metavar="ENTRIES.jsonl")
    g.add_argument("--gpus", type=int, default=1, help="accelerators per job (the entries do not say; default 1)")
    g.add_argument("--out", required=True, metavar="TRACE", help="trace folder to write")
    g.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet")
    g.set_defaults(func=_run_goodput)
