"""``ett stalls TRACE``: train spans whose data cursor stood still, per job (reporting only)."""

from __future__ import annotations

import argparse
import json

from ettcore.cli.common import add_trace_args, open_checked
from ettcore.cli.output import format_table, jsonable
from ettcore.metric.stalls import job_stalls, train_stalls


def run(args: argparse.Namespace) -> int:
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


def register(sub) -> None:
    p = sub.add_parser(
        "stalls", help="train spans whose data cursor stood still longer than a threshold, per job (reporting only)"
    )
    add_trace_args(p)
    p.add_argument(
        "--stall-after",
        metavar="SECONDS",
        help="threshold in seconds for every job (default: per job, the time of 10 cursor "
        "units at the job's own pace, at least 60 s)",
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="per-job figures and every stall as JSON")
    fmt.add_argument("--csv", action="store_true", help="per-job figures as CSV")
    p.set_defaults(func=run, engine="duckdb", spark_master=None)
