"""A two-rank DDP run of a framework callback under the torchrun wrapper, for the framework integration tests (and a
one-process gloo group for the tests of the timing hook on real DDP models).

Runs ``tools/campaigns/jobs/ddp_timing_job.py`` (its docstring says what the job does) through ``python -m
ettcore.integrations.torchrun`` on CPU (gloo), converts the run folder into a trace and returns what the tests check:
every rank's windows as the trace's ``rank_timing`` table holds them (its checked rows, ``clean_rank_timing``:
steps, work and wait summed per rank) and each rank's count of calls of the job's own communication hook (the job's
ground truth, never through ettcore).
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ettcore.importers.recorder import RANK_TIMING_DIR, convert
from ettcore.trace import load_trace
from tools.campaigns.jobs import JOBS_DIR
from tools.campaigns.jobs.ground_truth import child_env, wait_for_exit_watchers

STEPS = 12


@contextmanager
def one_process_group(folder: Path) -> Iterator[None]:
    """A gloo process group of this process alone (world size 1: real DDP models, no other process)."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{folder / 'store'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def ddp_timing_run(tmp: Path, framework: str, *extra: str) -> tuple[list[dict], dict[int, int], list[Path]]:
    """The trace's ``rank_timing`` per rank, the job's hook calls per rank and the run folder's timing files."""
    run, work = tmp / "run", tmp / "work"
    cmd = [sys.executable, "-m", "ettcore.integrations.torchrun", "--run-dir", str(run), "--job-id", framework, "--"]
    cmd += ["--standalone", "--nproc-per-node", "2", str(JOBS_DIR / "ddp_timing_job.py"), "--framework", framework]
    cmd += ["--work", str(work), "--steps", str(STEPS), *extra]
    env = child_env(TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    assert "ett callback errors: 0" in p.stdout, p.stdout[-2000:]
    wait_for_exit_watchers(run)
    conv = convert(run, tmp / "trace")
    assert conv.problems == [], conv.note_lines()
    per_rank = load_trace(tmp / "trace").sql(
        "SELECT rank, count(*) AS windows, sum(steps) AS steps, sum(work_s) AS work_s, sum(wait_s) AS wait_s"
        " FROM clean_rank_timing GROUP BY rank ORDER BY rank"
    )
    calls = {r: int((work / f"hook-calls-rank-{r}.txt").read_text()) for r in (0, 1)}
    return per_rank.to_dicts(), calls, sorted((run / RANK_TIMING_DIR).glob("*.jsonl"))
