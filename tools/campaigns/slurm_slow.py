"""The real slowed-node campaign: 2-rank DDP training jobs on three Slurm nodes, every job on ``node2`` slowed.

Run (needs the project's Slurm cluster with three nodes, ``ETT_SLURM_NODES=3 tools/slurm/start.sh``, and the
``torch`` extra; ``make slurm-slow`` starts a fresh cluster of its own, runs this and stops it)::

    SLURM_CONF=... .venv/bin/python -m tools.campaigns.slurm_slow          # about four minutes
    .venv/bin/python -m tools.campaigns.slurm_slow --rebuild   # re-import the bundled export only

Every job is :mod:`tools.campaigns.jobs.slow_job` run through ``python -m ettcore.integrations.torchrun``: real
training steps (a linear model in PyTorch DDP, gloo on CPU, two ranks on the job's one node; each step's microseconds
of compute padded to about 0.25 s), its phases recorded by rank 0 and every rank's work and wait per window kept
(:class:`ettcore.integrations.rank_timing.RankTiming`).  :func:`plan` lists the jobs, :func:`run_campaign` submits
them:

- :data:`WAVES` waves of three jobs, one on each of ``node1``, ``node2``, ``node3`` (``--nodelist``), each wave
  submitted when the one before it ended (so the node's jobs do not share the machine's 2 cores with each other);
- every job runs :data:`STEPS` steps; the sleep is keyed on the node (``--slow-node``: ``SLURMD_NODENAME``): on
  :data:`SLOW_NODE` rank 1 sleeps :data:`SLEEP_S` s in each of steps :data:`SLOW_FROM` up to :data:`SLOW_TO`
  (before its backward pass, so rank 0 waits for it in DDP's all-reduce), and logs each sleep as it measured it in
  the job's ground-truth log (``truth/<job>/``); on the other nodes no rank sleeps;
- :data:`FULL` is that design (the bundled campaign); :data:`SHORT`, one wave of shorter jobs (three slowed steps),
  is what the live test runs (``run_campaign(size=SHORT)``, about a minute of jobs): enough for each job's slow
  seconds and holder, not for the significance test, which the bundled campaign's unit tests cover;
- exports the accounting with the documented ``sacct`` commands, copies the recorder's run folder (with the ranks'
  ``timing/`` windows) and the ground-truth logs, imports both (``ettcore.importers.slurm`` with the recorder: the
  trace's ``rank_timing`` table holds the windows) and writes ``campaign.json`` into ``data/slurm-slow``.

``ett nodes data/slurm-slow/trace --slow --slow-tolerance 1.0`` must name ``node2``, and no other:
``tests/test_slurm_slow.py``.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from ettcore.bundled import SLURM_SLOW
from tools.campaigns import CHECKOUT
from tools.campaigns.jobs import JOBS_DIR
from tools.campaigns.slurm_fleet import _squeue
from tools.campaigns.slurm_multinode import NODES, Session, _wait, bundle, cli, reimport

COMMAND = "make slurm-slow"
SLOW_NODE = "node2"
WAVES = 4  # jobs a node: the rank test needs several (attempt, node) pairs a node (4 of 12: exact p = 1/495)
STEPS = 60  # steps a job
SLOW_FROM, SLOW_TO = 30, 36  # the slowed steps (counted from 0; SLOW_TO not included) ...
SLEEP_S = 2.0  # ... in each of which rank 1 on SLOW_NODE sleeps this long: 12 s a slowed job
SLOW_RANK = 1
TOLERANCE = 1.0  # the campaign's --slow-tolerance: a span is slow past twice its ideal time (tests/test_slow_torchrun)
GPUS = 2  # gres/gpu a job holds (placeholders: one a rank)


@dataclass(frozen=True)
class Size:
    """How large a campaign is: its waves (jobs a node), steps a job and the slowed steps (``slow_to`` excluded)."""

    waves: int
    steps: int
    slow_from: int
    slow_to: int


FULL = Size(WAVES, STEPS, SLOW_FROM, SLOW_TO)  # the bundled campaign (data/slurm-slow)
# the live test's: one job a node, 30 steps (about 7 s at the ideal pace past warm-up, some 7 train spans: the
# ideal pace needs 5), rank 1 on node2 sleeping in 3 of them (6 s)
SHORT = Size(1, 30, 15, 18)


@dataclass(frozen=True)
class JobPlan:
    """One ``sbatch`` of the slow job: its name, its node, its wave, whether its node is the slowed one."""

    name: str
    nodelist: str
    wave: int
    slowed: bool


def plan(size: Size = FULL) -> list[JobPlan]:
    """``size.waves`` waves of one job a node; the jobs on :data:`SLOW_NODE` are the slowed ones."""
    nodes = [f"node{k}" for k in range(1, NODES + 1)]
    return [JobPlan(f"{n}-{w}", n, w, n == SLOW_NODE) for w in range(size.waves) for n in nodes]


def _script(p: JobPlan, work: Path, python: str, size: Size) -> str:
    job = [
        str(JOBS_DIR / "slow_job.py"),
        f"--work {work}/truth/{p.name}",
        f"--steps {size.steps} --slow-rank {SLOW_RANK} --slow-from {size.slow_from} --slow-to {size.slow_to}",
        f"--slow-sleep {SLEEP_S} --slow-node {SLOW_NODE}",
    ]
    return (
        "\n".join(
            [
                "#!/bin/bash",
                f"#SBATCH --job-name={p.name}",
                "#SBATCH --partition=low",
                "#SBATCH --nodes=1",
                f"#SBATCH --nodelist={p.nodelist}",
                "#SBATCH --ntasks=1",
                "#SBATCH --cpus-per-task=1",
                f"#SBATCH --gres=gpu:{GPUS}",
                "#SBATCH --time=5",
                "#SBATCH --account=research",
                f"#SBATCH --output={work}/logs/{p.name}-%j.out",
                f'cd "{CHECKOUT}"',
                f'export PYTHONPATH="{CHECKOUT}${{PYTHONPATH:+:$PYTHONPATH}}"',
                "export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1 TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1",
                f"mkdir -p {work}/truth/{p.name}",
                f"exec {python} -m ettcore.integrations.torchrun --run-dir {work}/recorder --job-id $SLURM_JOB_ID -- "
                "--standalone --nproc-per-node 2 " + " ".join(job),
            ]
        )
        + "\n"
    )


def run_campaign(
    out_dir: Path = SLURM_SLOW, work: Path | None = None, python: str = sys.executable, size: Size = FULL
) -> dict:
    """Submit :func:`plan` of ``size`` wave by wave, wait, export, bundle into ``out_dir`` (replaced)."""
    session = Session("slurm-slow", work, ("logs", "scripts", "recorder", "truth"))
    work, event = session.work, session.event
    for sub in ("logs", "recorder", "truth"):
        (work / sub).chmod(0o777)  # the jobs run as the submitting user; the folders must be theirs to write
    jobs = plan(size)
    for wave in range(size.waves):
        for p in (p for p in jobs if p.wave == wave):
            session.submit(p.name, _script(p, work, python, size), nodelist=p.nodelist, wave=wave, slowed=p.slowed)
        _wait(f"wave {wave} done", lambda: not _squeue(), timeout_s=400.0)
        event("wave_done", wave=wave)
    campaign = session.finish(
        COMMAND,
        slowed={
            "node": SLOW_NODE,
            "rank": SLOW_RANK,
            "steps": [size.slow_from, size.slow_to],
            "sleep_s": SLEEP_S,
            "tolerance": TOLERANCE,
        },
        steps=size.steps,
        gpus=GPUS,
        plan=[asdict(p) for p in jobs],
    )
    bundle(out_dir, work / "raw", campaign, recorder=work / "recorder")
    shutil.copytree(work / "truth", Path(out_dir) / "truth")
    rebuild(out_dir)
    return campaign


def rebuild(out_dir: Path = SLURM_SLOW) -> Path:
    """Re-import ``sacct.txt`` with the ``recorder/`` run folder into ``trace/`` (no Slurm)."""
    return reimport(out_dir, "random regression data (256 examples a rank, seed = rank)", COMMAND, recorder=True)


def main(argv: list[str] | None = None) -> int:
    return cli(argv, __doc__, SLURM_SLOW, run_campaign, rebuild)


if __name__ == "__main__":
    raise SystemExit(main())
