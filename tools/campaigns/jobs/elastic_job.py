"""A tiny two-worker DDP job for ``torchrun`` (run by the tests through ``python -m ettcore.integrations.torchrun``).

    ... -- --standalone --nproc-per-node 2 --max-restarts 1 tools/campaigns/jobs/elastic_job.py --work W [--fail-at S]

Plain PyTorch (gloo, CPU): a linear model wrapped in DistributedDataParallel,
a step padded to about 20 ms with a sleep, rank 0 saving a checkpoint every
10 steps (both ranks resume from it after a restart).  ``--fail-at S``: in
the first round (``TORCHELASTIC_RESTART_COUNT`` 0) rank 1 raises an error
after step S (logged as ``worker_crash``; rank 0 logs ``crash`` when its own
loop fails on the dead peer); the agent stops the group and restarts it.  Rank 0 records its
phases with :func:`ettcore.integrations.torchrun.record_worker`.  The
ground-truth log (steps, saves, the crash; try = restart count) is written by
this script, never through ettcore.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

FIRST_T = time.time()  # ground truth: this process was running by now (only the standard library imported)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

torch.set_num_threads(1)

from ettcore.integrations.torchrun import record_worker  # noqa: E402
from tools.campaigns.jobs import ddp_linear  # noqa: E402
from tools.campaigns.jobs.ground_truth import EventLog  # noqa: E402

STEP_PAD_S = 0.02


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--fail-at", type=int)
    a = ap.parse_args()
    rank, restart = int(os.environ["RANK"]), int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    log = EventLog(a.work, restart)
    log.lifetime(FIRST_T)  # every rank: the agent started before and ends after each of its workers
    tl = record_worker(writer="rank0", model="linear", progress_interval_s=0.25)  # records on rank 0 only
    model, opt, x, y = ddp_linear.setup(tl, rank)
    ckpt = a.work / "elastic-checkpoint.pt"
    step = 0
    if ckpt.exists():
        with tl.phase("checkpoint_load"):
            state = torch.load(ckpt)
            model.module.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            step = state["step"]
    with tl.phase("trainer_init", "barrier"):
        dist.barrier()
    t = time.time()
    if rank == 0:
        log.write("train_start", step, t, t)
    tl.train_begin(step, t)
    try:
        while step < a.steps:
            if rank == 1 and restart == 0 and step == a.fail_at:
                now = time.time()
                log.write("worker_crash", step, now, now)
                raise RuntimeError(f"injected worker failure after step {step}")
            t0 = time.time()
            ddp_linear.train_step(model, opt, x, y, step)
            time.sleep(STEP_PAD_S)
            step += 1
            if rank == 0:
                log.write("step", step, t0, time.time())
            tl.step(step)
            if step % 10 == 0 and step < a.steps:
                if rank == 0:
                    t1 = time.time()
                    with tl.phase("checkpoint_save"):
                        s0 = time.time()
                        tmp = ckpt.with_suffix(".tmp")
                        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
                        os.replace(tmp, ckpt)
                        s1 = time.time()
                    log.write("save", step, t1, time.time())  # around the recorded phase
                    log.write("save_inside", step, s0, s1)  # inside it
                dist.barrier()
    except Exception:
        if rank == 0:  # the instant rank 0's loop learnt of the failure (its collective with the dead peer failed)
            now = time.time()
            log.write("crash", step, now, now)
        raise
    tl.train_end()
    with tl.phase("shutdown", "destroy_process_group"):
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
