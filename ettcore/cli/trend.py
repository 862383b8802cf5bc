"""``ett trend TRACE --every BUCKET [--window DURATION]``: fleet ETT% and component GPU-hours per bucket."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import polars as pl

from ettcore import metric
from ettcore.cli.common import add_engine_args, add_trace_args, open_checked, print_window
from ettcore.cli.output import format_table, jsonable


def run(args: argparse.Namespace) -> int:
    trace = open_checked(args)
    df = metric.trend(trace, every=args.every, window=args.window)
    if args.json or args.csv:
        print_window(trace, out=sys.stderr)  # the output itself stays one list / one table
    if args.json:
        print(json.dumps([{k: jsonable(v) for k, v in r.items()} for r in df.iter_rows(named=True)], indent=2))
    elif args.csv:
        print(df.with_columns(pl.col(pl.Datetime).dt.strftime("%Y-%m-%dT%H:%M:%SZ")).write_csv(), end="")
    else:
        if trace.synthetic:
            print("SYNTHETIC trace")
        print_window(trace)
        print(format_table(df, df.columns, digits=2))
    return 0


def register(sub: Any) -> None:
    """Add ``ett trend``."""
    p = sub.add_parser(
        "trend",
        help="fleet ETT%% and component GPU-hours per calendar bucket (prorated per instant), or rolling over a window",
    )
    add_trace_args(p)
    add_engine_args(p)
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
    fmt.add_argument("--json", action="store_true", help="a JSON list, one object a bucket")
    fmt.add_argument("--csv", action="store_true", help="CSV, one row a bucket")
    p.set_defaults(func=run)
