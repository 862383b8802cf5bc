"""Slow time held to ground truth on a real 2-rank ``torchrun`` job (gloo, CPU).

The job (``tools/campaigns/jobs/slow_job.py``, plain PyTorch DDP) runs through ``python -m
ettcore.integrations.torchrun``: 120 steps of about 0.25 s (microseconds of compute padded with a sleep), in which
rank 1 sleeps 3 s in each of steps 60 to 65 before its backward pass, so rank 0, which records the trace, waits that
long in DDP's all-reduce.  Ground truth: the slowed rank's own log of each sleep, its lengths as it measured them
(about 18 s; a late wake-up on a loaded machine is in them, and rank 0 waited it too).  The measured slow seconds
(:mod:`ettcore.metric.slow` at tolerance ``TOLERANCE``) must be within 10 % of the injected, and an unslowed control
run of the same job must have no slow time.  Every rank keeps its work and wait per window
(:mod:`ettcore.integrations.rank_timing`); the slow spans must name rank 1 and its host as the rank that held the job
back, and the ranks' windows inside the slowed steps must show rank 1 working longer and rank 0 waiting longer.
About a minute and a half for both runs on a quiet machine.  Needs the ``torch`` extra.

Why the numbers hold on a loaded 2-core machine (where three engineers run tests at once):

- The recorder cuts a train span at the first step end 1 s or more after its last cut: a normal span is about 4
  steps (1 s), and each slowed step (3.25 s) ends a span of its own, the first one with up to 3 normal steps before
  it.  The job's ideal pace is the 10th percentile of s/step over its ~28 spans past warm-up.
- ``TOLERANCE = 1.0``: a span is slow past twice its ideal time.  A slowed span is about 4x (the first) to 13x its
  ideal time, slow at any tolerance below 3; a normal span is slow only if the machine held the job up a whole
  second more inside its one second, which the earlier runs at the default 0.25 did see (a loaded machine stretched
  normal spans past 1.25x: 0.37 s of slow time in the control run, 2.4 s outside the slowed window).
- A slowed span's slow time is its length less its steps at the ideal pace: the sleep as the slowed rank measured it,
  plus how far its normal steps ran over the fastest tenth.  Those are at most 9 steps (about 2.3 s); even 20 %
  over, that is 0.45 s, 2.5 % of the 18 s injected: the 10 % bound leaves room for it and for the jitter of the
  all-reduce, without a quiet machine.

A run beside two other engineers' tests (load average 6.6 on 2 cores): 18.05 s measured for 18.01 s injected, rank
1 named on its host, the control's slowest span 1.02x its ideal time and no slow time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import needs  # tests/conftest.py

from ettcore.importers.recorder import convert, read_rank_timing
from ettcore.metric import slow
from ettcore.trace import load_trace
from tools.campaigns.jobs import JOBS_DIR as JOBS
from tools.campaigns.jobs.ground_truth import child_env, read_events, table, wait_for_exit_watchers

pytestmark = [pytest.mark.torch, needs("torch", extra="torch"), pytest.mark.slow]

TOLERANCE = 1.0  # a span is slow past twice its ideal time (why: the module's docstring)


def run_job(tmp: Path, name: str, *extra: str) -> tuple[dict, list, pl.DataFrame, list[dict]]:
    """Run the job through the wrapper: its per-job slow figures, its ground-truth events, who held back each slow
    span (:func:`ettcore.metric.slow.holders` over the ranks' timing files) and every rank's windows."""
    run, work = tmp / f"{name}-run", tmp / f"{name}-work"
    work.mkdir()
    cmd = [sys.executable, "-m", "ettcore.integrations.torchrun", "--run-dir", str(run), "--job-id", name, "--"]
    cmd += ["--standalone", "--nproc-per-node", "2", str(JOBS / "slow_job.py"), "--work", str(work), *extra]
    p = subprocess.run(
        cmd, env=child_env(TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1"), capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    wait_for_exit_watchers(run)
    conv = convert(run, tmp / f"{name}-trace")
    assert conv.problems == [], conv.note_lines()
    trace = load_trace(tmp / f"{name}-trace")
    windows = read_rank_timing(run)
    figures = slow.job_slow(trace, TOLERANCE).row(0, named=True)
    # how far the job's slowest span past warm-up ran over its ideal time (printed: the margin the tolerance left)
    figures["worst_ratio"] = trace.sql(
        "SELECT max(a.seconds / (a.advance * p.ideal_s_per_unit)) AS r FROM train_advances AS a"
        " JOIN job_ideal_pace AS p ON p.job_key = a.job_key WHERE NOT a.warm_up"
    )["r"][0]
    return figures, read_events(work), slow.holders(trace, windows, TOLERANCE), windows


def test_slow_seconds_equal_the_injected_sleep_and_a_control_run_has_none(tmp_path: Path) -> None:
    slowed, events, held, windows = run_job(tmp_path, "slowed", "--slow-rank", "1")
    sleeps = [e for e in events if e.kind == "slow_sleep"]
    injected = sum(e.end - e.start for e in sleeps)
    assert len(sleeps) == 6
    host = (tmp_path / "slowed-work" / "slowed-rank-1.host").read_text().strip()
    control, _, control_held, _ = run_job(tmp_path, "control")
    named = held.group_by("rank", "node").agg(pl.col("slow_s").sum()).sort("slow_s", descending=True)
    rows = [
        {
            "quantity": "slowed run: slow_s",
            "truth": injected,
            "trace": slowed["slow_s"],
            "tolerance": 0.1 * injected,
            "ok": abs(slowed["slow_s"] - injected) <= 0.1 * injected,
        },
        {
            "quantity": "slowed run: the rank and node that held it back (most slow_s)",
            "truth": f"rank 1 on {host}",
            "trace": f"rank {named['rank'][0]} on {named['node'][0]}" if named.height else "none",
            "tolerance": 0.0,
            "ok": named.height > 0 and (named["rank"][0], named["node"][0]) == (1, host),
        },
        {
            "quantity": "control run: slow_s",
            "truth": 0.0,
            "trace": control["slow_s"],
            "tolerance": 0.0,
            "ok": control["slow_s"] == 0.0 and control_held.height == 0,
        },
    ]
    # each rank's windows inside the slowed steps: the slowed rank worked longer, the other waited for it
    lo, hi = min(e.start for e in sleeps), max(e.end for e in sleeps)
    inside = [w for w in windows if w["start"] >= lo and w["end"] <= hi]
    work = {r: sum(w["work_s"] for w in inside if w["rank"] == r) for r in (0, 1)}
    wait = {r: sum(w["wait_s"] for w in inside if w["rank"] == r) for r in (0, 1)}
    rows.append(
        {
            "quantity": "slowed steps: work_s rank 1 / rank 0, wait_s rank 0 / rank 1",
            "truth": "rank 1 works longer, rank 0 waits longer",
            "trace": f"{work[1]:.2f}/{work[0]:.2f} s, {wait[0]:.2f}/{wait[1]:.2f} s",
            "tolerance": 0.0,
            "ok": work[1] > work[0] and wait[0] > wait[1],
        }
    )
    print("\nslow time against ground truth\n" + table(rows))
    worst = control["worst_ratio"]
    print(f"control run: its slowest span took {worst:.2f}x its ideal time (slow past {1 + TOLERANCE:g}x)")
    print(held)
    assert all(r["ok"] for r in rows), table(rows)
