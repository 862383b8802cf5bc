"""torchrun: a two-worker job, one injected worker failure, ``--max-restarts 1``, recorded as two attempts.

The job (``tools/campaigns/jobs/elastic_job.py``, plain PyTorch DDP on gloo) runs
through ``python -m ettcore.integrations.torchrun`` (torchrun itself, with
the agent's metrics and events recorded).  In the first round rank 1 raises
an error after step 25; the agent stops the group and starts a new one,
which resumes from the step-20 checkpoint and completes 60 steps.  Ground
truth: the test's clock around the torchrun process, and the script's own log
(rank 0's steps and saves, rank 1's failure, the moment rank 0's loop failed
on the dead peer), see ``tools/campaigns/jobs/ground_truth.py`` for the definitions and
tolerances.

``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1``: with the rendezvous store shared
with the workers (torch's default since 2.5), a restarted worker can read a
peer address left by the previous round and its process-group set-up then
fails or hangs (pytorch/pytorch#135712, #167288); this job hit it about one
run in two on the development machine.  Needs the ``torch`` extra.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import needs  # tests/conftest.py

from ettcore.importers.recorder import convert
from tools.campaigns.jobs import JOBS_DIR as JOBS
from tools.campaigns.jobs.ground_truth import (
    child_env,
    compare,
    ground_truth,
    phase_truth,
    read_events,
    table,
    trace_measures,
    wait_for_exit_watchers,
)

pytestmark = [pytest.mark.torch, needs("torch", extra="torch"), pytest.mark.slow]


def test_a_worker_failure_and_the_agents_restart_are_two_attempts_of_one_job(tmp_path: Path) -> None:
    run, work = tmp_path / "run", tmp_path / "work"
    work.mkdir()
    cmd = [
        sys.executable,
        "-m",
        "ettcore.integrations.torchrun",
        "--run-dir",
        str(run),
        "--job-id",
        "elastic-tiny",
        "--",
        "--standalone",
        "--nproc-per-node",
        "2",
        "--max-restarts",
        "1",
        "--monitor-interval",
        "0.1",
        str(JOBS / "elastic_job.py"),
        "--work",
        str(work),
        "--fail-at",
        "25",
    ]
    spawn = time.time()
    p = subprocess.run(
        cmd, env=child_env(TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1"), capture_output=True, text=True, timeout=420
    )
    reap = time.time()
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    seen = wait_for_exit_watchers(run)  # their records are on disk once they are gone
    conv = convert(run, tmp_path / "trace")
    assert conv.problems == [], conv.note_lines()
    events = read_events(work)
    truth = ground_truth(events, 60, spawn, reap, seen)
    assert truth.steps_per_try == {0: (1, 25), 1: (21, 60)}
    rows = compare(truth, tmp_path / "trace", reasons=["failure", "completed"], saves_evals=None)
    # the recorded saves lie between the job's instants just inside and just outside each phase (a microsecond a
    # boundary for the stored precision): bounds that hold however long a busy machine keeps the process waiting
    # between the job's reading of its clock and the recorder's
    save_s, inside_s, saves, insides = phase_truth(events, ("save", "save_inside"))
    assert saves == insides > 0
    m = trace_measures(tmp_path / "trace")
    got, lo, hi = m["phase_s_in_training"]["checkpoint_save"], inside_s - 2e-6 * saves, save_s + 2e-6 * saves
    rows.append(
        {
            "quantity": "checkpoint_save_s",
            "truth": save_s,
            "trace": got,
            "tolerance": max(save_s - lo, hi - save_s),
            "ok": lo <= got <= hi,
        }
    )
    print("\ntorchrun job against ground truth\n" + table(rows))
    assert all(r["ok"] for r in rows), table(rows)

    # the time between the failure and the restart, from the agent's own records
    spans = m["spans"]
    agent = spans.filter(pl.col("phase") == "hardware_setup")
    stages = {(a, s) for a, s in agent.select("attempt", "stage").iter_rows()}
    assert stages == {
        (0, "agent_start"),
        (0, "rendezvous"),
        (0, "start_workers"),
        (0, "stop_workers"),
        (1, "rendezvous"),
        (1, "start_workers"),
    }
    att = m["attempts"]
    end0, start1 = att["end"][0].timestamp(), att["start"][1].timestamp()
    assert end0 == start1  # the agent held the node throughout: no re-queue between the rounds
    crash = next(e for e in events if e.kind == "worker_crash")
    first_step_1 = min(e.start for e in events if e.kind == "step" and e.try_no == 1)
    assert crash.start < end0 < first_step_1  # the round ended after rank 1 failed, before the new round trained
    stop = agent.filter(pl.col("stage") == "stop_workers").row(0, named=True)
    assert stop["start"].timestamp() >= crash.start and stop["end"].timestamp() == pytest.approx(end0, abs=1e-3)
    # the workers of the new round started within the agent's start_workers, after its rendezvous
    r1 = {
        s: agent.filter((pl.col("attempt") == 1) & (pl.col("stage") == s)).row(0, named=True)
        for s in ("rendezvous", "start_workers")
    }
    assert r1["rendezvous"]["end"] <= r1["start_workers"]["end"]
    launch1 = spans.filter((pl.col("attempt") == 1) & (pl.col("stage") == "launch")).row(0, named=True)
    lo, hi = r1["start_workers"]["start"].timestamp(), r1["start_workers"]["end"].timestamp()
    assert lo - 0.02 <= launch1["start"].timestamp() <= hi + 0.02  # 10 ms ticks of the process start
    jobs = conv.jobs.row(0, named=True)
    assert (jobs["model"], jobs["framework"], jobs["gpus"]) == ("linear", "torch", 2)
    assert (run / "torchelastic-events-elastic-tiny.json").is_file()
