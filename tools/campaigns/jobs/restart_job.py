"""A job of the restart campaign (``tools.campaigns.slurm_restarts``): a step counter that checkpoints and may die.

No training: each step sleeps ``--step-s`` seconds.  The job keeps its progress in a checkpoint file (the last
saved step, written every ``--every`` steps), resumes from it on each run, and records one ``train`` span a run
with the :class:`~ettcore.integrations.recorder.Recorder` (job id and attempt from Slurm's environment), whose
``cursor_start`` is the step it resumed from: the trace's resume point.

A run dies with exit status ``--exit`` when it reaches step ``--die-at`` (the poison step: every run that resumes
before it dies there again), or at ``--die-at`` plus ``--die-step`` times the attempt (a job that fails but gets
further each time); the run of attempt ``--last-attempt`` exits with status 1 instead when it dies (Slurm's
``RequeueExit`` is not 1: the job stops, ``FAILED``).  A run that reaches ``--steps`` completes (exit 0).

Run inside a Slurm batch script::

    python -m tools.campaigns.jobs.restart_job --run-dir DIR --checkpoint FILE --steps 30 --every 10 --die-at 25
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from ettcore.integrations.recorder import Recorder


def read_checkpoint(path: Path) -> int:
    """The last saved step (0 before the first save)."""
    return int(path.read_text().strip()) if path.is_file() else 0


def save_checkpoint(path: Path, step: int) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{step}\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True, help="the recorder's run folder (shared by every run)")
    ap.add_argument("--checkpoint", type=Path, required=True, help="the checkpoint file (the last saved step)")
    ap.add_argument("--model", default="counter", help="the model named in the recorder's job record")
    ap.add_argument("--steps", type=int, required=True, help="steps to completion")
    ap.add_argument("--every", type=int, required=True, help="save the checkpoint every N steps")
    ap.add_argument("--step-s", type=float, default=0.2, help="seconds a step")
    ap.add_argument("--die-at", type=int, default=None, help="the step a run dies at (none: it never dies)")
    ap.add_argument("--die-step", type=int, default=0, help="attempt k dies at --die-at + k * this (0: the same step)")
    ap.add_argument("--exit", type=int, default=42, help="the exit status of a run that dies (Slurm's RequeueExit)")
    ap.add_argument("--last-attempt", type=int, default=None, help="this attempt exits 1 when it dies (gives up)")
    args = ap.parse_args(argv)

    rec = Recorder(args.run_dir)
    rec.job(model=args.model, gpus=1)
    step = read_checkpoint(args.checkpoint)
    die_at = None if args.die_at is None else args.die_at + args.die_step * rec.attempt
    print(f"job {rec.job_id} attempt {rec.attempt}: resumed from step {step}; dies at {die_at}", flush=True)
    died = False
    with rec.train_span(cursor=step) as span:
        while step < args.steps:
            if die_at is not None and step == die_at:
                died = True
                break
            time.sleep(args.step_s)
            step += 1
            span.advance(step)
            if step % args.every == 0:
                save_checkpoint(args.checkpoint, step)
    rec.close()
    if died:
        status = 1 if args.last_attempt is not None and rec.attempt >= args.last_attempt else args.exit
        print(f"job {rec.job_id} attempt {rec.attempt}: died at step {step}, exit {status}", flush=True)
        return status
    print(f"job {rec.job_id} attempt {rec.attempt}: completed at step {step}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
