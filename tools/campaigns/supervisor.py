"""Run a job's attempts as separate processes; induce failures; restart; keep ground truth (no PyTorch here).

The supervisor plays the scheduler and the cluster: it spawns each attempt of
:mod:`tools.campaigns.attempt` as a fresh Python process (own empty
``TORCHINDUCTOR_CACHE_DIR``, so nothing compiled survives a restart unless
the run's compile cache carries it), waits for it, records the attempt's
start (spawn) and end (reap) with a :class:`~ettcore.integrations.recorder.Recorder`
(writer ``supervisor``), waits ``requeue_s`` and restarts after a failure.
Attempts resume from the last complete checkpoint.

Ground truth, kept apart from the recorder's spans: the supervisor's own
spawn/reap clock readings and exit statuses, and the training loop's step
log (one line per step, written by the loop itself, not by the recorder).
From them :func:`ground_truth` computes, by the trace spec's definitions:

- ``wall_s`` = last reap - first spawn;
- ``nof`` = attempts that died by the induced SIGKILL;
- ``productive_s`` = sum of step durations (start to end of the step) of the
  steps that moved the step counter past its high-water mark;
- ``tts_s`` = first spawn -> start of the first step;
- ``ttr_total_s`` = sum over failures of: end of the failed attempt's last
  step -> start of the first step, in a later attempt, past the high-water mark.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ettcore.integrations.recorder import Recorder
from tools.campaigns import checkout_on_path
from tools.campaigns.conditions import RunConditions

MODEL_NAME = "click-dlrm-small"


class AttemptCrashed(RuntimeError):
    """An attempt died in a way the run conditions did not ask for."""


def _child_env(cache_dir: Path, threads: int) -> dict[str, str]:
    env = checkout_on_path(dict(os.environ))
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
    env["OMP_NUM_THREADS"] = str(threads)  # few intra-op threads: no spin-waiting when the cores are shared
    return env


def _load1() -> float | None:
    """The host's 1-minute load average (other work on a shared machine slows every phase)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def run_job(
    cond: RunConditions,
    work: Path,
    recorder_dir: Path,
    *,
    python: str = sys.executable,
    attempt_timeout_s: float = 900.0,
) -> dict[str, Any]:
    """Run every attempt of one job until one completes; return the ground truth (also in
    ``work/ground_truth.json``)."""
    work = Path(work)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / "conditions.json").write_text(json.dumps(cond.as_dict(), indent=2) + "\n")
    records: list[dict[str, Any]] = []
    attempt = 0
    while True:
        cache_dir = work / f"inductor-cache-a{attempt:04d}"
        cache_dir.mkdir()
        sup = Recorder(recorder_dir, cond.job_id, attempt, writer="supervisor")
        if attempt == 0:
            sup.job(model=MODEL_NAME, gpus=1, variant=cond.variant, device="cpu", pair="live-job")
        log = open(work / f"attempt-a{attempt:04d}.log", "wb")
        load_at_spawn = _load1()
        spawn_t = time.time()
        sup.attempt_start(t=spawn_t)
        cmd = [
            python,
            "-m",
            "tools.campaigns.attempt",
            "--conditions",
            str(work / "conditions.json"),
            "--attempt",
            str(attempt),
            "--work",
            str(work),
            "--recorder",
            str(recorder_dir),
            "--spawn-t",
            repr(spawn_t),
        ]
        proc = subprocess.Popen(
            cmd, env=_child_env(cache_dir, cond.threads), stdout=log, stderr=subprocess.STDOUT, cwd=work
        )
        try:
            rc = proc.wait(timeout=attempt_timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        reap_t = time.time()
        log.close()
        induced = attempt < len(cond.fail_at_steps)
        if rc == 0:
            reason = "completed"
        else:
            reason = "failure"
        sup.attempt_end(reason, t=reap_t)
        sup.close()
        records.append(
            {
                "attempt": attempt,
                "spawn_t": spawn_t,
                "reap_t": reap_t,
                "returncode": rc,
                "load_average_1min_at_spawn": load_at_spawn,
                "load_average_1min_at_reap": _load1(),
                "induced_failure": induced and rc == -signal.SIGKILL,
                "fail_at_step": cond.fail_at_steps[attempt] if induced else None,
            }
        )
        if rc == 0 and not induced:
            break
        if not (induced and rc == -signal.SIGKILL):
            tail = (work / f"attempt-a{attempt:04d}.log").read_text(errors="replace")[-3000:]
            raise AttemptCrashed(
                f"{cond.job_id} attempt {attempt} exited with {rc} (expected "
                f"{'SIGKILL' if induced else 'success'}); log tail:\n{tail}"
            )
        time.sleep(cond.requeue_s)
        attempt += 1
    gt = ground_truth(work, records)
    (work / "ground_truth.json").write_text(json.dumps(gt, indent=2) + "\n")
    return gt


def read_step_log(work: Path) -> list[tuple[int, int, float, float]]:
    """All attempts' step logs: (attempt, step, start, end), in time order."""
    rows: list[tuple[int, int, float, float]] = []
    for path in sorted(Path(work).glob("steps-a*.csv")):
        with open(path, newline="") as fh:
            for r in csv.reader(fh):
                if len(r) == 4:  # a line cut by the kill would be shorter; one write per line makes that unlikely
                    rows.append((int(r[0]), int(r[1]), float(r[2]), float(r[3])))
    return sorted(rows, key=lambda r: r[2])


def ground_truth(work: Path, attempts: list[dict[str, Any]]) -> dict[str, Any]:
    """Wall, productive time, NoF, TTS and TTR from the supervisor's records and the step log (see module doc)."""
    steps = read_step_log(work)
    if not steps:
        raise AttemptCrashed(f"no step was logged in {work}")
    hwm = 0
    productive = 0.0
    new_first: list[tuple[float, int]] = []  # (start time, attempt) of each step past the high-water mark
    per_attempt: dict[int, dict[str, Any]] = {}
    for att, step, t0, t1 in steps:
        pa = per_attempt.setdefault(
            att, {"first_step": step, "last_step": step, "last_step_end": t1, "new_steps": 0, "replayed_steps": 0}
        )
        pa["last_step"], pa["last_step_end"] = step, t1
        if step > hwm:
            productive += t1 - t0
            hwm = step
            pa["new_steps"] += 1
            new_first.append((t0, att))
        else:
            pa["replayed_steps"] += 1
    first_spawn = attempts[0]["spawn_t"]
    ttr_total = 0.0
    for a in attempts:
        if a["induced_failure"]:
            last_end = per_attempt[a["attempt"]]["last_step_end"]
            resume = next((t for t, att in new_first if att > a["attempt"]), attempts[-1]["reap_t"])
            ttr_total += resume - last_end
    for a in attempts:
        a.update(per_attempt.get(a["attempt"], {}))
    nof = sum(1 for a in attempts if a["induced_failure"])
    return {
        "wall_s": attempts[-1]["reap_t"] - first_spawn,
        "productive_s": productive,
        "nof": nof,
        "tts_s": steps[0][2] - first_spawn,
        "ttr_total_s": ttr_total,
        "ttr_mean_s": ttr_total / nof if nof else None,
        "final_step": hwm,
        "replayed_steps": sum(pa["replayed_steps"] for pa in per_attempt.values()),
        "attempts": attempts,
        "clock": "time.time() on the supervisor's and the attempts' host (one machine, one clock)",
    }
