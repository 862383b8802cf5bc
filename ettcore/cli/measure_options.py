"""The measuring commands' options, defined once, and the one way those commands open what they measure.

Every measuring command (``summarize``, ``trend``, ``stalls``, ``opportunities``, ``nodes``, ``export prometheus``,
``validate``) takes the input argument and every option of :data:`OPTIONS` (:func:`add_measure_options`), each with
the same meaning: the engine (``--engine``, ``--spark-master``), what to open and how (``--mapping``,
``--causes-file``, ``--skip-invalid``, ``--memory-limit``, ``--temp-directory``), which part of time to measure
(``--as-of``, ``--since``, ``--until``, ``--exclude``), what a GPU-hour costs (``--gpu-hour-price``, ``--currency``)
and how much slower than its ideal pace a train span may run before it is slow (``--slow-tolerance``).  A command
for which an option means nothing refuses it with one line that says why, exit 2 (:func:`check_refusals`, called by
:func:`ettcore.cli.main` before the command runs); the command's ``--help`` says the same.  What cannot be known from
the command alone (a fleet store refuses ``--skip-invalid``, and a ``--causes-file`` that lacks a cause it keeps; a
URI read by Spark refuses ``--memory-limit``) is refused by the opener, with the same kind of line.

:func:`open_measured` opens the input with those options: a trace (folder or DuckDB file), a fleet store, a store's
Parquet mirror or a URI (Spark), or a live recorder run folder (:func:`open_live`).
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ettcore import engines, store
from ettcore.cli import mirror
from ettcore.engines.mirror_format import check_files, is_mirror, read_local_pointer
from ettcore.errors import InputError, Problem, summarize_problems
from ettcore.metric import money
from ettcore.trace.instants import iso
from ettcore.trace.options import TraceOptions

INPUT_HELP = (
    "a trace folder (jobs/attempts/spans tables as Parquet, CSV or JSONL), a DuckDB trace file or a fleet store"
)
SPARK_INPUT_HELP = (
    "; with --engine spark also a Parquet trace's URI (s3a://, hdfs://, gs://, abfss://, file:///) or a store's "
    "Parquet mirror"
)
RUN_FOLDER_HELP = "; or a live recorder run folder (analysed now)"
MEASURING = ("summarize", "trend", "stalls", "opportunities", "nodes", "export prometheus", "validate")


@dataclass(frozen=True)
class Option:
    """One measuring option: its flag, its argparse keywords and its help."""

    flag: str
    help: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def default(self) -> Any:
        return self.kwargs.get("default", False if self.kwargs.get("action") == "store_true" else None)


OPTIONS: tuple[Option, ...] = (
    Option(
        "--engine",
        "where the metric runs: duckdb (default, in process) or spark (a local trace is checked by DuckDB first; a URI"
        " such as s3a://bucket/trace, or a store's Parquet mirror, is read and checked by Spark alone)",
        {"choices": engines.ENGINES, "default": "duckdb"},
    ),
    Option(
        "--spark-master",
        f"Spark master with --engine spark: {engines.DEFAULT_MASTER} (default), spark://host:7077, yarn, k8s://...",
        {"metavar": "URL"},
    ),
    Option("--mapping", "phase/owner mapping file (YAML or JSON) extending the defaults", {"metavar": "FILE"}),
    Option(
        "--causes-file",
        "a user's causes file (YAML or JSON: causes, each with its group and an optional display category) adding "
        "causes the trace's cause column may name (docs/causes.md); trace folders and DuckDB trace files on DuckDB",
        {"metavar": "FILE"},
    ),
    Option(
        "--as-of",
        "analysis time: running jobs are measured up to T, later work is not known (ISO-8601, zone-less = UTC, "
        "or epoch seconds; default: the trace's latest instant, a store's latest snapshot)",
        {"metavar": "T"},
    ),
    Option(
        "--since",
        "measure only from T on (ISO-8601, Z allowed, or epoch seconds); jobs that started earlier keep their "
        "attribution",
        {"metavar": "T"},
    ),
    Option("--until", "measure only before T (as --since); the window is [since, until)", {"metavar": "T"}),
    Option(
        "--exclude",
        "exclusion windows (CSV or JSON: start, end, reason, optional job or label=value) left out of wall time, "
        "every bucket and NoF, and listed in the output",
        {"metavar": "FILE"},
    ),
    Option(
        "--skip-invalid",
        "leave out jobs with problems (and say which) instead of refusing the trace",
        {"action": "store_true"},
    ),
    Option(
        "--memory-limit",
        "cap DuckDB's memory (e.g. 8GB; default: $ETT_MEMORY_LIMIT, else 3GB or 80%% of the machine where less); a "
        "trace too large for it is attributed in batches of jobs and other work spills to disk, with the same answers",
        {"metavar": "SIZE"},
    ),
    Option(
        "--temp-directory",
        "where DuckDB spills beyond --memory-limit and batched attribution writes its temporary files (default: the "
        "system temporary folder)",
        {"metavar": "DIR"},
    ),
    Option(
        "--gpu-hour-price",
        "price of a GPU-hour held: a number, or a CSV/YAML table of prices by job label (partition, gpu_type, ...; "
        "first matching row wins); lost time becomes money (scheduling, no GPU held, is not billed)",
        {"metavar": "PRICE|FILE"},
    ),
    Option("--currency", "the currency of --gpu-hour-price (default USD)", {"metavar": "CODE"}),
    Option(
        "--slow-tolerance",
        "how far over its ideal pace a train span may run before it is slow, as a fraction (default 0.25: 25 %%; "
        "docs/metric.md, 'Slow time'); jitter below it is not slowness",
        {"metavar": "FRACTION"},
    ),
)
FLAG_OF = {o.dest: o.flag for o in OPTIONS}
OPEN_OPTIONS = (
    "mapping",
    "causes_file",
    "as_of",
    "since",
    "until",
    "exclude",
    "skip_invalid",
    "memory_limit",
    "temp_directory",
)

# Why a command refuses an option (the option's dest -> the reason), shared by the commands that refuse alike
NO_MONEY = "it shows no money (summarize, opportunities and export prometheus do)"
DUCKDB_ONLY = "runs on DuckDB only"
NO_WINDOW = "the checks read every row, whatever the analysis time or the measured window"


def refusals_no_money() -> dict[str, str]:
    return {"gpu_hour_price": NO_MONEY, "currency": NO_MONEY}


NO_SLOW = "it shows no slow time (summarize, trend, nodes --slow and export prometheus do)"


def refusals_no_slow() -> dict[str, str]:
    return {"slow_tolerance": NO_SLOW}


def refusals_duckdb_only(what: str) -> dict[str, str]:
    why = f"{what} {DUCKDB_ONLY}"
    return {"engine": why, "spark_master": why}


def add_measure_options(
    p: argparse.ArgumentParser, command: str, *, refuse: dict[str, str] | None = None, run_folder: bool = False
) -> None:
    """The input argument and every option of :data:`OPTIONS` for ``command``; ``refuse``: the options it refuses
    (dest -> why), said in its help and refused when given (:func:`check_refusals`); ``run_folder``: the input may
    also be a live recorder run folder."""
    refuse = refuse or {}
    unknown = set(refuse) - set(FLAG_OF)
    if unknown:
        raise ValueError(f"refusals of unknown options: {sorted(unknown)}")
    what = INPUT_HELP + ("" if "engine" in refuse else SPARK_INPUT_HELP) + (RUN_FOLDER_HELP if run_folder else "")
    p.add_argument("trace", metavar="INPUT", help=what)
    g = p.add_argument_group("measuring options (the same for every measuring command)")
    for o in OPTIONS:
        text = o.help if o.dest not in refuse else f"not for ett {command}: {refuse[o.dest]}"
        g.add_argument(o.flag, dest=o.dest, help=text, **o.kwargs)
    p.set_defaults(measure_command=command, measure_refusals=dict(refuse))


def given(args: argparse.Namespace, dest: str) -> bool:
    """Whether option ``dest`` was given (a value other than its default)."""
    option = next(o for o in OPTIONS if o.dest == dest)
    return getattr(args, dest, option.default) != option.default


def check_refusals(args: argparse.Namespace) -> None:
    """Refuse each option the command refuses that was given, and ``--currency`` without a price: one line each,
    naming the flag and why (an :class:`InputError`, exit 2)."""
    command = getattr(args, "measure_command", None)
    if command is None:
        return
    problems = [
        Problem(FLAG_OF[d], None, None, f"does not apply to ett {command}: {why}")
        for d, why in args.measure_refusals.items()
        if given(args, d)
    ]
    if not problems and given(args, "currency") and not given(args, "gpu_hour_price"):
        problems.append(Problem("--currency", None, None, "names the currency of --gpu-hour-price, which is not given"))
    if not problems and given(args, "spark_master") and args.engine != "spark":
        problems.append(Problem("--spark-master", None, None, "applies with --engine spark only"))
    if problems:
        raise InputError(problems)


def trace_options(args: argparse.Namespace) -> TraceOptions:
    """The options that open and cut the input (:class:`~ettcore.trace.options.TraceOptions`)."""
    return TraceOptions(**{k: getattr(args, k) for k in OPEN_OPTIONS})


def prices_of(args: argparse.Namespace) -> money.Prices | None:
    """The parsed ``--gpu-hour-price`` (``ettcore.metric.money.Prices``), or None when none was given."""
    text = getattr(args, "gpu_hour_price", None)
    return None if text is None else money.parse_prices(text, getattr(args, "currency", None) or "USD")


# ----------------------------------------------------------------------------------------------------- opening


def input_kind(args: argparse.Namespace) -> str:
    """What the input is: ``store``, ``mirror``, ``uri``, ``run folder`` or ``trace``."""
    path = args.trace
    if store.is_store(path):
        return "store"
    if is_run_folder(path):
        return "run folder"
    from ettcore.trace.load import is_uri

    if is_mirror(path):
        return "mirror"
    return "uri" if is_uri(path) else "trace"


def open_measured(args: argparse.Namespace, quiet: bool = False) -> Any:
    """The checked input with the measuring options: a trace (DuckDB, or Spark with ``--engine spark``), a fleet
    store's stored results (with ``--engine spark`` its Parquet mirror), a mirror or a URI (Spark).  What
    ``--skip-invalid`` left out, the jobs the as-of time does not reach and a store's recomputation are said on
    stderr (``quiet``: not said, the caller lists them)."""
    opts = trace_options(args)
    where, a_store = args.trace, store.is_store(args.trace)
    if a_store and args.engine == "duckdb":
        trace = store.open_store(where, opts)
        if trace.recomputed and not quiet:
            print(f"ett: {trace.recomputed}: attributing again from the store's rows", file=sys.stderr)
        return trace
    if a_store:
        where = str(mirror.mirror_for_spark(where))  # Spark reads the store's Parquet mirror (its files checked)
    elif is_mirror(where):  # a local mirror given itself: its files as published, before Spark reads them
        check_files(where, read_local_pointer(where))
    trace = engines.open_trace(where, opts, engine=args.engine, spark_master=args.spark_master)
    if quiet:
        return trace
    if trace.excluded_jobs or any(a["rejected"] for a in trace.accounting.values()):
        print(skip_report(trace), file=sys.stderr)
    if any(trace.not_started.values()):
        n = trace.not_started
        print(
            f"ett: as of {iso(trace.as_of_ms)}: {n['jobs']} job(s), {n['attempts']} attempt(s) and {n['spans']} "
            "span(s) start at or after it and are not measured",
            file=sys.stderr,
        )
    return trace


def skip_report(trace: Any) -> str:
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


def is_run_folder(path: str) -> bool:
    """A recorder run folder (``*.jsonl`` recorder files, no ``attempts`` table), not a trace folder."""
    p = Path(path)
    if "://" in str(path) or not p.is_dir() or any(p.glob("attempts.*")) or (p / "attempts").is_dir():
        return False
    return any(p.glob("*.jsonl"))


def open_live(args: argparse.Namespace, *, now_by_default: bool, scratch: Path | None = None) -> Any:
    """:func:`open_measured`, where the input may also be a live recorder run folder: it is converted first (into a
    temporary trace folder removed at exit; its last attempts without an end are running) and, with no ``--as-of``,
    is analysed now.  ``now_by_default``: analyse a trace folder now too, without ``--as-of``.  ``scratch``: convert
    into this folder instead (replaced at each call; a refresh loop's own, so that refreshes leave nothing behind).
    The trace keeps the path it was given (the export's ``trace`` label)."""
    given_path = args.trace
    run_folder = is_run_folder(given_path)
    if run_folder:
        from ettcore.importers.recorder import convert

        tmp = scratch
        if tmp is None:
            tmp = Path(tempfile.mkdtemp(prefix="ett-run-folder-"))
            atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        convert(given_path, tmp / "trace")  # its input errors name the recorder file, row and field
        args = argparse.Namespace(**{**vars(args), "trace": str(tmp / "trace")})
    if args.as_of is None and (run_folder or now_by_default):
        args = argparse.Namespace(**{**vars(args), "as_of": round(time.time(), 3)})
    trace = open_measured(args)
    if run_folder:
        trace.path = Path(given_path)
    return trace
