"""A tiny instrumented training job for the real-Slurm tests (no PyTorch): run as a Slurm batch job's program.

    python tests/slurm/tiny_job.py WORK STEPS STEP_S [CRASH_AT CRASH_EXIT [HOLD]]

The recorder takes the job id and attempt from Slurm's environment.  The "training"
is sleeping STEP_S per step; the step counter is the data cursor and is saved every
5 steps (the checkpoint); a restarted run resumes from it.  With CRASH_AT (0: none),
the first run to reach that step exits with CRASH_EXIT (abruptly, as a crash).  With
HOLD, a file path, the job keeps training past STEPS until that file exists (so a
test decides when it may end).
"""

import os
import sys
import time
from pathlib import Path

from ettcore.integrations.recorder import Recorder

work, steps, step_s = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
crash_at, crash_exit = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) > 5 else (0, 0)
hold = Path(sys.argv[6]) if len(sys.argv) > 6 else None
rec = Recorder(work / "recorder", writer="trainer", progress_interval_s=0.2)
rec.job(model="tiny", gpus=1, variant="smoke")
ckpt = work / f"ckpt-{rec.job_id}"
crashed = work / f"crashed-{rec.job_id}"
with rec.phase("trainer_init"):
    time.sleep(0.2)
step = 0
if ckpt.exists():
    with rec.phase("checkpoint_load"):
        step = int(ckpt.read_text())
with rec.train_span(step) as span:
    while step < steps or (hold is not None and not hold.exists()):
        time.sleep(step_s)
        step += 1
        span.advance(step)
        if step % 5 == 0:  # written whole or not at all: a preemption may kill the job at any instant
            tmp = ckpt.with_name(ckpt.name + ".tmp")
            tmp.write_text(str(step))
            os.replace(tmp, ckpt)
        if crash_at and step == crash_at and not crashed.exists():
            crashed.write_text("")
            os._exit(crash_exit)
with rec.phase("shutdown"):
    time.sleep(0.1)
rec.close()
