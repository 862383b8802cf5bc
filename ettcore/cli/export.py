"""``ett export prometheus TRACE [--out FILE] [--every DURATION]``: the Prometheus text exposition format, to stdout
or written atomically to a file (node_exporter's textfile collector must never read a half-written file); with
``--every``, written again and again until stopped (the refresher of a live run folder, a growing trace or a store).
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb

from ettcore.atomic import write_text
from ettcore.cli.measure_options import (
    add_measure_options,
    open_live,
    prices_of,
    refusals_duckdb_only,
)
from ettcore.cli.stalls import add_live_args, live_options
from ettcore.cli.storm_options import add_storm_options, storm_thresholds
from ettcore.errors import InputError, Problem, summarize_problems
from ettcore.exporters import alert_rules, prometheus
from ettcore.metric.slow import check_tolerance
from ettcore.trace.instants import iso

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h|d)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_s(text: str, flag: str) -> float | None:
    """``30m``, ``24h``, ``7d`` (or ``all``: None) as seconds; anything else an input error naming the flag."""
    if text == "all":
        return None
    m = _DURATION.match(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise InputError(
            Problem(
                flag,
                None,
                flag.lstrip("-"),
                f"a duration is a positive number and s, m, h or d (24h), or all: {text!r}",
            )
        )
    return float(m.group(1)) * _UNIT_S[m.group(2)]


def run_prometheus(args: argparse.Namespace) -> int:
    prices = prices_of(args)
    within = duration_s(args.job_series_within, "--job-series-within")
    tolerance = check_tolerance(args.slow_tolerance)
    n, window_ms = storm_thresholds(args)
    storms = {"storm_by": args.storm_by, "storm_interruptions": n, "storm_window": f"{window_ms}ms"}
    options = {
        "prices": prices,
        "job_series_within_s": within,
        "slow_tolerance": tolerance,
        **storms,
        **live_options(args),
    }
    if args.every is None:
        trace = open_live(args, now_by_default=False)
        if args.out:
            n = _write_out(trace, args.out, options)
            print(f"wrote {args.out} ({n} samples)", file=sys.stderr)
        else:
            prometheus.write(trace, sys.stdout, **options)
        return 0
    every = duration_s(args.every, "--every")
    if every is None or not args.out or (args.count is not None and args.count < 1):
        why = "a positive DURATION (2s, 1m), with --out FILE and, if given, --count of at least 1"
        raise InputError(Problem("--every", None, "every", why))
    return refresh(args, options, every)


def _write_out(trace, out: str, options: dict) -> int:
    """The export of ``trace`` written atomically to ``out``; returns its number of samples."""
    buf = io.StringIO()
    n = prometheus.write(trace, buf, **options)
    write_text(out, buf.getvalue())
    return n


def refresh(args: argparse.Namespace, options: dict, every_s: float) -> int:
    """``--every``: export to ``--out`` every ``every_s`` seconds (a run folder converted anew and analysed at that
    instant each time) until SIGTERM or SIGINT (the write under way finishes: the file is always a whole export) or
    ``--count`` refreshes.  The first refresh's input error ends the command (exit 2); a later one is reported on
    stderr, the file keeps its last whole export (the stale-export alert sees its age) and the next refresh tries
    again.  A refresh that takes longer than ``every_s`` is followed at once by the next."""
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    scratch = Path(tempfile.mkdtemp(prefix="ett-refresh-"))
    done, due = 0, time.monotonic()
    try:
        while not stop.is_set():
            started = time.monotonic()
            try:
                trace = open_live(args, now_by_default=False, scratch=scratch)
                n = _write_out(trace, args.out, options)
                trace.con.close()
            except (InputError, duckdb.IOException) as exc:
                if done == 0:
                    raise
                problems = exc.problems if isinstance(exc, InputError) else [Problem(args.trace, None, None, str(exc))]
                for line in summarize_problems(problems):
                    print(f"ett: refresh {done + 1} failed ({args.out} keeps its last export): {line}", file=sys.stderr)
            else:
                as_of = f" as of {iso(trace.as_of_ms)}" if trace.as_of_ms is not None else ""
                took = time.monotonic() - started
                print(f"wrote {args.out}{as_of} ({n} samples, {took:.1f} s)", file=sys.stderr, flush=True)
            done += 1
            if args.count is not None and done >= args.count:
                break
            due = max(due + every_s, time.monotonic())
            stop.wait(due - time.monotonic())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def run_rules(args: argparse.Namespace) -> int:
    text = alert_rules.rules_yaml({t.name: getattr(args, t.name) for t in alert_rules.THRESHOLDS})
    if args.out:
        write_text(args.out, text)
        print(f"wrote {args.out} ({len(alert_rules.RULE_NAMES)} rules)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def register(sub) -> None:
    p = sub.add_parser("export", help="write the metric where dashboards read it (Prometheus text format)")
    kinds = p.add_subparsers(dest="export_kind", metavar="FORMAT", required=True)
    q = kinds.add_parser(
        "prometheus",
        help="fleet, per-model and per-job gauges in the Prometheus text exposition format "
        "(seconds and ratios; for node_exporter's textfile collector)",
    )
    # the export's stalls and live hang detection read the DuckDB views (ettcore.metric.stalls, .hangs)
    add_measure_options(q, "export prometheus", refuse=refusals_duckdb_only("the export"), run_folder=True)
    q.add_argument(
        "--out",
        metavar="FILE",
        help="write to FILE (atomically: a temporary file renamed into place) instead of stdout",
    )
    q.add_argument(
        "--job-series-within",
        metavar="DURATION",
        default="24h",
        help="per-job series only for jobs running or ended within DURATION before the as-of time (default 24h; "
        "'all' for every job); fleet and model series are always written",
    )
    q.add_argument(
        "--every",
        metavar="DURATION",
        help="refresh: write --out again every DURATION (2s, 1m; a run folder re-read and analysed at that instant "
        "each time) until SIGTERM/SIGINT; a later refresh's error is reported and the file keeps its last export",
    )
    q.add_argument("--count", type=int, metavar="N", help="with --every: stop after N refreshes")
    add_live_args(q)  # the thresholds of ett_job_hung
    add_storm_options(q)  # the restart storms' (ett_fleet_restart_storm*)
    q.set_defaults(func=run_prometheus)
    r = kinds.add_parser(
        "prometheus-rules",
        help="the project's Prometheus alerting rules (hung job, ETT%% below a threshold, interruption burst, "
        "pending and recovery too long, stale export), with thresholds as options",
    )
    for t in alert_rules.THRESHOLDS:
        r.add_argument(t.flag, dest=t.name, metavar="VALUE", help=f"{t.help} (default {t.default})".replace("%", "%%"))
    r.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    r.set_defaults(func=run_rules)
