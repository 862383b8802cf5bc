"""``ett opportunities TRACE``: owners' components ranked by the GPU-hours a day a target would return."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import polars as pl

from ettcore import metric, store
from ettcore.cli.common import add_money_args, prices_of, skip_report
from ettcore.cli.output import format_table
from ettcore.errors import InputError, Problem
from ettcore.metric import money
from ettcore.planning.opportunities import (
    BY_CHOICES,
    lost_by_component,
    rank_opportunities,
    repeated_components,
    window_days,
)
from ettcore.trace import load_trace


def run(args: argparse.Namespace) -> int:
    """``ett opportunities``: load the trace, build the lost-time frame, rank, print (exit 2 on bad input)."""
    try:
        prices = prices_of(args)
        if store.is_store(args.trace):  # a fleet store: its stored per-job results
            trace = store.open_store(args.trace, mapping=args.mapping, as_of=args.as_of)
        else:
            trace = load_trace(args.trace, mapping=args.mapping, as_of=args.as_of, skip_invalid=args.skip_invalid)
        if trace.excluded_jobs:
            print(skip_report(trace), file=sys.stderr)
        summary = metric.job_summary(trace)
        if args.comparable not in summary.columns:
            raise InputError(
                Problem(
                    "--comparable",
                    None,
                    "comparable",
                    f"unknown column {args.comparable!r}; choose one of: {', '.join(summary.columns)}",
                )
            )
        if summary.height == 0:
            raise InputError(Problem(str(args.trace), None, None, "the trace has no jobs to rank"))
        lost = lost_by_component(summary, metric.l2_matrix(trace), comparable=args.comparable)
        if prices is not None:  # each job's price; nothing for the components that hold no GPU (scheduling)
            priced = summary.select("job_id", prices.job_prices(summary).alias("price_per_gpu_h"))
            lost = lost.join(priced, on="job_id", how="left").with_columns(
                pl.when(pl.col("component").is_in(list(money.UNBILLED)))
                .then(0.0)
                .otherwise(pl.col("price_per_gpu_h"))
                .alias("price_per_gpu_h")
            )
        days = args.days if args.days is not None else window_days(summary)
        repeated = repeated_components(trace.phase_map)
        ranked = rank_opportunities(lost, window_days=days, cut=args.cut, by=args.by, repeated=repeated)
    except InputError as exc:
        for p in exc.problems:
            print(f"ett: {p.line()}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"ett: {args.trace}: {exc}", file=sys.stderr)
        return 2
    target = (
        {"kind": "cut", "fraction": args.cut}
        if args.cut is not None
        else {"kind": "best_decile", "comparable": args.comparable}
    )
    if args.json:
        doc: dict[str, Any] = {
            "trace": str(args.trace),
            "synthetic": trace.synthetic,
            "window_days": days,
            "target": target,
            "by": args.by,
            **({"money": prices.as_dict()} if prices is not None else {}),
            "rows": ranked.to_dicts(),
        }
        print(json.dumps(doc, indent=2))
        return 0
    if trace.synthetic:
        print("SYNTHETIC trace: " + str(trace.metadata.get("description", "generated data, not measured")))
    what = (
        f"a {100 * args.cut:g}% cut"
        if args.cut is not None
        else f"the best decile of jobs with the same {args.comparable}"
    )
    print(f"GPU-hours a day returned if each {'owner' if args.by == 'owner' else 'component'} fell to {what}")
    print(f"(observation window {days:.3g} days; (1 + NoF) counted for {', '.join(sorted(repeated))})")
    if prices is not None:
        print(
            f"ranked by {prices.currency} a day returned, at {prices.describe()} "
            f"({', '.join(money.UNBILLED)} holds no GPU: not billed)"
        )
    cols = [
        "rank",
        "owner",
        *(["component"] if args.by == "component" else []),
        "jobs",
        "lost_gpu_h_per_day",
        "returned_gpu_h_per_day",
        "returned_share_pct",
        *(["lost_cost_per_day", "returned_cost_per_day"] if prices is not None else []),
    ]
    print(format_table(ranked, cols, digits=2))
    return 0


def _fraction(text: str) -> float:
    try:
        v = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError("give a fraction in (0, 1] or a percentage like 30%")
    return v


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(v) and 1e-3 <= v <= 1e5):
        raise argparse.ArgumentTypeError("must be a finite number of days between 0.001 and 100000")
    return v


def register(subparsers: Any) -> None:
    """Add ``ett opportunities TRACE [--by owner|component] [--cut F | (best decile)] [--json]``."""
    p = subparsers.add_parser("opportunities", help="rank owners' components by GPU-hours a day a target would return")
    p.add_argument("trace", help="trace folder or DuckDB file")
    p.add_argument("--mapping", metavar="FILE", help="phase/owner mapping file (YAML or JSON) extending the defaults")
    p.add_argument(
        "--as-of", metavar="T", help="analysis time for running jobs: ISO-8601 (zone-less = UTC) or epoch seconds"
    )
    p.add_argument("--skip-invalid", action="store_true", help="leave out jobs with problems instead of refusing")
    p.add_argument(
        "--by", choices=BY_CHOICES, default="component", help="one row per owner's component (default) or per owner"
    )
    p.add_argument(
        "--cut", type=_fraction, metavar="F", help="target: cut each component by F (0.3 or 30%%); default: best decile"
    )
    p.add_argument(
        "--comparable", default="model", metavar="COL", help="job column that makes jobs comparable for the best decile"
    )
    p.add_argument("--days", type=_positive, metavar="D", help="window in days for 'a day' (default: the trace's span)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_money_args(p)
    p.set_defaults(func=run)
