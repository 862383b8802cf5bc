"""Ranked opportunities: where cutting an owner's component returns the most GPU-hours a day.

Input (documented so the ranking is testable without a trace): a long *lost
time* frame, one row per job and component, every job having a row for every
component (0 where it lost nothing)::

    job_id, group, gpus, nof, component, owner, seconds

``seconds`` is the job's non-productive time given to the component, over all
L1 buckets (TTS, recovery, in-training loss, shutdown tail); ``group`` says which
jobs are comparable (by default the model).  :func:`lost_by_component` builds it
from ``metric.job_summary`` and ``metric.l2_matrix``.

For each job and component (formulas; all per job, then summed)::

    k       = 1 + NoF  for components every restart repeats (REPEATED), else 1
    level   = seconds / k                  # per occurrence
    target  = level x (1 - cut)            # a percentage cut, or
            = 10th percentile of level over the comparable jobs (best decile)
    saved_s = k x max(0, level - target)   # (1 + NoF) counted for repeated phases
    gpu_h_per_day = gpus x saved_s / 3600 / window_days

Assumptions: every occurrence of a repeated component costs the same (the
measured recoveries may be cheaper, e.g. a warm compile cache: ``level`` is then
their average); the observation window's rate of jobs continues; the best
decile uses linear interpolation, and a group of one job has no better peer
(its target is its own level).
"""

from __future__ import annotations

import argparse
import math
import json
import sys
from typing import Any

import polars as pl

__all__ = [
    "REPEATED",
    "LOST_COLUMNS",
    "lost_by_component",
    "window_days",
    "rank_opportunities",
    "register",
]

REPEATED: frozenset[str] = frozenset({"scheduling", "hardware_setup", "trainer_init", "pt2_compile"})
"""Components whose phases every restart repeats (re-queue, setup, initialisation, compilation)."""

LOST_COLUMNS: tuple[str, ...] = ("job_id", "group", "gpus", "nof", "component", "owner", "seconds")
BY_CHOICES: tuple[str, ...] = ("component", "owner")


def lost_by_component(summary: pl.DataFrame, l2: pl.DataFrame, comparable: str = "model") -> pl.DataFrame:
    """The lost-time frame (module docstring) from ``metric.job_summary`` and ``metric.l2_matrix``.

    Sums ``l2`` seconds per job and component over every bucket except
    ``productive``; fills 0 for components a job never lost time to (every
    component that appears anywhere in ``l2`` gets a row for every job), so the
    best decile counts jobs that already reach zero.  ``comparable`` names the
    summary column that groups comparable jobs.
    """
    need = {"job_id", "gpus", "nof", comparable}
    if not need <= set(summary.columns):
        raise ValueError(f"job summary lacks column(s) {sorted(need - set(summary.columns))}")
    need_l2 = {"job_id", "bucket", "component", "owner", "seconds"}
    if not need_l2 <= set(l2.columns):
        raise ValueError(f"l2 matrix lacks column(s) {sorted(need_l2 - set(l2.columns))}")
    lost = l2.filter(pl.col("bucket") != "productive")
    owners = lost.group_by("component").agg(pl.col("owner").first()).sort("component")
    per = lost.group_by("job_id", "component").agg(pl.col("seconds").sum())
    jobs = summary.select(
        "job_id",
        pl.col(comparable).cast(pl.String).alias("group"),
        pl.col("gpus").cast(pl.Float64),
        pl.col("nof").cast(pl.Float64),
    )
    return (
        jobs.join(owners, how="cross")
        .join(per, on=["job_id", "component"], how="left")
        .with_columns(pl.col("seconds").fill_null(0.0))
        .select(LOST_COLUMNS)
        .sort("job_id", "component")
    )


def window_days(summary: pl.DataFrame) -> float:
    """Observation window in days: from the earliest ``t0`` to the latest ``t1`` of the jobs."""
    t0, t1 = summary["t0"].min(), summary["t1"].max()
    if t0 is None or t1 is None:
        raise ValueError("job summary has no t0/t1 to measure the observation window")
    days = (t1 - t0).total_seconds() / 86400.0
    if days <= 0:
        raise ValueError("observation window is empty (latest t1 <= earliest t0)")
    return days


def rank_opportunities(
    lost: pl.DataFrame,
    *,
    window_days: float,
    cut: float | None = None,
    by: str = "component",
    repeated: frozenset[str] = REPEATED,
) -> pl.DataFrame:
    """Rank owners' components by GPU-hours a day returned at a target (formulas in the module docstring).

    ``cut`` is a fraction in (0, 1] (a percentage cut); ``None`` means the best
    decile of comparable jobs.  ``by="component"`` gives one row per (owner,
    component); ``by="owner"`` sums each owner's components.  Columns:
    ``rank``, ``owner`` [, ``component``], ``jobs`` (jobs with something to
    gain), ``lost_gpu_h_per_day``, ``returned_gpu_h_per_day``,
    ``returned_share_pct`` (of all returned), sorted best first (ties by name).
    """
    missing = [c for c in LOST_COLUMNS if c not in lost.columns]
    if missing:
        raise ValueError(f"lost-time frame lacks column(s) {missing}")
    if by not in BY_CHOICES:
        raise ValueError(f"by must be one of {BY_CHOICES}, got {by!r}")
    if not window_days > 0:
        raise ValueError("window_days must be > 0")
    if cut is not None and not 0 < cut <= 1:
        raise ValueError("cut must be a fraction in (0, 1]")
    for c in ("seconds", "nof", "gpus"):
        bad = lost.filter(pl.col(c).is_null() | (pl.col(c) < 0))
        if bad.height:
            raise ValueError(f"lost-time frame: {c} is null or negative for job {bad['job_id'][0]!r}")
    k = pl.when(pl.col("component").is_in(list(repeated))).then(1.0 + pl.col("nof")).otherwise(1.0)
    df = lost.with_columns(k.alias("k")).with_columns((pl.col("seconds") / pl.col("k")).alias("level"))
    if cut is None:
        target = pl.col("level").quantile(0.1, interpolation="linear").over("group", "component")
    else:
        target = pl.col("level") * (1.0 - cut)
    df = df.with_columns(target.alias("target"))
    df = df.with_columns((pl.col("k") * (pl.col("level") - pl.col("target")).clip(lower_bound=0.0)).alias("saved_s"))
    per_day = 3600.0 * window_days
    keys = ["owner", "component"] if by == "component" else ["owner"]
    out = df.group_by(keys).agg(
        (pl.col("saved_s") > 0).sum().alias("jobs"),
        (pl.col("gpus") * pl.col("seconds")).sum().truediv(per_day).alias("lost_gpu_h_per_day"),
        (pl.col("gpus") * pl.col("saved_s")).sum().truediv(per_day).alias("returned_gpu_h_per_day"),
    )
    total = float(out["returned_gpu_h_per_day"].sum())
    out = out.with_columns(
        (100.0 * pl.col("returned_gpu_h_per_day") / total if total > 0 else pl.lit(0.0)).alias("returned_share_pct")
    )
    out = out.sort(["returned_gpu_h_per_day", *keys], descending=[True] + [False] * len(keys))
    return out.with_row_index("rank", offset=1).with_columns(pl.col("rank").cast(pl.Int64))


# ----------------------------------------------------------------------------- command line


def _cmd(args: argparse.Namespace) -> int:
    """``ett opportunities``: load the trace, build the lost-time frame, rank, print (exit 2 on bad input)."""
    from . import metric
    from .cli import format_table, skip_report
    from .errors import Problem, TraceError
    from .trace import load_trace

    try:
        trace = load_trace(args.trace, mapping=args.mapping, as_of=args.as_of, skip_invalid=args.skip_invalid)
        if trace.excluded_jobs:
            print(skip_report(trace), file=sys.stderr)
        summary = metric.job_summary(trace)
        if args.comparable not in summary.columns:
            raise TraceError(
                Problem("--comparable", None, "comparable", f"unknown column {args.comparable!r}; choose one of: {', '.join(summary.columns)}")
            )
        if summary.height == 0:
            raise TraceError(Problem(str(args.trace), None, None, "the trace has no jobs to rank"))
        lost = lost_by_component(summary, metric.l2_matrix(trace), comparable=args.comparable)
        days = args.days if args.days is not None else window_days(summary)
        ranked = rank_opportunities(lost, window_days=days, cut=args.cut, by=args.by)
    except TraceError as exc:
        for p in exc.problems:
            print(f"ett: {p.line()}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"ett: {args.trace}: {exc}", file=sys.stderr)
        return 2
    target = {"kind": "cut", "fraction": args.cut} if args.cut is not None else {"kind": "best_decile", "comparable": args.comparable}
    if args.json:
        doc: dict[str, Any] = {
            "trace": str(args.trace),
            "synthetic": trace.synthetic,
            "window_days": days,
            "target": target,
            "by": args.by,
            "rows": ranked.to_dicts(),
        }
        print(json.dumps(doc, indent=2))
        return 0
    if trace.synthetic:
        print("SYNTHETIC trace: " + str(trace.metadata.get("description", "generated data, not measured")))
    what = f"a {100 * args.cut:g}% cut" if args.cut is not None else f"the best decile of jobs with the same {args.comparable}"
    print(f"GPU-hours a day returned if each {'owner' if args.by == 'owner' else 'component'} fell to {what}")
    print(f"(observation window {days:.3g} days; (1 + NoF) counted for {', '.join(sorted(REPEATED))})")
    cols = ["rank", "owner", *(["component"] if args.by == "component" else []), "jobs", "lost_gpu_h_per_day",
            "returned_gpu_h_per_day", "returned_share_pct"]
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
    p.add_argument("--as-of", metavar="T", help="analysis time for running jobs: ISO-8601 (zone-less = UTC) or epoch seconds")
    p.add_argument("--skip-invalid", action="store_true", help="leave out jobs with problems instead of refusing")
    p.add_argument("--by", choices=BY_CHOICES, default="component", help="one row per owner's component (default) or per owner")
    p.add_argument("--cut", type=_fraction, metavar="F", help="target: cut each component by F (0.3 or 30%%); default: best decile")
    p.add_argument("--comparable", default="model", metavar="COL", help="job column that makes jobs comparable for the best decile")
    p.add_argument("--days", type=_positive, metavar="D", help="window in days for 'a day' (default: the trace's span)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd)
