"""``ett opportunities TRACE``: owners' components ranked by the GPU-hours a day a target would return."""

from __future__ import annotations

import argparse
import math
from typing import Any

import polars as pl

from ettcore import metric
from ettcore.cli.measure_options import add_measure_options, open_measured, prices_of, refusals_no_slow
from ettcore.cli.output import envelope, format_table, print_head, records, write_answer
from ettcore.cli.plan_options import add_plan_options, checked_plan
from ettcore.errors import InputError, Problem
from ettcore.metric import money
from ettcore.planning import checkpoint_advice as advice
from ettcore.planning.opportunities import (
    BY_CHOICES,
    lost_by_component,
    rank_opportunities,
    repeated_components,
    window_days,
)


def run(args: argparse.Namespace) -> int:
    """``ett opportunities``: open the input, build the lost-time frame, rank, print (exit 2 on bad input)."""
    prices = prices_of(args)
    work_h, ttr_s = checked_plan(args)
    trace = open_measured(args)
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
    try:
        ranked = rank_opportunities(lost, window_days=days, cut=args.cut, by=args.by, repeated=repeated)
    except ValueError as exc:
        raise InputError(Problem(str(args.trace), None, None, str(exc))) from None
    checkpointing = advice.checkpoint_advice(trace, work_h, ttr_s)
    plan = {"work_h": work_h, "ttr_s": ttr_s, "save_phase": advice.SAVE_PHASE}
    target = (
        {"kind": "cut", "fraction": args.cut}
        if args.cut is not None
        else {"kind": "best_decile", "comparable": args.comparable}
    )
    if args.json:
        doc = envelope("opportunities", "opportunities", trace, args)
        doc.update(window_days=days, target=target, by=args.by)
        if prices is not None:
            doc["money"] = prices.as_dict()
        doc["rows"] = records(ranked)
        doc.update(checkpointing=records(checkpointing), checkpointing_plan=plan)
        write_answer(doc)
        return 0
    print_head(trace)
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
    _print_checkpointing(checkpointing, work_h, ttr_s)
    return 0


def _print_checkpointing(checkpointing: pl.DataFrame, work_h: float, ttr_s: float) -> None:
    print()
    print(
        f"Checkpoint interval that maximizes expected ETT%, per model and size (measured: interruptions per GPU-hour, "
        f"{advice.SAVE_PHASE} blocking and today's interval; planned: {work_h:g} h of training (--work-h), "
        f"{ttr_s:g} s restart overhead (--ttr-s); a model without an interruption takes the fleet's rate at its "
        "size):"
    )
    cols = [
        "model",
        "gpus",
        "interruptions",
        "held_gpu_h",
        "rate_from",
        "blocking_s",
        "interval_s",
        "today_ett_pct",
        "best_interval_s",
        "best_ett_pct",
        "young_s",
        "advice",
    ]
    print(format_table(checkpointing, cols, digits=2) if checkpointing.height else "no job")


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
    add_measure_options(p, "opportunities", refuse=refusals_no_slow())
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
    add_plan_options(p.add_argument_group("the planned job of the checkpoint advice"))  # --work-h, --ttr-s
    p.add_argument("--json", action="store_true", help="one JSON object: the envelope and the ranked rows")
    p.set_defaults(func=run)
