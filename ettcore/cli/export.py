"""``ett export prometheus TRACE [--out FILE]``: the Prometheus text exposition format, to stdout or written
atomically to a file (node_exporter's textfile collector must never read a half-written file).
"""

from __future__ import annotations

import argparse
import io
import sys

from ettcore.atomic import write_text
from ettcore.cli.common import add_trace_args, open_live
from ettcore.cli.stalls import add_live_args, live_options
from ettcore.exporters import prometheus


def run_prometheus(args: argparse.Namespace) -> int:
    trace = open_live(args, now_by_default=False)
    live = live_options(args)
    if args.out:
        buf = io.StringIO()
        n = prometheus.write(trace, buf, **live)
        write_text(args.out, buf.getvalue())
        print(f"wrote {args.out} ({n} samples)", file=sys.stderr)
    else:
        prometheus.write(trace, sys.stdout, **live)
    return 0


def register(sub) -> None:
    p = sub.add_parser("export", help="write the metric where dashboards read it (Prometheus text format)")
    kinds = p.add_subparsers(dest="export_kind", metavar="FORMAT", required=True)
    q = kinds.add_parser(
        "prometheus",
        help="fleet, per-model and per-job gauges in the Prometheus text exposition format "
        "(seconds and ratios; for node_exporter's textfile collector)",
    )
    add_trace_args(q, uri=False)  # TRACE may also be a live recorder run folder (analysed now)
    q.add_argument(
        "--out",
        metavar="FILE",
        help="write to FILE (atomically: a temporary file renamed into place) instead of stdout",
    )
    add_live_args(q)  # the thresholds of ett_job_hung
    q.set_defaults(func=run_prometheus)
