"""``ett validate TRACE``: every problem of a trace with file, row and field (exit 2 if any)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ettcore.cli.common import add_trace_args
from ettcore.errors import InputError, Problem, summarize_problems
from ettcore.trace.load import is_uri, load_trace


def run(args: argparse.Namespace) -> int:
    if is_uri(args.trace):
        raise InputError(
            Problem(
                args.trace,
                None,
                None,
                "validate reads local paths only; for a URI, 'ett summarize URI --engine spark'"
                " runs the same checks on Spark and lists every problem",
            )
        )
    try:
        trace = load_trace(args.trace, mapping=args.mapping, skip_invalid=True)
    except InputError as exc:
        for line in summarize_problems(exc.problems):
            print(line, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"problems": [p.as_dict() for p in trace.problems], "accounting": trace.accounting}, indent=2))
    else:
        for line in summarize_problems(trace.problems):
            print(line)
        acc = ", ".join(f"{t}: {a['read']} rows" for t, a in trace.accounting.items())
        print(f"{len(trace.problems)} problem(s) in {args.trace} ({acc})")
    return 2 if trace.problems else 0


def register(sub: Any) -> None:
    """Add ``ett validate``."""
    p = sub.add_parser("validate", help="list every problem of a trace with file, row and field (exit 2 if any)")
    add_trace_args(p, as_of=False, uri=False)
    p.add_argument("--json", action="store_true", help="problems and row accounting as JSON")
    p.set_defaults(func=run)
