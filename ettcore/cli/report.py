"""``ett report [NOTEBOOK ...]``: run the notebooks and build the HTML reports, the index and the scorecard."""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ettcore.config import NOTEBOOK_DIR, PROJECT_ROOT, REPORT_DIR
from ettcore.errors import InputError, Problem
from ettcore.present.report import _worker_context, build_index, plan_parameters, resolve, run_all, update_notebook
from ettcore.present.scorecard import SCORECARD_SUFFIX


def run(args: argparse.Namespace) -> int:
    """``ett report``: exit 0 when every report was built and every scorecard check passes (a comparison's FAIL is a
    finding and does not count), else 1."""
    notebooks = resolve(args.notebooks)
    if not notebooks:
        raise InputError(Problem(str(NOTEBOOK_DIR), None, None, "no notebooks found"))
    jobs = args.jobs or min(len(notebooks), os.cpu_count() or 1)
    if args.update_notebooks:
        if args.params or args.trace:
            raise InputError(
                Problem("--update-notebooks", None, None, "committed notebooks use their defaults; drop -p/--trace")
            )
        with ProcessPoolExecutor(max_workers=jobs, mp_context=_worker_context()) as pool:
            list(pool.map(update_notebook, notebooks))
        for nb in notebooks:
            print(f"updated {nb.relative_to(PROJECT_ROOT) if nb.is_relative_to(PROJECT_ROOT) else nb}")
        return 0
    out_dir = Path(args.out).resolve() if args.out else REPORT_DIR
    plan = plan_parameters(notebooks, args.params or [], args.trace, out_dir)
    for nb in notebooks:  # a stale scorecard must not reach the index
        (out_dir / f"{nb.stem}{SCORECARD_SUFFIX}").unlink(missing_ok=True)
    t = time.perf_counter()
    results = run_all(notebooks, plan, out_dir, jobs, progress=not args.quiet)
    wall = time.perf_counter() - t
    board = build_index(out_dir, results, wall)
    for r in results:
        status = "ok" if r.ok else f"FAILED: {r.error}"
        print(f"{r.notebook}: {status} ({r.seconds:.1f} s, {r.charts} charts)")
    ev = board["evidence_rows"]
    print(
        f"scorecard: {board['checks_passed']}/{board['checks']} checks pass; {board['checked_rows']} of "
        f"{board['published_rows']} published figures checked: "
        + ", ".join(f"{n} {k}" for k, n in ev.items())
        + f", {board['identity_rows']} identities"
        + (
            f"; {board['comparisons_failed']} comparison(s) FAIL (findings, kept in the scorecard)"
            if board["comparisons_failed"]
            else ""
        )
    )
    print(f"wrote {out_dir / 'index.html'} in {wall:.1f} s")
    return 0 if all(r.ok for r in results) and board["reproductions_passed"] else 1


def register(subparsers) -> None:
    """Add ``ett report [NOTEBOOK ...] [-p NAME VALUE ...] [--trace PATH] [--out DIR]``."""
    p = subparsers.add_parser(
        "report",
        help="run the notebooks (papermill, in parallel) and build HTML reports + index",
        description="Execute the notebook suite with papermill and write executed notebooks, HTML "
        "reports without code, scorecard.json and index.html (offline pages).",
    )
    p.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="number, name or path (default: all)")
    p.add_argument(
        "-p",
        "--parameter",
        dest="params",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="set a notebook parameter (typed like its default) in every selected notebook that declares it",
    )
    p.add_argument("--trace", help="run on this trace (sets the 'trace' parameter)")
    p.add_argument("--out", help="output folder (default: reports/)")
    p.add_argument("--jobs", type=int, default=None, help="notebooks run at once (default: CPUs)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--update-notebooks",
        action="store_true",
        help="re-execute the committed notebooks in place with defaults (canonical form, no volatile metadata)",
    )
    p.set_defaults(func=run)
