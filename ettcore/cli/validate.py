"""``ett validate INPUT``: every problem of a trace with file, row and field (exit 2 if any).

A trace is read with every problem kept (what ``--skip-invalid`` would leave out, listed); a URI with ``--engine
spark`` is checked by Spark, with the same checks; a fleet store lists the problems of the jobs its ingests left out.
"""

from __future__ import annotations

import argparse
from typing import Any

from ettcore import store
from ettcore.cli.measure_options import (
    NO_WINDOW,
    add_measure_options,
    open_measured,
    refusals_no_money,
    refusals_no_slow,
)
from ettcore.cli.output import envelope, write_answer
from ettcore.errors import InputError, Problem, summarize_problems

REFUSED = {
    "as_of": NO_WINDOW,
    "since": NO_WINDOW,
    "until": NO_WINDOW,
    "exclude": NO_WINDOW,
    "skip_invalid": "validate lists every problem and leaves nothing out",
    **refusals_no_money(),
    **refusals_no_slow(),
}


def run(args: argparse.Namespace) -> int:
    a_store = store.is_store(args.trace)
    if a_store and args.engine != "duckdb":
        why = "does not apply to ett validate of a fleet store: the problems it recorded are read from its file"
        raise InputError(Problem("--engine", None, None, why))
    args = argparse.Namespace(**{**vars(args), "skip_invalid": not a_store})  # keep every problem
    trace = open_measured(args, quiet=True)
    problems = store.skipped_problems(trace) if isinstance(trace, store.StoreTrace) else list(trace.problems)
    if args.json:
        doc = envelope("validate", "validate", trace, args)
        doc.update(problems=[p.as_dict() for p in problems], accounting=trace.accounting)
        write_answer(doc)
    else:
        for line in summarize_problems(problems):
            print(line)
        acc = ", ".join(f"{t}: {a['read']} rows" for t, a in trace.accounting.items())
        print(f"{len(problems)} problem(s) in {args.trace} ({acc})")
    return 2 if problems else 0


def register(sub: Any) -> None:
    """Add ``ett validate``."""
    p = sub.add_parser("validate", help="list every problem of a trace with file, row and field (exit 2 if any)")
    add_measure_options(p, "validate", refuse=REFUSED)
    p.add_argument("--json", action="store_true", help="one JSON object: the envelope, every problem, row accounting")
    p.set_defaults(func=run)
