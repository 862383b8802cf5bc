"""The ``ett`` command.

``ett summarize``, ``ett trend`` and ``ett validate`` live here; other
subcommands are registered by the module that holds their logic (each has a
``register(subparsers)`` function, listed in ``PLUGINS``).

Exit status: 0 success, 2 bad input (one line per problem on stderr, naming
file, row and field; never a traceback).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime, timezone
from typing import Any, Callable, Sequence

import duckdb
import polars as pl

from . import __version__, engines, metric
from .errors import Problem, TraceError, summarize_problems
from .phases import ALL_COMPONENTS
from .trace import Trace, load_trace, quote_ident
from .window import iso as _iso_ms

# Modules that add subcommands: each defines register(subparsers).
PLUGINS: tuple[str, ...] = (
    "ettcore.opportunities",
    "ettcore.importers",
    "ettcore.generator",
    "ettcore.recorder",
    "ettcore.demo.live_job",
    "ettcore.report",
    "ettcore.stalls",
    "ettcore.exporters",
)

JOB_KEYS = (
    "job_id", "model", "gpus", "status", "wall_s", "productive_s", "ett_pct", "tts_s", "nof",
    "nof_failure", "nof_preemption", "ttr_total_s", "ttr_mean_s", "in_training_loss_s", "shutdown_tail_s",
)
FLEET_KEYS = ("jobs", "ett_pct", "ett_mean_pct", "wall_gpu_h", "productive_gpu_h", "nof")


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, datetime):
        return (v if v.tzinfo else v.replace(tzinfo=timezone.utc)).isoformat().replace("+00:00", "Z")
    if isinstance(v, date):
        return v.isoformat()
    return v




def _finite(name: str, dtype: pl.DataType) -> pl.Expr:
    """A column as JSON shows it: NaN and infinities as null (like :func:`_jsonable`)."""
    c = pl.col(name)
    return pl.when(c.is_finite()).then(c).otherwise(None).alias(name) if dtype.is_float() else c


def _iso(name: str) -> pl.Expr:
    """A zone-less UTC timestamp as :func:`_jsonable` writes it (``...T12:00:00Z``, fractions only when present)."""
    c = pl.col(name)
    return (pl.when(c.dt.microsecond() == 0).then(c.dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
            .otherwise(c.dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ")).alias(name))


def _job_json_fields(jobs: pl.DataFrame, labels: Sequence[str], extra: Sequence[str]) -> list[pl.Expr]:
    fields = [_finite(k, jobs.schema[k]) for k in (*JOB_KEYS, *extra)]
    fields.append(pl.struct([_finite(f"{c}_s", jobs.schema[f"{c}_s"]).alias(c) for c in ALL_COMPONENTS]).alias("components"))
    if labels:  # e.g. an imported MLPerf run's time_to_train_s (MLPerf's score) and submission
        fields.append(pl.struct([_iso(c) if jobs.schema[c] == pl.Datetime else _finite(c, jobs.schema[c]) for c in labels]).alias("labels"))
    return fields + [_iso("t0"), _iso("t1")]


def job_json_blocks(jobs: pl.DataFrame, chunk: int = 50_000, labels: Sequence[str] = (), extra: Sequence[str] = (),
                    as_bytes: bool = False, workers: int = 2):
    """Per-job objects of ``ett summarize --json`` (components and the jobs table's labels nested; ``extra``: more
    top-level keys), one JSON text a job, joined with ``,`` + newline + indent.

    Encoded and joined by Polars a chunk at a time, one string a chunk (UTF-8 ``bytes`` with ``as_bytes``), so a
    million jobs never become a million Python dicts or strings.  ``workers`` chunks are encoded at once (Polars
    releases the interpreter while it encodes), and at most ``workers`` more wait for the reader, so memory holds a
    few chunks, never the whole text; blocks come in job order.
    """
    fields = _job_json_fields(jobs, labels, extra)

    def encode(part: pl.DataFrame):
        block = part.select(pl.struct(fields).struct.json_encode().str.join(",\n    "))
        return block.to_series().cast(pl.Binary).item() if as_bytes else block.item()

    if workers <= 1:
        yield from map(encode, jobs.iter_slices(chunk))
        return
    with ThreadPoolExecutor(workers) as pool:
        pending: deque = deque()
        for part in jobs.iter_slices(chunk):
            pending.append(pool.submit(encode, part))
            if len(pending) > workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _utf8_buffer(out):
    """``out``'s binary buffer where it has one and writes UTF-8 (a file or standard output), else None: a text
    stream's ``write`` of a long string costs ten times as much as writing its bytes (2.4 s against 0.2 s for the
    680 MB of a million jobs' JSON)."""
    return getattr(out, "buffer", None) if str(getattr(out, "encoding", "")).lower().replace("-", "") == "utf8" else None


def write_summary_json(head: dict, jobs: pl.DataFrame, tail: dict, out=None, labels: Sequence[str] = (),
                       extra: Sequence[str] = ()) -> None:
    """One JSON object: ``head``'s keys, then ``jobs`` (streamed, one job a line, ``labels`` nested), then ``tail``'s keys.

    The jobs go to ``out``'s binary buffer where it has one and writes UTF-8 (:func:`_utf8_buffer`)."""
    out = out or sys.stdout
    out.write("{\n")
    for k, v in head.items():
        out.write(f"  {json.dumps(k)}: {json.dumps(v)},\n")
    out.write('  "jobs": [')
    raw = _utf8_buffer(out)
    out.flush()
    stream, lead, sep = (raw, b"\n    ", b",\n    ") if raw is not None else (out, "\n    ", ",\n    ")
    first = True
    for block in job_json_blocks(jobs, labels=labels, extra=extra, as_bytes=raw is not None):
        stream.write((lead if first else sep) + block)
        first = False
    stream.flush()
    out.write("]" if first else "\n  ]")
    for k, v in tail.items():
        body = json.dumps(v, indent=2).replace("\n", "\n  ")
        out.write(f",\n  {json.dumps(k)}: {body}")
    out.write("\n}\n")


def group_records(groups: pl.DataFrame, key: str | None, extra: Sequence[str] = ()) -> list[dict]:
    """Fleet or group rows as ``summarize --json`` writes them (``extra``: ``("excluded_s",)`` adds ``excluded_gpu_h``)."""
    out = []
    for r in groups.iter_rows(named=True):
        rec = {key: _jsonable(r[key])} if key else {}
        rec.update({k: _jsonable(r[k]) for k in FLEET_KEYS})
        rec.update({f"{k[:-2]}_gpu_h": _jsonable(r[f"{k[:-2]}_gpu_h"]) for k in extra})
        rec["components_gpu_h"] = {c: r[f"{c}_gpu_h"] for c in ALL_COMPONENTS}
        rec["l1_gpu_h"] = {b: r[f"{b}_gpu_h"] for b in ("tts", "ttr_total", "in_training_loss", "shutdown_tail")}
        out.append(rec)
    return out


def _cell(v: Any, digits: int) -> str:
    """One value as a table cell: ``-`` for missing, floats with thousands separators and ``digits`` decimals."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(_jsonable(v))


def _cells(df: pl.DataFrame, columns: Sequence[str], digits: int) -> pl.DataFrame:
    """Each of ``columns`` as the text of its cells (:func:`_cell`), computed a column at a time, not a value at a time.

    Floats are formatted by DuckDB's ``format`` (the same digits as Python's ``format``, thousands separators
    included; ``tests/test_cli.py`` holds the two equal), integers and strings by Polars; any other type (dates,
    zoned times, lists) one value at a time by :func:`_cell`."""
    floats = [c for c in columns if df.schema[c].is_float()]
    out: dict[str, pl.Series] = {}
    if floats:
        con = duckdb.connect()
        try:
            con.register("table_cells", df.select(pl.col(floats).cast(pl.Float64)))
            body = ", ".join(f"format($f, {quote_ident(c)}) AS {quote_ident(c)}" for c in floats)
            got = con.sql(f"SELECT {body} FROM table_cells", params={"f": "{:,.%df}" % int(digits)}).pl()
        finally:
            con.close()
        out.update({c: got[c] for c in floats})
    for c in columns:
        if c in out:
            continue
        dtype, col = df.schema[c], df[c]
        if dtype.is_integer() or dtype == pl.String:
            out[c] = col.cast(pl.String)
        elif dtype == pl.Boolean:
            out[c] = pl.select(pl.when(col).then(pl.lit("True")).when(col.not_()).then(pl.lit("False"))).to_series()
        else:
            out[c] = col.map_elements(lambda v: _cell(v, digits), return_dtype=pl.String, skip_nulls=False)
    return pl.DataFrame([out[c].fill_null("-").alias(f"c{i}") for i, c in enumerate(columns)])


def table_blocks(df: pl.DataFrame, columns: Sequence[str], digits: int = 1, chunk: int = 100_000):
    """A plain fixed-width table for a terminal, as text blocks: the header and rule, then ``chunk`` rows a block
    (each block ends with a newline)."""
    cells = _cells(df, columns, digits)
    widths = [max(len(c), cells[f"c{i}"].str.len_chars().max() or 0) for i, c in enumerate(columns)]
    yield "  ".join(c.rjust(w) for c, w in zip(columns, widths)) + "\n" + "  ".join("-" * w for w in widths) + "\n"
    padded = [pl.col(f"c{i}").str.pad_start(w) for i, w in enumerate(widths)]
    for part in cells.iter_slices(chunk):
        if part.height:
            yield part.select(pl.concat_str(padded, separator="  ").str.join("\n")).item() + "\n"


def format_table(df: pl.DataFrame, columns: Sequence[str], digits: int = 1) -> str:
    """A plain fixed-width table for a terminal (:func:`table_blocks` as one string, without the final newline)."""
    return "".join(table_blocks(df, columns, digits))[:-1]


def write_table(df: pl.DataFrame, columns: Sequence[str], digits: int = 1, out=None) -> None:
    """:func:`table_blocks` written to ``out`` (standard output by default) as they are made, as UTF-8 bytes where the
    stream takes them (:func:`_utf8_buffer`)."""
    out = out or sys.stdout
    raw = _utf8_buffer(out)
    out.flush()
    write = out.write if raw is None else (lambda block: raw.write(block.encode()))  # the stream chosen once
    for block in table_blocks(df, columns, digits):
        write(block)
    (raw or out).flush()


def open_checked(args: argparse.Namespace) -> Trace:
    """The checked trace: DuckDB for a local path, Spark alone for a URI with --engine spark (see ettcore.engines)."""
    trace = engines.open_trace(
        args.trace, getattr(args, "engine", "duckdb"), getattr(args, "spark_master", engines.DEFAULT_MASTER), mapping=args.mapping,
        as_of=args.as_of, skip_invalid=args.skip_invalid, memory_limit=args.memory_limit, temp_directory=args.temp_directory,
        since=args.since, until=args.until, exclude=args.exclude,
    )
    if trace.excluded_jobs or any(a["rejected"] for a in trace.accounting.values()):
        print(skip_report(trace), file=sys.stderr)
    if any(trace.not_started.values()):
        n = trace.not_started
        print(
            f"ett: as of {_iso_ms(trace.as_of_ms)}: {n['jobs']} job(s), {n['attempts']} attempt(s) and {n['spans']} span(s)"
            " start at or after it and are not measured",
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


def exclusion_records(exclusions: pl.DataFrame) -> list[dict]:
    """The exclusion windows as ``summarize --json`` lists them: file order, times ISO-8601, what each left out."""
    return [{k: _jsonable(v) for k, v in r.items() if k != "exclusion_id"} for r in exclusions.iter_rows(named=True)]


def window_head(trace: Trace, m: Any) -> dict[str, Any]:
    """The ``window`` and ``exclusions`` keys of a JSON output: present only when a window or an exclusion is set."""
    w = trace.window
    if w.whole:
        return {}
    head: dict[str, Any] = {"window": {"since": _iso_ms(w.since_ms), "until": _iso_ms(w.until_ms)}}
    if w.exclusions:
        head["exclusions"] = exclusion_records(m.exclusion_summary(trace))
    return head


def print_window(trace: Trace, m: Any, out=None) -> None:
    """The measured window and the exclusion windows, as lines of text (nothing for the default whole trace)."""
    out = out or sys.stdout
    w = trace.window
    if w.since_ms is not None or w.until_ms is not None:
        print(f"Measured from {_iso_ms(w.since_ms) or 'the start'} to {_iso_ms(w.until_ms) or 'the end'} (each job's time clipped to it).", file=out)
    if w.exclusions:
        ex = m.exclusion_summary(trace)
        print(f"Exclusion windows (left out of wall time, every bucket and NoF; {ex.height}):", file=out)
        print(format_table(ex, ["start", "end", "reason", "job", "label", "jobs", "wall_gpu_h", "productive_gpu_h", "nof"], digits=2), file=out)
    if not w.whole:
        print(file=out)


def cmd_summarize(args: argparse.Namespace) -> int:
    trace = open_checked(args)
    m = engines.metric_for(args.engine, args.spark_master)
    jobs = m.job_summary(trace)
    fleet = m.fleet_summary(trace)
    groups = m.fleet_summary(trace, by=args.by) if args.by else None
    extra = ("excluded_s",) if trace.window.exclusions else ()
    if args.json:
        head = {"trace": str(args.trace), "synthetic": trace.synthetic, "as_of": _iso_ms(trace.as_of_ms), **window_head(trace, m)}
        tail: dict[str, Any] = {
            "fleet": group_records(fleet, None, extra)[0] if fleet.height else None,
            "accounting": trace.accounting,
            "not_started_by_as_of": trace.not_started,
        }
        if groups is not None:
            tail["groups"] = group_records(groups, args.by, extra)
        write_summary_json(head, jobs, tail, labels=[c for c in trace.labels if c in jobs.columns], extra=extra)
    elif args.csv:
        print(jobs.with_columns(pl.col(pl.Datetime).dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")).write_csv(), end="")
    else:
        if trace.synthetic:
            print("SYNTHETIC trace: " + str(trace.metadata.get("description", "generated data, not measured")))
        print_window(trace, m)
        cols = ["job_id", "model", "gpus", "status", "wall_s", "productive_s", "ett_pct", "tts_s", "nof", "ttr_total_s",
                "in_training_loss_s", "shutdown_tail_s"]
        write_table(jobs, cols)  # a row a job: streamed, not built as one string
        print()
        print("Level 2 components (seconds, non-productive time):")
        write_table(jobs, ["job_id", *[f"{c}_s" for c in ALL_COMPONENTS]])
        print()
        labels = [c for c in trace.labels if c in jobs.columns]
        if labels:  # the jobs table's own columns (for an imported MLPerf run: time_to_train_s, MLPerf's score, ...)
            print("Job labels (from the jobs table):")
            write_table(jobs, ["job_id", *labels], digits=3)
            print()
        if groups is not None:
            print(f"By {args.by}:")
            print(format_table(groups, [args.by, *FLEET_KEYS], digits=2))
            print()
        print("Fleet (GPU-time weighted):")
        print(format_table(fleet, list(FLEET_KEYS) + ["excluded_gpu_h"] * bool(extra), digits=2))
    return 0


def cmd_trend(args: argparse.Namespace) -> int:
    trace = open_checked(args)
    m = engines.metric_for(args.engine, args.spark_master)
    df = m.trend(trace, every=args.every, window=args.window)
    if args.json or args.csv:
        print_window(trace, m, out=sys.stderr)  # the output itself stays one list / one table
    if args.json:
        print(json.dumps([{k: _jsonable(v) for k, v in r.items()} for r in df.iter_rows(named=True)], indent=2))
    elif args.csv:
        print(df.with_columns(pl.col(pl.Datetime).dt.strftime("%Y-%m-%dT%H:%M:%SZ")).write_csv(), end="")
    else:
        if trace.synthetic:
            print("SYNTHETIC trace")
        print_window(trace, m)
        print(format_table(df, df.columns, digits=2))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    if engines.is_uri(args.trace):
        raise TraceError(Problem(args.trace, None, None, "validate reads local paths only; for a URI, 'ett summarize URI --engine spark'"
                                 " runs the same checks on Spark and lists every problem"))
    try:
        trace = load_trace(args.trace, mapping=args.mapping, skip_invalid=True)
    except TraceError as exc:
        for line in summarize_problems(exc.problems):
            print(line, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"problems": [p.as_dict() for p in trace.problems], "accounting": trace.accounting}, indent=2))
    else:
        for line in summarize_problems(trace.problems):
            print(line)
        acc = ", ".join(f"{t}: {a['read']} rows" for t, a in trace.accounting.items())
        print(f"{len(trace.problems)} problem(s) in {args.trace} ({acc})")
    return 2 if trace.problems else 0


def add_trace_args(p: argparse.ArgumentParser, as_of: bool = True, uri: bool = True) -> None:
    """The trace argument and the options every measuring command shares (as-of, window, exclusions, limits)."""
    where = "trace folder (jobs/attempts/spans as Parquet, CSV, JSONL or Parquet folders) or DuckDB file"
    if uri:
        where += "; with --engine spark also a URI of a Parquet trace (s3a://, hdfs://, gs://, abfss://, file:///)"
    p.add_argument("trace", help=where)
    p.add_argument("--mapping", metavar="FILE", help="phase/owner mapping file (YAML or JSON) extending the defaults")
    if as_of:
        p.add_argument("--as-of", metavar="T", help="analysis time for running jobs: ISO-8601 (zone-less = UTC) or epoch seconds")
        p.add_argument("--since", metavar="T", help="measure only from T on (ISO-8601, Z allowed, or epoch seconds); jobs that started "
                       "earlier keep their attribution")
        p.add_argument("--until", metavar="T", help="measure only before T (as --since); the window is [since, until)")
        p.add_argument("--exclude", metavar="FILE", help="exclusion windows (CSV or JSON: start, end, reason, optional job or label=value) "
                       "left out of wall time, every bucket and NoF, and listed in the output")
        p.add_argument("--skip-invalid", action="store_true", help="leave out jobs with problems (and say which) instead of refusing")
        p.add_argument("--memory-limit", metavar="SIZE", help="cap DuckDB's memory (e.g. 8GB; default: $ETT_MEMORY_LIMIT, else 3GB or 80%% of the machine where less); "
                       "a trace too large for it is attributed in batches of jobs and other work spills to disk, with the same "
                       "answers (not used for a URI)")
        p.add_argument("--temp-directory", metavar="DIR", help="where DuckDB spills when over --memory-limit, and where batched attribution "
                       "writes its temporary files (those default to the system temporary folder)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ett", description="Effective Training Time (ETT%) of training-job traces.")
    parser.add_argument("--version", action="version", version=f"ett {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("summarize", help="ETT%%, L1 and L2 per job, per group and for the fleet")
    add_trace_args(p)
    engines.add_engine_args(p)
    p.add_argument("--by", metavar="KEY", help="group by 'model', 'gpus' or any column of the jobs table")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object: jobs, fleet (and groups with --by)")
    fmt.add_argument("--csv", action="store_true", help="per-job rows as CSV")
    p.set_defaults(func=cmd_summarize)

    p = sub.add_parser("trend", help="fleet ETT%% and component GPU-hours per calendar bucket (prorated per instant), or rolling over a window")
    add_trace_args(p)
    engines.add_engine_args(p)
    p.add_argument("--every", default="day", metavar="BUCKET",
                   help="bucket (UTC): hour, day, week, month, or a duration that divides a day (5m, 15m, 2h); "
                        "hour and durations roll over --window (default: one bucket)")
    p.add_argument("--window", metavar="DURATION", help="trailing window at each bucket end (24h, 7d, ...; a whole number of buckets, "
                   "with --every hour, day or a duration)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="a JSON list, one object a bucket")
    fmt.add_argument("--csv", action="store_true", help="CSV, one row a bucket")
    p.set_defaults(func=cmd_trend)

    p = sub.add_parser("validate", help="list every problem of a trace with file, row and field (exit 2 if any)")
    add_trace_args(p, as_of=False, uri=False)
    p.add_argument("--json", action="store_true", help="problems and row accounting as JSON")
    p.set_defaults(func=cmd_validate)

    for name in PLUGINS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return func(args)
    except TraceError as exc:
        for line in summarize_problems(exc.problems):
            print(f"ett: {line}", file=sys.stderr)
        return 2
    except duckdb.IOException as exc:
        print(f"ett: {Problem(str(getattr(args, 'trace', '?')), None, None, str(exc).splitlines()[0]).line()}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
