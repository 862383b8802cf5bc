"""``ett stalls INPUT``: train spans whose data cursor stood still, per job (reporting only); ``--live``: the jobs
running now that are hung or slow, with the rank that stopped first and the one that advanced last."""

from __future__ import annotations

import argparse

import polars as pl

from ettcore.cli.measure_options import (
    FLAG_OF,
    add_measure_options,
    given,
    open_live,
    open_measured,
    refusals_duckdb_only,
    refusals_no_money,
    refusals_no_slow,
)
from ettcore.cli.output import envelope, format_table, jsonable, print_head, records, write_answer, write_csv
from ettcore.errors import InputError, Problem
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
NOT_LIVE = "the live view judges the jobs running at the as-of time, not a window of time"


def live_options(args: argparse.Namespace) -> dict:
    """The thresholds ``--stall-after`` and ``--stall-after-file`` give, as :func:`ettcore.metric.hangs.live_jobs`'s
    keyword arguments."""
    per_job = read_job_thresholds(args.stall_after_file) if getattr(args, "stall_after_file", None) else None
    return {"stall_after": args.stall_after, "job_stall_after": per_job}


def rank_records(trace) -> list[dict]:
    """Each rank's last progress the trace carries (``trace.json``'s ``rank_progress``, from the run folder)."""
    return list(trace.metadata.get("rank_progress") or [])


def run_live(args: argparse.Namespace) -> int:
    refused = [d for d in ("since", "until", "exclude") if given(args, d)]
    if refused:
        why = f"does not apply to ett stalls --live: {NOT_LIVE}"
        raise InputError([Problem(FLAG_OF[d], None, None, why) for d in refused])
    trace = open_live(args, now_by_default=True)
    rows = live_jobs(trace, rank_records(trace), **live_options(args))
    if args.json:
        doc = envelope("stalls-live", "stalls --live", trace, args)
        doc["input"]["path"] = str(trace.path)
        doc["jobs"] = [{k: jsonable(v) for k, v in r.items()} for r in rows]
        for state in ("hung", "slow"):
            doc[state] = [d for d in doc["jobs"] if d["state"] == state]
        write_answer(doc)
        return 0
    print_head(trace)
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
    trace = open_measured(args)
    per_job = job_stalls(trace, args.stall_after)
    listed = train_stalls(trace, args.stall_after)
    if args.json:
        doc = envelope("stalls", "stalls", trace, args)
        doc.update(jobs=records(per_job), stalls=records(listed))
        write_answer(doc)
    elif args.csv:
        write_csv(per_job, trace)
    else:
        print_head(trace)
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
    refuse = {**refusals_duckdb_only("ett stalls"), **refusals_no_money(), **refusals_no_slow()}
    add_measure_options(p, "stalls", refuse=refuse, run_folder=True)
    add_live_args(p)
    p.add_argument(
        "--live",
        action="store_true",
        help="the jobs running at the as-of time (default: now) that are hung or slow; INPUT may be a recorder run "
        "folder",
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object: the envelope, per-job figures, every stall")
    fmt.add_argument("--csv", action="store_true", help="per-job figures as CSV")
    p.set_defaults(func=run)
