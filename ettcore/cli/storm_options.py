"""The restart-storm options (``--storm-interruptions``, ``--storm-window``, ``--storm-by``) of the commands that
find restart storms (``ett summarize``, ``ett export prometheus``), with one meaning: :mod:`ettcore.metric.restarts`
and ``docs/metric.md`` ("Restart storms")."""

from __future__ import annotations

import argparse

from ettcore.metric import restarts


def add_storm_options(p: argparse.ArgumentParser) -> None:
    """Add the restart-storm options to ``p``."""
    p.add_argument(
        "--storm-interruptions",
        metavar="N",
        help=f"a restart storm is at least N interruptions within --storm-window (default "
        f"{restarts.STORM_INTERRUPTIONS})",
    )
    p.add_argument(
        "--storm-window",
        metavar="T",
        help=f"the window of a restart storm, a duration such as 1h or 15m (default {restarts.STORM_WINDOW})",
    )
    p.add_argument(
        "--storm-by",
        metavar="KEY",
        help="find restart storms per value of a column of the jobs table, such as partition (default: fleet-wide)",
    )


def storm_thresholds(args: argparse.Namespace) -> tuple[int, int]:
    """``(interruptions, window_ms)`` of a storm from the options (one line naming a bad one)."""
    return restarts.storm_thresholds(args.storm_interruptions, args.storm_window)
