"""``ett stalls TRACE``: train spans whose data cursor stood still, per job (reporting only); ``--live``: the jobs
running now that are hung or slow, with the rank that stopped first and the one that advanced last."""

from __future__ import annotations

import argparse
import json

import polars as pl

from ettcore.cli.common import add_trace_args, open_checked, open_live
from ettcore.cli.output import format_table, jsonable
from ettcore.metric.hangs import SLOW_FACTOR, live_jobs, read_job_thresholds
from ettcore.metric.stalls import job_stalls, train_stalls
from ettcore.trace.instants import iso

LIVE_COLUMNS = (
    "job_id",
    "model",
    "state",
    "attempt",
    "progress_age_s",
    "stall_threshold_s",
    "median_step_s",
    "recent_step_s",
    "cursor",
    "first_stopped_rank",
    "first_stopped_node",
    "last_advanced_rank",
    "last_advanced_node",
)


def live_options(args: argparse.Namespace) -> dict:
    """The thresholds ``--stall-after`` and ``--stall-after-file`` give, as :func:`ettcore.metric.hangs.live_jobs`'s
    keyword arguments."""
    per_job = read_job_thresholds(args.stall_after_file) if getattr(args, "stall_after_file", None) else None
    return {"stall_after": args.stall_after, "job_stall_after": per_job}


def rank_records(trace) -> list[dict]:
    """Each rank's last progress the trace carries (``trace.json``'s ``rank_progress``, from the run folder)."""
    return list(trace.metadata.get("rank_progress") or [])


def run_live(args: argparse.Namespace) -> int:
    trace = open_live(args, now_by_default=True)
    rows = live_jobs(trace, rank_records(trace), **live_options(args))
    if args.json:
        doc = {
            "trace": str(trace.path),
            "synthetic": trace.synthetic,
            "as_of": iso(trace.as_of_ms),
            "jobs": [{k: jsonable(v) for k, v in r.items()} for r in rows],
        }
        for state in ("hung", "slow"):
            doc[state] = [d for d in doc["jobs"] if d["state"] == state]
        print(json.dumps(doc, indent=2))
        return 0
    if trace.synthetic:
        print("SYNTHETIC trace")
    hung = [r for r in rows if r["state"] == "hung"]
    slow = [r for r in rows if r["state"] == "slow"]
    print(
        f"As of {iso(trace.as_of_ms)}: {len(rows)} running job(s), {len(hung)} hung (no advance for longer than its "
        f"threshold), {len(slow)} slow (recent step time over {SLOW_FACTOR:g} x its median)."
    )
    for title, chosen in (("Hung", hung), ("Slow", slow), ("All running jobs", rows)):
        if chosen:
            print()
            print(f"{title}:")
            frame = pl.DataFrame(chosen, infer_schema_length=None).select(LIVE_COLUMNS)
            print(format_table(frame, list(LIVE_COLUMNS), digits=1))
    for r in hung:
        if r["first_stopped_rank"] is not None:
            print(
                f"{r['job_id']}: rank {r['first_stopped_rank']} on {r['first_stopped_node']} stopped first (step "
                f"{r['first_stopped_step']}); rank {r['last_advanced_rank']} on {r['last_advanced_node']} advanced "
                f"last (step {r['last_advanced_step']})"
            )
    return 0


def run(args: argparse.Namespace) -> int:
    if args.live:
        return run_live(args)
    trace = open_checked(args)
    per_job = job_stalls(trace, args.stall_after)
    listed = train_stalls(trace, args.stall_after)
    if args.json:
        doc = {
            "trace": str(args.trace),
            "synthetic": trace.synthetic,
            "jobs": [{k: jsonable(v) for k, v in r.items()} for r in per_job.iter_rows(named=True)],
            "stalls": [{k: jsonable(v) for k, v in r.items()} for r in listed.iter_rows(named=True)],
        }
        print(json.dumps(doc, indent=2))
    elif args.csv:
        print(per_job.write_csv(), end="")
    else:
        if trace.synthetic:
            print("SYNTHETIC trace")
        print(format_table(per_job, per_job.columns, digits=1))
        print()
        print(f"{listed.height} stall(s):")
        if listed.height:
            print(format_table(listed, listed.columns, digits=1))
    return 0


def add_live_args(p: argparse.ArgumentParser) -> None:
    """``--stall-after`` and ``--stall-after-file``: the thresholds of stalls and of live hang detection."""
    p.add_argument(
        "--stall-after",
        metavar="SECONDS",
        help="threshold in seconds for every job (default: per job, the time of 10 cursor "
        "units at the job's own pace, at least 60 s)",
    )
    p.add_argument(
        "--stall-after-file",
        metavar="FILE",
        help="live: per-job thresholds (CSV job_id,stall_after_s or JSON {job_id: seconds}); they beat --stall-after",
    )


def register(sub) -> None:
    p = sub.add_parser(
        "stalls", help="train spans whose data cursor stood still longer than a threshold, per job (reporting only)"
    )
    add_trace_args(p)
    add_live_args(p)
    p.add_argument(
        "--live",
        action="store_true",
        help="the jobs running at the as-of time (default: now) that are hung or slow; TRACE may be a recorder run "
        "folder",
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="per-job figures and every stall as JSON")
    fmt.add_argument("--csv", action="store_true", help="per-job figures as CSV")
    p.set_defaults(func=run, engine="duckdb", spark_master=None)
