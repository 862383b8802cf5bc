"""What the measuring commands share: the trace argument and its options, the engine options, opening the checked
trace (with what ``--skip-invalid`` left out said on stderr) and the window lines of an output."""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ettcore import engines, metric, store
from ettcore.cli import mirror
from ettcore.cli.output import exclusion_records, format_table
from ettcore.errors import summarize_problems
from ettcore.metric import money
from ettcore.trace.instants import iso as _iso_ms
from ettcore.trace.load import Trace


def add_trace_args(p: argparse.ArgumentParser, as_of: bool = True, uri: bool = True) -> None:
    """The trace argument and the options every measuring command shares (as-of, window, exclusions, limits)."""
    where = "trace folder (jobs/attempts/spans as Parquet, CSV, JSONL or Parquet folders) or DuckDB file"
    if uri:
        where += (
            "; with --engine spark also a URI of a Parquet trace (s3a://, hdfs://, gs://, abfss://, file:///), and a "
            "fleet store's Parquet mirror (its folder or URI; a store file reads its own)"
        )
    p.add_argument("trace", help=where)
    p.add_argument("--mapping", metavar="FILE", help="phase/owner mapping file (YAML or JSON) extending the defaults")
    if as_of:
        p.add_argument(
            "--as-of", metavar="T", help="analysis time for running jobs: ISO-8601 (zone-less = UTC) or epoch seconds"
        )
        p.add_argument(
            "--since",
            metavar="T",
            help="measure only from T on (ISO-8601, Z allowed, or epoch seconds); jobs that started "
            "earlier keep their attribution",
        )
        p.add_argument("--until", metavar="T", help="measure only before T (as --since); the window is [since, until)")
        p.add_argument(
            "--exclude",
            metavar="FILE",
            help="exclusion windows (CSV or JSON: start, end, reason, optional job or label=value) "
            "left out of wall time, every bucket and NoF, and listed in the output",
        )
        p.add_argument(
            "--skip-invalid",
            action="store_true",
            help="leave out jobs with problems (and say which) instead of refusing",
        )
        p.add_argument(
            "--memory-limit",
            metavar="SIZE",
            help="cap DuckDB's memory (e.g. 8GB; default: $ETT_MEMORY_LIMIT, else 3GB or 80%% of the machine where "
            "less); a trace too large for it is attributed in batches of jobs and other work spills to disk, "
            "with the same answers (not used for a URI)",
        )
        p.add_argument(
            "--temp-directory",
            metavar="DIR",
            help="where DuckDB spills when over --memory-limit, and where batched attribution "
            "writes its temporary files (those default to the system temporary folder)",
        )


def add_engine_args(parser: argparse.ArgumentParser) -> None:
    """``--engine duckdb|spark`` and ``--spark-master URL`` for a subcommand."""
    parser.add_argument(
        "--engine",
        choices=engines.ENGINES,
        default="duckdb",
        help="where the metric runs: duckdb (default, in process) or spark (a local trace is checked by DuckDB first;"
        " a URI such as s3a://bucket/trace is read and checked by Spark alone)",
    )
    parser.add_argument(
        "--spark-master",
        metavar="URL",
        default=engines.DEFAULT_MASTER,
        help="Spark master for --engine spark: local[*] (default), spark://host:7077, yarn, k8s://...",
    )


def open_checked(args: argparse.Namespace) -> Trace:
    """The checked trace: DuckDB for a local path, Spark alone for a URI with --engine spark (see ettcore.engines); a
    fleet store's stored results, or with --engine spark its Parquet mirror (ettcore.store.parquet_mirror)."""
    where, a_store = args.trace, store.is_store(args.trace)
    if a_store and getattr(args, "engine", "duckdb") != "duckdb":
        where = str(mirror.mirror_for_spark(args.trace))  # Spark reads the store's Parquet mirror
    elif a_store:  # a fleet store: its stored per-job results (ettcore.store)
        trace = store.open_store(
            args.trace,
            mapping=args.mapping,
            as_of=args.as_of,
            since=args.since,
            until=args.until,
            exclude=args.exclude,
            memory_limit=args.memory_limit,
        )
        if trace.recomputed:
            print(f"ett: {trace.recomputed}: attributing again from the store's rows", file=sys.stderr)
        return trace
    trace = engines.open_trace(
        where,
        getattr(args, "engine", "duckdb"),
        getattr(args, "spark_master", engines.DEFAULT_MASTER),
        mapping=args.mapping,
        as_of=args.as_of,
        skip_invalid=args.skip_invalid,
        memory_limit=args.memory_limit,
        temp_directory=args.temp_directory,
        since=args.since,
        until=args.until,
        exclude=args.exclude,
    )
    if trace.excluded_jobs or any(a["rejected"] for a in trace.accounting.values()):
        print(skip_report(trace), file=sys.stderr)
    if any(trace.not_started.values()):
        n = trace.not_started
        print(
            f"ett: as of {_iso_ms(trace.as_of_ms)}: {n['jobs']} job(s), {n['attempts']} attempt(s) and {n['spans']} "
            "span(s) start at or after it and are not measured",
            file=sys.stderr,
        )
    return trace


def skip_report(trace: Trace) -> str:
    """What --skip-invalid left out, and why (stderr)."""
    lines = [f"ett: --skip-invalid left out {len(trace.excluded_jobs)} job(s):"]
    for table, acc in trace.accounting.items():
        if acc["rejected"]:
            reasons = ", ".join(f"{n} {r}" for r, n in acc["rejected_by_reason"].items())
            lines.append(f"  {table}: read {acc['read']}, used {acc['used']}, rejected {acc['rejected']} ({reasons})")
    shown = summarize_problems(trace.problems)
    lines += [f"  {line}" for line in shown[:20]]
    if len(shown) > 20:
        lines.append(f"  ... and {len(shown) - 20} more lines of problems (run 'ett validate')")
    return "\n".join(lines)


def window_head(trace: Trace) -> dict[str, Any]:
    """The ``window`` and ``exclusions`` keys of a JSON output: present only when a window or an exclusion is set."""
    w = trace.window
    if w.whole:
        return {}
    head: dict[str, Any] = {"window": {"since": _iso_ms(w.since_ms), "until": _iso_ms(w.until_ms)}}
    if w.exclusions:
        head["exclusions"] = exclusion_records(metric.exclusion_summary(trace))
    return head


def print_window(trace: Trace, out=None) -> None:
    """The measured window and the exclusion windows, as lines of text (nothing for the default whole trace)."""
    out = out or sys.stdout
    w = trace.window
    if w.since_ms is not None or w.until_ms is not None:
        print(
            f"Measured from {_iso_ms(w.since_ms) or 'the start'} to {_iso_ms(w.until_ms) or 'the end'} (each job's "
            "time clipped to it).",
            file=out,
        )
    if w.exclusions:
        ex = metric.exclusion_summary(trace)
        print(f"Exclusion windows (left out of wall time, every bucket and NoF; {ex.height}):", file=out)
        print(
            format_table(
                ex,
                ["start", "end", "reason", "job", "label", "jobs", "wall_gpu_h", "productive_gpu_h", "nof"],
                digits=2,
            ),
            file=out,
        )
    if not w.whole:
        print(file=out)


def add_money_args(p: argparse.ArgumentParser) -> None:
    """``--gpu-hour-price PRICE|FILE`` and ``--currency``: lost GPU-hours as money (ettcore.metric.money)."""
    p.add_argument(
        "--gpu-hour-price",
        metavar="PRICE|FILE",
        help="price of a GPU-hour held: a number, or a CSV/YAML table of prices by job label (partition, gpu_type, "
        "...; first matching row wins); lost time becomes money (scheduling, no GPU held, is not billed)",
    )
    p.add_argument("--currency", default="USD", help="the currency the price is in (default USD)")


def prices_of(args: argparse.Namespace) -> money.Prices | None:
    """The parsed ``--gpu-hour-price`` (``ettcore.metric.money.Prices``), or None when none was given."""
    text = getattr(args, "gpu_hour_price", None)
    return None if text is None else money.parse_prices(text, getattr(args, "currency", "USD") or "USD")


def is_run_folder(path: str) -> bool:
    """A recorder run folder (``*.jsonl`` recorder files, no ``attempts`` table), not a trace folder."""
    p = Path(path)
    if "://" in str(path) or not p.is_dir() or any(p.glob("attempts.*")) or (p / "attempts").is_dir():
        return False
    return any(p.glob("*.jsonl"))


def open_live(args: argparse.Namespace, *, now_by_default: bool, scratch: Path | None = None) -> Trace:
    """:func:`open_checked`, where the trace may also be a live recorder run folder: it is converted first (into a
    temporary trace folder removed at exit; its last attempts without an end are running) and, with no ``--as-of``, is
    analysed now.  ``now_by_default``: analyse a trace folder now too, without ``--as-of``.  ``scratch``: convert
    into this folder instead (replaced at each call; a refresh loop's own, so that refreshes leave nothing behind).
    The trace keeps the path it was given (the export's ``trace`` label)."""
    given = args.trace
    run_folder = is_run_folder(given)
    if run_folder:
        from ettcore.importers.recorder import convert

        tmp = scratch
        if tmp is None:
            tmp = Path(tempfile.mkdtemp(prefix="ett-run-folder-"))
            atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        convert(given, tmp / "trace")  # its input errors name the recorder file, row and field
        args = argparse.Namespace(**{**vars(args), "trace": str(tmp / "trace")})
    if args.as_of is None and (run_folder or now_by_default):
        args = argparse.Namespace(**{**vars(args), "as_of": round(time.time(), 3)})
    trace = open_checked(args)
    if run_folder:
        trace.path = Path(given)
    return trace
