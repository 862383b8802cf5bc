"""``ett trend INPUT --every BUCKET [--window DURATION]``: fleet ETT%, component GPU-hours, slow time and crash loops
per bucket."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ettcore import metric
from ettcore.cli import slow_fields
from ettcore.cli.measure_options import add_measure_options, open_measured, refusals_no_money
from ettcore.cli.output import (
    envelope,
    format_table,
    print_head,
    print_window,
    records,
    write_answer,
    write_csv,
)
from ettcore.metric import restarts


def run(args: argparse.Namespace) -> int:
    trace = open_measured(args)
    df = metric.trend(trace, every=args.every, window=args.window)
    df, slowed = slow_fields.with_trend_columns(trace, df, args.every, args.window, args.slow_tolerance)
    df = restarts.trend(trace, df, every=args.every, window=args.window)  # crash-loop restarts and their GPU-hours
    if args.json:
        doc = envelope("trend", "trend", trace, args)
        doc.update(every=args.every, window_length=args.window, buckets=records(df))
        if slowed is not None:
            doc["slow"] = slowed
        write_answer(doc)
    elif args.csv:
        print_window(trace, out=sys.stderr)  # the CSV itself stays one table
        write_csv(df, trace)
    else:
        print_head(trace)
        print(format_table(df, df.columns, digits=2))
    return 0


def register(sub: Any) -> None:
    """Add ``ett trend``."""
    p = sub.add_parser(
        "trend",
        help="fleet ETT%% and component GPU-hours per calendar bucket (prorated per instant), or rolling over a window",
    )
    add_measure_options(p, "trend", refuse=refusals_no_money())
    p.add_argument(
        "--every",
        default="day",
        metavar="BUCKET",
        help="bucket (UTC): hour, day, week, month, or a duration that divides a day (5m, 15m, 2h); "
        "hour and durations roll over --window (default: one bucket)",
    )
    p.add_argument(
        "--window",
        metavar="DURATION",
        help="trailing window at each bucket end (24h, 7d, ...; a whole number of buckets, "
        "with --every hour, day or a duration)",
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object: the envelope and one object a bucket")
    fmt.add_argument("--csv", action="store_true", help="CSV, one row a bucket")
    p.set_defaults(func=run)
