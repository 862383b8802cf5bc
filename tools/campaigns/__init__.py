"""The campaigns that record the project's measured data, and the training jobs they and the integration tests run.

They run from a checkout (``make live-job``, ``make framework-run``, ``make slurm-fleet``, ``make slurm-multinode``,
``make slurm-restarts``, ``ett live-job``, or ``.venv/bin/python -m tools.campaigns.NAME`` from the repository root)
and write the bundled data sets of ``data/``; what reads those data sets is :mod:`ettcore.bundled`, in the package,
which never imports anything here.

- :mod:`tools.campaigns.conditions`     run conditions of the live job's paired experiment (no PyTorch)
- :mod:`tools.campaigns.recsys`         the recommendation model and its synthetic click data (PyTorch)
- :mod:`tools.campaigns.attempt`        one attempt of the live training job, instrumented (PyTorch; run as a process)
- :mod:`tools.campaigns.supervisor`     runs attempts as processes, induces failures, restarts, keeps ground truth
  (no PyTorch)
- :mod:`tools.campaigns.live_job`       the paired baseline/optimized experiment (``data/live-job``)
- :mod:`tools.campaigns.framework_run`  a Lightning job recorded by ``ETTCallback`` alone, with ground truth
  (``data/framework-run``)
- :mod:`tools.campaigns.slurm_fleet`    the live job's loop as 46 jobs through a real Slurm cluster
  (``data/slurm-fleet``)
- :mod:`tools.campaigns.slurm_multinode`  seven ``sleep`` jobs on three Slurm node daemons, one node failing
  (``data/slurm-multinode``)
- :mod:`tools.campaigns.slurm_restarts`  a crash loop, a job that fails but advances and a storm of node failures on
  three Slurm node daemons (``data/slurm-restarts``)
- :mod:`tools.campaigns.jobs`           the tiny Lightning, Hugging Face, ``torchrun`` and hang jobs, and their ground
  truth

PyTorch is the optional extra ``ettcore[torch]``; the campaigns' ``--rebuild`` (re-import the recorded files) needs
none.  A process a campaign starts finds both ``tools`` and ``ettcore`` through :func:`checkout_on_path`.
"""

from __future__ import annotations

import os
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]  # the repository root: tools/ and ettcore/ are its folders


def checkout_on_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the checkout first on ``PYTHONPATH``, so a child Python imports this checkout's ``tools`` and
    ``ettcore`` whatever its working directory (a job script run by path, an attempt run in its work folder)."""
    rest = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": os.pathsep.join([str(CHECKOUT), *([rest] if rest else [])])}
