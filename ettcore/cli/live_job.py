"""``ett live-job [OPTION ...]``: run the paired live PyTorch experiment and regenerate data/live-job (needs PyTorch).

The experiment is a campaign of the project's checkout, ``tools/campaigns/live_job.py``, not part of the installed
package: this command runs it, from the checkout :data:`ettcore.config.PROJECT_ROOT` names (``$ETT_PROJECT_ROOT``
overrides it), with this Python and every option given after ``live-job`` passed on as it is
(``ett live-job --help`` prints the campaign's own).  Without a checkout there it says so in one line and exits 2.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Any

from ettcore.config import PROJECT_ROOT
from ettcore.errors import InputError, Problem

CAMPAIGN = PROJECT_ROOT / "tools" / "campaigns" / "live_job.py"


def run(args: argparse.Namespace) -> int:
    if not CAMPAIGN.is_file():
        raise InputError(
            Problem(
                str(CAMPAIGN),
                None,
                None,
                "ett live-job runs the live-job campaign of a checkout of the ettcore repository, and there is none "
                "here: run it in a checkout, or set ETT_PROJECT_ROOT to one",
            )
        )
    rest = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), *([rest] if rest else [])])}
    env["ETT_PROG"] = "ett live-job"  # the campaign's usage line names the command that ran it
    command = [sys.executable, str(CAMPAIGN), *args.campaign_args]
    if {"-h", "--help"} & set(args.campaign_args):  # the campaign's help, printed and exiting as every ett help does
        shown = subprocess.run(command, env=env, capture_output=True, text=True)
        sys.stdout.write(shown.stdout)
        sys.stderr.write(shown.stderr)
        raise SystemExit(shown.returncode)
    return subprocess.run(command, env=env).returncode


def register(subparsers: Any) -> None:
    """``ett live-job [OPTION ...]``: every option goes to the campaign (``prefix_chars`` keeps argparse from reading
    them as the subcommand's own)."""
    p = subparsers.add_parser(
        "live-job",
        help="run the paired live PyTorch job and regenerate data/live-job (a checkout's tools/campaigns/live_job.py)",
        description=__doc__.splitlines()[0],
        add_help=False,
        prefix_chars="\0",
    )
    p.add_argument("campaign_args", nargs="*", metavar="OPTION", help="the campaign's options (--help lists them)")
    p.set_defaults(func=run)
