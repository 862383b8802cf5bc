"""The real restart campaign: a crash loop, a job that fails but advances, and a storm of node failures on Slurm.

Run (needs the project's Slurm cluster with three nodes, ``ETT_SLURM_NODES=3 tools/slurm/start.sh``;
``make slurm-restarts`` starts a fresh one of its own, runs this and stops it)::

    SLURM_CONF=... .venv/bin/python -m tools.campaigns.slurm_restarts          # about two minutes
    .venv/bin/python -m tools.campaigns.slurm_restarts --rebuild   # re-import the bundled export only

Every job is :mod:`tools.campaigns.jobs.restart_job` (a step counter that sleeps, saves a checkpoint every
``every`` steps and records one ``train`` span a run, resuming from its checkpoint): no training.
:func:`plan` lists the jobs, :func:`run_campaign` submits them and injects the storm:

- ``loop`` (on ``node1``, partition ``high``, 3 GPUs, ``--requeue``, 1 s a step): checkpoints every 10 steps and
  dies at step 25 on every run with the exit status of the cluster's ``RequeueExit`` (42), so Slurm requeues it;
  its first run saves steps 10 and 20, every later run resumes from 20 and dies at 25 again (a poison batch); its
  fifth run (attempt 4) exits 1 and the job stops ``FAILED``.  A crash loop of attempts 1-4 (:data:`LOOP_ATTEMPTS`
  runs in all);
- ``advance`` (on ``node1``, partition ``high``, 1 GPU, ``--requeue``, 0.5 s a step): dies with 42 at step 15,
  then 25 on its first two runs, each resuming from a later checkpoint (0, 10, 20), and completes at step 30 on its
  third: it fails but advances (no crash loop);
- the storm: six ``storm-*`` jobs (four on ``node3``, two on ``node2``, partition ``low``, 1 GPU each,
  ``--requeue``, 0.25 s a step, 60 steps) run; once each has run
  :data:`STORM_AFTER_S`, ``node3`` and then ``node2`` are set ``DOWN`` (``scontrol update``,
  :data:`STORM_GAP_S` apart): Slurm ends their six runs ``NODE_FAIL`` and requeues them; :data:`DOWN_FOR_S`
  later both nodes are resumed and the jobs complete from their checkpoints;
- exports the accounting with the documented ``sacct`` commands, copies the recorder's run folder, imports both
  (``ettcore.importers.slurm`` with the recorder) and writes ``campaign.json`` (plan, events with times, Slurm
  version, configuration) into ``data/slurm-restarts``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ettcore.bundled import SLURM_RESTARTS
from tools.campaigns import CHECKOUT
from tools.campaigns.slurm_fleet import REQUEUE_EXIT, _run, _squeue
from tools.campaigns.slurm_multinode import Session, _wait, bundle, cli, reimport

COMMAND = "make slurm-restarts"
LOOP_ATTEMPTS = 5  # runs of the crash-loop job: attempts 0..4, the last one gives up
STORM_NODES = ("node3", "node2")  # set DOWN in this order under the storm jobs
STORM_AFTER_S = 6.0  # the storm jobs have each run this long when the first node goes down ...
STORM_GAP_S = 2.0  # ... the second this long after the first ...
DOWN_FOR_S = 8.0  # ... and both are resumed this long after the second


@dataclass(frozen=True)
class JobPlan:
    """One ``sbatch`` of :mod:`tools.campaigns.jobs.restart_job`: its node, steps, checkpoint interval, death."""

    name: str
    nodelist: str
    steps: int
    every: int
    step_s: float = 0.25
    partition: str = "low"
    gpus: int = 1
    die_at: int | None = None
    die_step: int = 0
    last_attempt: int | None = None


def plan() -> list[JobPlan]:
    """The crash loop (3 GPUs) and the advancing job (1 GPU) on node1 in partition ``high``, then the six storm jobs
    (1 GPU each) on node3 and node2 in partition ``low``: node1's 4 GPU slots hold the first two, and a storm found
    per partition is the node failures' alone."""
    return [
        JobPlan("loop", "node1", 40, 10, 1.0, "high", 3, die_at=25, last_attempt=LOOP_ATTEMPTS - 1),
        JobPlan("advance", "node1", 30, 10, 0.5, "high", 1, die_at=15, die_step=10),
        *(JobPlan(f"storm-3{c}", "node3", steps=60, every=10, step_s=0.25) for c in "abcd"),
        *(JobPlan(f"storm-2{c}", "node2", steps=60, every=10, step_s=0.25) for c in "ab"),
    ]


def _script(p: JobPlan, work: Path, python: str) -> str:
    args = [
        f"--run-dir {work}/recorder",
        f"--checkpoint {work}/checkpoints/{p.name}.step",
        f"--model {p.name}",
        f"--steps {p.steps} --every {p.every} --step-s {p.step_s}",
        f"--exit {REQUEUE_EXIT}",
    ]
    if p.die_at is not None:
        args.append(f"--die-at {p.die_at} --die-step {p.die_step}")
    if p.last_attempt is not None:
        args.append(f"--last-attempt {p.last_attempt}")
    return (
        "\n".join(
            [
                "#!/bin/bash",
                f"#SBATCH --job-name={p.name}",
                f"#SBATCH --partition={p.partition}",
                "#SBATCH --nodes=1",
                f"#SBATCH --nodelist={p.nodelist}",
                "#SBATCH --ntasks=1",
                "#SBATCH --cpus-per-task=1",
                f"#SBATCH --gres=gpu:{p.gpus}",
                "#SBATCH --time=5",
                "#SBATCH --account=research",
                "#SBATCH --requeue",
                f"#SBATCH --output={work}/logs/{p.name}-%j.out",
                "#SBATCH --open-mode=append",
                f'cd "{CHECKOUT}"',
                f'export PYTHONPATH="{CHECKOUT}${{PYTHONPATH:+:$PYTHONPATH}}"',
                f"exec {python} -m tools.campaigns.jobs.restart_job " + " ".join(args),
            ]
        )
        + "\n"
    )


def run_campaign(out_dir: Path = SLURM_RESTARTS, work: Path | None = None, python: str = sys.executable) -> dict:
    """Submit :func:`plan`, take node3 and node2 down under the storm jobs, wait, export, bundle into ``out_dir``."""
    session = Session("slurm-restarts", work, ("logs", "scripts", "recorder", "checkpoints"))
    work, event, t0 = session.work, session.event, session.t0
    for sub in ("logs", "recorder", "checkpoints"):
        (work / sub).chmod(0o777)  # the jobs run as the submitting user; the folders must be theirs to write
    jobs = plan()
    submitted = {p.name: session.submit(p.name, _script(p, work, python), nodelist=p.nodelist) for p in jobs}

    storm_ids = [submitted[p.name] for p in jobs if p.name.startswith("storm-")]

    def storm_ran() -> bool:
        q = _squeue()
        return all(q.get(j, ("", 0.0))[0] == "RUNNING" and q[j][1] >= STORM_AFTER_S for j in storm_ids)

    _wait("every storm job running", storm_ran)
    for k, node in enumerate(STORM_NODES):
        if k:
            time.sleep(STORM_GAP_S)
        on_node = _run(["squeue", "-h", "-w", node, "-t", "RUNNING", "-o", "%i"]).split()
        reason = "injected node failure: storm"
        _run(["scontrol", "update", f"NodeName={node}", "State=DOWN", f"Reason={reason}"])
        event("node_down", node=node, reason=reason, running_jobs=on_node)
    time.sleep(DOWN_FOR_S)
    for node in STORM_NODES:
        _run(["scontrol", "update", f"NodeName={node}", "State=RESUME"])
        event("node_resume", node=node)
    _wait("every job done", lambda: not _squeue(), timeout_s=400.0)
    event("all_jobs_done", elapsed_s=time.time() - t0)

    campaign = session.finish(
        COMMAND,
        requeue_exit=REQUEUE_EXIT,
        storm={"nodes": list(STORM_NODES), "after_s": STORM_AFTER_S, "gap_s": STORM_GAP_S, "down_for_s": DOWN_FOR_S},
        plan=[asdict(p) for p in jobs],
    )
    bundle(out_dir, work / "raw", campaign, recorder=work / "recorder")
    rebuild(out_dir)
    return campaign


def rebuild(out_dir: Path = SLURM_RESTARTS) -> Path:
    """Re-import ``sacct.txt`` with the ``recorder/`` run folder into ``trace/`` (no Slurm)."""
    return reimport(out_dir, "none (the jobs count steps and sleep)", COMMAND, recorder=True)


def main(argv: list[str] | None = None) -> int:
    return cli(argv, __doc__, SLURM_RESTARTS, run_campaign, rebuild)


if __name__ == "__main__":
    raise SystemExit(main())
