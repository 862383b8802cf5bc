"""Live hang detection on real PyTorch jobs: a 2-rank job under torchrun whose rank 1 stops, and a
one-process job that only slows down, both watched while they run.

The job is ``tools/campaigns/jobs/hang_job.py`` (plain PyTorch, gloo, CPU; training data SYNTHETIC).  Ground truth is
the job's own output (rank 0's ``step N T`` lines, the hanging rank's ``hung after step N``), never ettcore.  The
command under test is ``ett stalls RUN_FOLDER --live --json`` on the live run folder, and the export of it.
Needs the ``torch`` extra.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import needs  # tests/conftest.py

from ettcore.cli import main
from tools.campaigns.jobs import JOBS_DIR
from tools.campaigns.jobs.ground_truth import child_env

pytestmark = [pytest.mark.torch, needs("torch", extra="torch"), pytest.mark.slow]

STEP_S = 0.05


def _live(run: Path, capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(["stalls", str(run), "--live", "--json", *args]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["jobs"]) <= 1
    return doc["jobs"][0] if doc["jobs"] else {}


def _start(cmd: list[str], out: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        cmd, env=child_env(**env), stdout=out.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, read from /proc (torchrun starts its workers in sessions of their own, so killing
    the agent's process group leaves them running: the hung rank forever, the others for their collective's hour)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _stop(p: subprocess.Popen) -> None:
    below = _descendants(p.pid)
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in below:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait(timeout=30)


def _steps(log: Path) -> list[tuple[int, float]]:
    return [
        (int(w[1]), float(w[2])) for w in (line.split() for line in log.read_text().splitlines()) if w[:1] == ["step"]
    ]


def _median_step(steps: list[tuple[int, float]]) -> float:
    return statistics.median(b[1] - a[1] for a, b in zip(steps, steps[1:]))


def test_rank_that_stopped_first_is_named(tmp_path, capsys):
    """Rank 1 stops after step 60 (3 s of 0.05 s steps, about three recorded spans); rank 0 trains on to its next
    synchronization (steps 61-64, all_reduce every 5 steps) and blocks.  With ``--stall-after 3`` the job is reported
    hung within seconds, rank 1 (this machine) as the one that stopped first at step 60 and rank 0 as the one that
    advanced last, at its last printed step (64).  The median step time is within 25% of the job's own."""
    run, log = tmp_path / "run", tmp_path / "job.log"
    cmd = [sys.executable, "-m", "ettcore.integrations.torchrun", "--run-dir", str(run), "--job-id", "hang-tiny"]
    cmd += ["--", "--standalone", "--nproc-per-node", "2", str(JOBS_DIR / "hang_job.py")]
    cmd += ["--hang-after", "60", "--hang-rank", "1", "--step-s", str(STEP_S)]
    p = _start(cmd, log, TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1")
    states, job = [], {}
    try:
        deadline = time.time() + 120
        while time.time() < deadline and job.get("state") != "hung":
            time.sleep(0.5)
            if any(run.glob("*worker*.jsonl")):
                job = _live(run, capsys, "--stall-after", "3")
                states.append(job.get("state"))
        default = _live(run, capsys)  # the default threshold, from the job's pace
        export = tmp_path / "ett.prom"
        assert main(["export", "prometheus", str(run), "--stall-after", "3", "--out", str(export)]) == 0
    finally:
        _stop(p)
    text = log.read_text()
    assert job.get("state") == "hung", (states, text[-3000:])
    assert "rank 1 hung after step 60" in text
    steps = _steps(log)
    assert (job["first_stopped_rank"], job["first_stopped_node"], job["first_stopped_step"]) == (
        1,
        socket.gethostname(),
        60,
    )
    assert (job["last_advanced_rank"], job["last_advanced_node"]) == (0, socket.gethostname())
    assert job["last_advanced_step"] == steps[-1][0] == 64
    assert job["ranks"] == 2 and job["progress_age_s"] > 3 and job["stall_threshold_s"] == 3
    # the default threshold: max(60 s, 10 x the median step time), the median near the job's own (printed) one
    assert default["median_step_s"] == pytest.approx(_median_step(steps[:60]), rel=0.25)
    assert default["stall_threshold_s"] == max(60.0, 10 * default["median_step_s"])
    if default["progress_age_s"] < 60:
        assert default["state"] == "advancing"  # stood still for less than the default threshold: not hung yet
    gauge = 'ett_job_hung{job_id="hang-tiny",model="hang-demo",first_stopped_rank="1",'
    assert f'{gauge}first_stopped_node="{socket.gethostname()}"}} 1' in export.read_text()


def test_a_job_that_slows_down_is_slow_not_hung(tmp_path, capsys):
    """One process: 200 steps of 0.05 s, then steps six times longer, still advancing.  With the default threshold
    (60 s) it is never hung; once five of its recorded spans (one a second) are slow, its recent step time (about
    0.3 s) exceeds three times its median (about 0.05 s): slow."""
    run, log = tmp_path / "run", tmp_path / "job.log"
    cmd = [sys.executable, str(JOBS_DIR / "hang_job.py"), "--step-s", str(STEP_S)]
    cmd += ["--slow-after", "200", "--slow-factor", "6"]
    p = _start(cmd, log, ETT_RUN_DIR=str(run), ETT_JOB_ID="slow-tiny")
    states, job = [], {}
    try:
        deadline = time.time() + 90
        while time.time() < deadline and job.get("state") != "slow":
            time.sleep(0.5)
            if any(run.glob("*.jsonl")):
                job = _live(run, capsys)
                states.append(job.get("state"))
    finally:
        _stop(p)
    steps = _steps(log)
    assert job.get("state") == "slow", (states, log.read_text()[-2000:])
    assert "hung" not in states
    assert steps[-1][0] > 200  # it was in its slow stretch
    fast, slow = _median_step(steps[:200]), _median_step([s for s in steps if s[0] > 201])
    assert slow > 3 * fast
    assert job["median_step_s"] == pytest.approx(fast, rel=0.25)
    assert job["recent_step_s"] > 3 * job["median_step_s"]
    assert job["stall_threshold_s"] == 60.0  # 10 x about 0.05 s is under the 60 s floor
    assert job["progress_age_s"] < job["stall_threshold_s"]
