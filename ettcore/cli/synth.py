"""``ett synth SCENARIO --jobs N --seed S --out DIR``: a synthetic trace from a scenario."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

from ettcore.config import GENERATED_DIR
from ettcore.errors import InputError
from ettcore.synthetic.generator import generate
from ettcore.synthetic.scenario import load_scenario


def run(args: argparse.Namespace) -> int:
    try:
        sc = load_scenario(args.scenario)
        out = Path(args.out) if args.out else GENERATED_DIR / f"{sc.name}-n{args.jobs or sc.default_jobs}-s{args.seed}"
        t = datetime.now(timezone.utc)
        generate(sc, out, n_jobs=args.jobs, seed=args.seed, progress=not args.quiet)
    except InputError as exc:
        for p in exc.problems:
            print(p.line(), file=sys.stderr)
        return 2
    secs = (datetime.now(timezone.utc) - t).total_seconds()
    print(
        f"wrote {out} (synthetic, scenario {sc.name}, {args.jobs or sc.default_jobs} jobs, "
        f"seed {args.seed}) in {secs:.1f} s"
    )
    return 0


def register(subparsers) -> None:
    """Add ``ett synth SCENARIO --jobs N --seed S --out DIR``."""
    p = subparsers.add_parser(
        "synth",
        help="generate a synthetic trace from a scenario (calibrated to published aggregates)",
        description="Generate a synthetic trace from a scenario file (a name in data/scenarios or a path).",
    )
    p.add_argument("scenario", help="scenario name (representative, benchmark, fleet) or a YAML path")
    p.add_argument("--jobs", type=int, default=None, help="number of jobs (default: the scenario's default_jobs)")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same bytes)")
    p.add_argument("--out", default=None, help="output trace folder (default: data/generated/<scenario>-n<N>-s<seed>)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
