"""A two-worker DDP job for ``torchrun`` in which one rank sleeps a known time in each step over a known window.

    torchrun --standalone --nproc-per-node 2 tools/campaigns/jobs/slow_job.py --work W \\
        [--slow-rank 1 --slow-from 60 --slow-to 66 --slow-sleep 3.0] [--slow-node node2]

Plain PyTorch (gloo, CPU): a linear model wrapped in DistributedDataParallel, its few microseconds of compute padded
to a step of about 250 ms with a sleep, so the step is steady: on a busy 2-core machine the compute and the wake-ups
stretch it by milliseconds to tens of milliseconds, a small part of it.  With ``--slow-rank R``, rank ``R`` sleeps
``--slow-sleep`` seconds more in each of the steps ``--slow-from`` up to (not including) ``--slow-to`` (counted from
0), before its backward pass: the other rank waits for it in DDP's gradient all-reduce, so the whole job's step is
that much longer (on 2 cores a CPU hog would inject no known amount; a sleep does).  The slowed rank logs each sleep
as it measured it (``slow_sleep``, its clock read before and after: the injected seconds are the sum of these
lengths, a loaded machine's late wake-up included), and rank 0 each step, in the ground-truth log
(``tools.campaigns.jobs.ground_truth.EventLog``), never through ettcore.  Rank 0 records its phases with
:func:`ettcore.integrations.torchrun.record_worker`; every rank keeps its work and wait per window
(:class:`ettcore.integrations.rank_timing.RankTiming`: its hook around DDP's all-reduce).  With ``--slow-node N``
(the slowed-node campaign on Slurm, ``tools.campaigns.slurm_slow``) the rank sleeps only when the job runs on Slurm
node ``N`` (``SLURMD_NODENAME``), and each rank's node is that name.
"""

from __future__ import annotations

import argparse
import os
import socket
import time
from functools import partial
from pathlib import Path

FIRST_T = time.time()  # ground truth: this process was running by now (only the standard library imported)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

torch.set_num_threads(1)

from ettcore.integrations.rank_timing import RankTiming  # noqa: E402
from ettcore.integrations.torchrun import record_worker  # noqa: E402
from tools.campaigns.jobs import ddp_linear  # noqa: E402
from tools.campaigns.jobs.ground_truth import EventLog  # noqa: E402

STEP_PAD_S = 0.25  # seconds of sleep in every step of every rank: the step's steady part


def sleep_logged(log: EventLog, step: int, seconds: float) -> None:
    """Sleep ``seconds`` and log the sleep as measured (``slow_sleep``: the clock read before and after)."""
    s0 = time.time()
    time.sleep(seconds)
    log.write("slow_sleep", step, s0, time.time())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--slow-rank", type=int, help="the rank that sleeps (none: an unslowed control run)")
    ap.add_argument("--slow-from", type=int, default=60, help="the first slowed step (counted from 0)")
    ap.add_argument("--slow-to", type=int, default=66, help="the step after the last slowed one")
    ap.add_argument("--slow-sleep", type=float, default=3.0, help="seconds slept in each slowed step")
    ap.add_argument(
        "--slow-node",
        help="slow --slow-rank only when the job runs on this Slurm node (SLURMD_NODENAME; the slowed-node campaign)",
    )
    a = ap.parse_args()
    rank = int(os.environ["RANK"])
    node = os.environ.get("SLURMD_NODENAME")  # under Slurm: the node (the emulated nodes share one host name)
    if a.slow_node is not None and node != a.slow_node:
        a.slow_rank = None  # not on the slowed node: an unslowed run
    log = EventLog(a.work, 0)
    log.lifetime(FIRST_T)
    tl = record_worker(writer="rank0", model="linear-slow")  # records on rank 0 only
    model, opt, x, y = ddp_linear.setup(tl, rank)
    timing = RankTiming(
        os.environ["ETT_RUN_DIR"], os.environ["ETT_JOB_ID"], int(os.environ["ETT_ATTEMPT"]), rank, node=node
    )
    model.register_comm_hook(None, timing.comm_hook())  # every rank: its work and wait per window
    with tl.phase("trainer_init", "barrier"):
        dist.barrier()
    if rank == a.slow_rank:
        log.write("slowed_rank", rank, 0.0, 0.0)
        (a.work / f"slowed-rank-{rank}.host").write_text((node or socket.gethostname()) + "\n")
    step = 0
    t = time.time()
    tl.train_begin(step, t)
    timing.begin(t)
    while step < a.steps:
        t0 = time.time()
        slowed = rank == a.slow_rank and a.slow_from <= step < a.slow_to
        # before DDP's all-reduce in backward: the other rank waits there for the slowed one
        ddp_linear.train_step(
            model, opt, x, y, step, partial(sleep_logged, log, step, a.slow_sleep) if slowed else None
        )
        time.sleep(STEP_PAD_S)
        step += 1
        if rank == 0:
            log.write("step", step, t0, time.time())
        tl.step(step)
        timing.step()
    tl.train_end()
    timing.close()
    with tl.phase("shutdown", "destroy_process_group"):
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
