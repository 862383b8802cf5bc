"""The planned job's options (``--work-h``, ``--ttr-s``) of the commands that plan one with the expected-ETT model
(``ett nodes --mttf-at``, ``ett opportunities``' checkpoint advice), with one meaning and one default
(:data:`ettcore.planning.checkpoint_advice.WORK_H`, :data:`~ettcore.planning.checkpoint_advice.TTR_S`)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from ettcore.errors import InputError, Problem
from ettcore.planning import checkpoint_advice as advice


def add_plan_options(p: Any) -> None:
    """Add ``--work-h`` and ``--ttr-s`` to ``p`` (a parser or an argument group)."""
    p.add_argument(
        "--work-h",
        type=float,
        default=advice.WORK_H,
        help=f"hours of training the job must do (default {advice.WORK_H:g})",
    )
    p.add_argument(
        "--ttr-s",
        type=float,
        default=advice.TTR_S,
        help=f"restart overhead per failure, s (default {advice.TTR_S:g})",
    )


def checked_plan(args: argparse.Namespace) -> tuple[float, float]:
    """``(work_h, ttr_s)``: work a finite number of hours > 0, the restart overhead finite seconds >= 0; else one line
    naming the option."""
    if not (math.isfinite(args.work_h) and args.work_h > 0):
        raise InputError(Problem("--work-h", None, "work_h", f"a finite number of hours > 0: {args.work_h!r}"))
    if not (math.isfinite(args.ttr_s) and args.ttr_s >= 0):
        raise InputError(Problem("--ttr-s", None, "ttr_s", f"a finite number of seconds >= 0: {args.ttr_s!r}"))
    return args.work_h, args.ttr_s
