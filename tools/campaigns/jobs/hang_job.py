"""A tiny PyTorch job that trains, then hangs (or slows down): for live hang detection's tests and demos.

Under ``torchrun`` (through the project's wrapper, so the agent's attempts are recorded)::

    python -m ettcore.integrations.torchrun --run-dir RUN --job-id J -- --standalone --nproc-per-node 2 \\
        tools/campaigns/jobs/hang_job.py --hang-after 20 --hang-rank 1

or as one process (no ``torchrun``, no process group; the job id from ``ETT_JOB_ID`` or the run folder's name)::

    ETT_RUN_DIR=RUN ETT_JOB_ID=J python tools/campaigns/jobs/hang_job.py --slow-after 200 --slow-factor 6

Each rank trains its own copy of a linear model on synthetic data (training data SYNTHETIC), one step about
``--step-s`` seconds (padded with a sleep), and averages its gradients with the other ranks (``all_reduce``, gloo)
every ``--sync-every`` steps, so a rank that stops holds the others up only at their next synchronization: the
ranks' last steps then differ.  Rank 0 records its phases with :func:`ettcore.integrations.torchrun.record_worker`;
every rank keeps its last progress in the run folder (:mod:`ettcore.integrations.rank_progress`).

Modes (both may be left out: the job then trains ``--steps`` steps and exits):

- ``--hang-after N [--hang-rank R]``: rank ``R`` (default 1; every rank with ``--hang-rank -1``) stops after its
  step ``N``: it sleeps until killed, its process and attempt open; the other ranks go on to their next
  synchronization and block there (the process group's timeout is an hour).  Its last recorded step is ``N``.
- ``--hang-when FILE [--hang-rank R]``: as ``--hang-after``, at the first step after ``FILE`` appears (a test
  chooses the instant).
- ``--slow-after N --slow-factor K``: from step ``N`` on every step takes ``K`` times ``--step-s``; still
  advancing.
- ``--checkpoint FILE [--checkpoint-every N]``: rank 0 saves the step, model and optimizer every ``N`` steps
  (default 20; ``checkpoint_save``, written beside and renamed into place), and a process that finds ``FILE`` at its
  start resumes from it (``checkpoint_load``; prints ``resumed at step N``): run it again after a preemption and the
  next attempt replays the steps since the last save, then trains on.

``--steps 0`` trains until killed (with ``--slow-after``, for a job that only slows down).  Prints
``step N`` lines on rank 0 (the ground truth of what it did) and ``hung after step N`` on the rank that stops.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

from ettcore.integrations.torchrun import record_worker

torch.set_num_threads(1)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="a tiny job that trains, then hangs or slows down")
    ap.add_argument("--steps", type=int, default=0, help="steps to train, 0: until killed (default)")
    ap.add_argument("--step-s", type=float, default=0.05, help="seconds a step (default 0.05)")
    ap.add_argument("--sync-every", type=int, default=5, help="steps between gradient all_reduces (default 5)")
    ap.add_argument("--hang-after", type=int, help="the hanging rank stops after this step")
    ap.add_argument("--hang-when", metavar="FILE", help="the hanging rank stops at the first step after FILE appears")
    ap.add_argument("--hang-rank", type=int, default=1, help="the rank that hangs (default 1; -1: every rank)")
    ap.add_argument("--slow-after", type=int, help="from this step on, steps take --slow-factor times longer")
    ap.add_argument("--slow-factor", type=float, default=5.0, help="how much longer a slow step takes (default 5)")
    ap.add_argument("--progress-interval", type=float, default=1.0, help="seconds between progress writes (1)")
    ap.add_argument("--team", help="the job's team (a label of its jobs row: the owner the alerts name)")
    ap.add_argument("--checkpoint", help="save to (and resume from) this file")
    ap.add_argument("--checkpoint-every", type=int, default=20, help="steps between checkpoint saves (default 20)")
    a = ap.parse_args(argv)
    distributed = "WORLD_SIZE" in os.environ
    rank = int(os.environ.get("RANK", "0"))
    labels = {"team": a.team} if a.team else {}
    tl = record_worker(model="hang-demo", progress_interval_s=a.progress_interval, **labels)
    if distributed:
        with tl.phase("trainer_init", "process_group_init"):
            dist.init_process_group("gloo", timeout=datetime.timedelta(hours=1))
    with tl.phase("trainer_init", "model_setup"):
        torch.manual_seed(0)
        model = torch.nn.Linear(16, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(rank)
        x, y = torch.randn(256, 16, generator=g), torch.randn(256, 1, generator=g)
    step = 0
    if a.checkpoint and os.path.exists(a.checkpoint):
        with tl.phase("checkpoint_load"):
            state = torch.load(a.checkpoint)
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            step = int(state["step"])
        if rank == 0:
            print(f"resumed at step {step}", flush=True)
    tl.train_begin(step)
    while a.steps == 0 or step < a.steps:
        slow = a.slow_after is not None and step >= a.slow_after
        t0 = time.time()
        i = (step * 8) % 256
        loss = torch.nn.functional.mse_loss(model(x[i : i + 8]), y[i : i + 8])
        loss.backward()
        if distributed and (step + 1) % a.sync_every == 0:
            for p in model.parameters():
                dist.all_reduce(p.grad)  # a rank that stopped holds the others here
                p.grad /= dist.get_world_size()
        opt.step()
        opt.zero_grad()
        time.sleep(max(0.0, a.step_s * (a.slow_factor if slow else 1.0) - (time.time() - t0)))
        step += 1
        tl.step(step)
        if rank == 0:
            print(f"step {step} {time.time():.3f}", flush=True)
        if a.checkpoint and rank == 0 and step % a.checkpoint_every == 0:
            with tl.phase("checkpoint_save"):
                torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict()}, a.checkpoint + ".tmp")
                os.replace(a.checkpoint + ".tmp", a.checkpoint)
        hang = (a.hang_after is not None and step == a.hang_after) or (a.hang_when and os.path.exists(a.hang_when))
        if hang and a.hang_rank in (rank, -1):
            print(f"rank {rank} hung after step {step}", flush=True)
            while True:  # the process and its attempt stay open until killed
                time.sleep(3600)
    tl.train_end()
    if distributed:
        with tl.phase("shutdown", "destroy_process_group"):
            dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
