"""``ett export prometheus TRACE [--out FILE]``: the Prometheus text exposition format, to stdout or written
atomically to a file (node_exporter's textfile collector must never read a half-written file).
"""

from __future__ import annotations

import argparse
import io
import re
import sys

from ettcore.atomic import write_text
from ettcore.cli.common import add_money_args, add_trace_args, open_live, prices_of
from ettcore.cli.stalls import add_live_args, live_options
from ettcore.errors import InputError, Problem
from ettcore.exporters import alert_rules, prometheus

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
    trace = open_live(args, now_by_default=False)
    options = {"prices": prices, "job_series_within_s": within, **live_options(args)}
    if args.out:
        buf = io.StringIO()
        n = prometheus.write(trace, buf, **options)
        write_text(args.out, buf.getvalue())
        print(f"wrote {args.out} ({n} samples)", file=sys.stderr)
    else:
        prometheus.write(trace, sys.stdout, **options)
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
    add_trace_args(q, uri=False)  # TRACE may also be a live recorder run folder (analysed now)
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
    add_money_args(q)
    add_live_args(q)  # the thresholds of ett_job_hung
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
