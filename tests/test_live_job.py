"""The live PyTorch job: the trace agrees with the supervisor's ground truth.

Ground truth comes from outside the recorder: the supervisor's own spawn/reap
clock readings and exit statuses, and the training loop's step log (see
:mod:`tools.campaigns.supervisor`).  Tolerances, and why:

- wall: 0.01 s (the trace stores milliseconds; both sides read one clock);
- NoF: exact; the final data cursor: exact;
- productive: 2% + NoF x (progress interval + one step) + 0.1 s.  The trace
  counts the whole train span as linear progress, including the loop's few
  microseconds between steps; the ground truth counts step durations.  At a
  kill the trace knows the cursor only up to the last progress record (at most
  one progress interval old), so up to that much time moves between the
  productive and replay buckets;
- TTS: 0.25 s (the train span opens just before the first step starts);
- TTR total: NoF x (progress interval + two steps) + 0.25 s, for the same
  reason as productive time.

The bundled runs (``data/live-job``) are checked without PyTorch; a fresh
small run is checked where PyTorch is installed (marker ``torch``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ettcore import bundled, metric
from ettcore.trace import load_trace
from tools.campaigns.conditions import BASELINE, OPTIMIZED, RunConditions, paired
from tools.campaigns.live_job import measurements


def _median_step_s(gt: dict) -> float:
    return gt["productive_s"] / max(gt["final_step"], 1)


def _check_against_ground_truth(row: dict, gt: dict, cond: RunConditions, spans: pl.DataFrame) -> None:
    nof = gt["nof"]
    step = _median_step_s(gt)
    assert row["nof"] == nof == len(cond.fail_at_steps)
    assert row["wall_s"] == pytest.approx(gt["wall_s"], abs=0.01)
    tol_prod = 0.02 * gt["productive_s"] + nof * (cond.progress_interval_s + step) + 0.1
    assert abs(row["productive_s"] - gt["productive_s"]) <= tol_prod, (
        row["productive_s"],
        gt["productive_s"],
        tol_prod,
    )
    assert row["tts_s"] == pytest.approx(gt["tts_s"], abs=0.25)
    tol_ttr = nof * (cond.progress_interval_s + 2 * step) + 0.25
    assert abs(row["ttr_total_s"] - gt["ttr_total_s"]) <= tol_ttr, (row["ttr_total_s"], gt["ttr_total_s"], tol_ttr)
    train = spans.filter((pl.col("job_id") == cond.job_id) & (pl.col("phase") == "train"))
    assert train["cursor_end"].max() == gt["final_step"] == cond.steps
    # the identity of the spec, to the second
    parts = row["productive_s"] + row["tts_s"] + row["ttr_total_s"] + row["in_training_loss_s"] + row["shutdown_tail_s"]
    assert parts == pytest.approx(row["wall_s"], abs=1.0)


# ---------------------------------------------------------------- bundled runs (no PyTorch needed)


def test_bundled_runs_agree_with_their_ground_truth() -> None:
    live = bundled.live_job()
    assert set(live.conditions) == {"baseline", "optimized"}
    summary = metric.job_summary(load_trace(live.trace_dir))
    spans = pl.read_parquet(live.trace_dir / "spans.parquet")
    for variant, recorded in live.conditions.items():
        cond = RunConditions.from_dict(recorded)
        row = summary.filter(pl.col("job_id") == cond.job_id).row(0, named=True)
        assert row["variant"] == variant
        _check_against_ground_truth(row, live.ground_truth[variant], cond, spans)


def test_bundled_pair_differs_only_in_the_three_optimizations() -> None:
    live = bundled.live_job()
    b, o = live.conditions["baseline"], live.conditions["optimized"]
    differs = {k for k in b if b[k] != o[k]}
    assert differs == {"job_id", "variant", "compile_cache", "async_checkpoint", "overlapped_init"}
    assert (b["compile_cache"], b["async_checkpoint"], b["overlapped_init"]) == ("none", False, False)
    assert (o["compile_cache"], o["async_checkpoint"], o["overlapped_init"]) == ("megacache", True, True)


def test_bundled_trace_is_labelled_measured_and_its_numbers_are_reproducible() -> None:
    meta = json.loads((bundled.LIVE_JOB / "trace" / "trace.json").read_text())
    assert meta["measured"] is True and meta["synthetic"] is False
    assert "synthetic click data" in meta["training_data"]
    stored = bundled.live_job().measurements
    again = json.loads(json.dumps(measurements(bundled.LIVE_JOB / "trace")))  # same JSON round trip as runs.json
    assert again == stored
    for variant in ("baseline", "optimized"):
        assert stored[variant]["nof"] == 2
        assert set(stored[variant]["compile_s_by_attempt"]) == {"0", "1", "2"}


def test_conditions_validate() -> None:
    with pytest.raises(ValueError):
        RunConditions(job_id="x", variant="x", steps=100, fail_at_steps=(120,))
    with pytest.raises(ValueError):
        RunConditions(job_id="x", variant="x", compile_cache="bogus")
    b, o = paired(steps=50, fail_at_steps=(20,))
    assert (b.steps, o.steps, b.fail_at_steps, o.fail_at_steps) == (50, 50, (20,), (20,))
    assert RunConditions.from_dict(OPTIMIZED.as_dict()) == OPTIMIZED and BASELINE.compile_cache == "none"


# ---------------------------------------------------------------- ett live-job (the checkout's campaign)


def _ett(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ettcore.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_ett_live_job_runs_the_checkouts_campaign(tmp_path: Path) -> None:
    """``ett live-job --rebuild --out COPY`` runs ``tools/campaigns/live_job.py`` with its options: it converts the
    copy's recorder files into a trace again (its Parquet files removed first) and recomputes the bundled numbers."""
    copy = tmp_path / "live-job"
    shutil.copytree(bundled.LIVE_JOB, copy)
    for table in (copy / "trace").glob("*.parquet"):
        table.unlink()
    out = _ett("live-job", "--rebuild", "--out", str(copy))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"re-converted {copy / 'recorder'} into {copy / 'trace'}")
    assert sorted(p.name for p in (copy / "trace").glob("*.parquet")) == [
        "attempts.parquet",
        "jobs.parquet",
        "spans.parquet",
    ]
    assert bundled.live_job(copy).measurements == bundled.live_job().measurements
    help_text = _ett("live-job", "--help")
    assert help_text.returncode == 0 and "--rebuild" in help_text.stdout and "--fail-at" in help_text.stdout


def test_ett_live_job_without_a_checkout_says_so_in_one_line(tmp_path: Path) -> None:
    out = _ett("live-job", "--steps", "5", ETT_PROJECT_ROOT=str(tmp_path))
    assert out.returncode == 2 and out.stdout == ""
    (line,) = out.stderr.splitlines()
    assert line.startswith(f"ett: {tmp_path / 'tools' / 'campaigns' / 'live_job.py'}: ett live-job runs the live-job ")
    assert "ETT_PROJECT_ROOT" in line


# ---------------------------------------------------------------- a fresh live run (PyTorch)


@pytest.mark.torch
@pytest.mark.slow
def test_fresh_live_run_agrees_with_supervisor_ground_truth(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from ettcore.importers.recorder import convert
    from tools.campaigns.supervisor import run_job

    _, cond = paired(steps=160, checkpoint_every=40, fail_at_steps=(70, 130), negotiation_s=0.2, requeue_s=0.2)
    gt = run_job(cond, tmp_path / "work", tmp_path / "recorder")
    conv = convert(tmp_path / "recorder", tmp_path / "trace")
    # the two killed attempts die inside a train span: exactly those two notes, nothing else
    assert len(conv.problems) == 2 and all(
        "train span opened here was never closed" in p.message for p in conv.problems
    )
    row = metric.job_summary(load_trace(tmp_path / "trace")).row(0, named=True)
    _check_against_ground_truth(row, gt, cond, conv.spans)
    # restarts resumed from a complete checkpoint at or before each kill and replayed the steps since
    resumed = [gt["attempts"][k]["first_step"] - 1 for k in (1, 2)]
    assert all(r % 40 == 0 for r in resumed) and resumed[0] <= 70 and resumed[1] <= 130
    assert gt["replayed_steps"] == (70 - resumed[0]) + (130 - resumed[1])
    # the warm restarts loaded the compile cache the first attempt saved
    stages = conv.spans.filter(pl.col("phase") == "pt2_compile").group_by("attempt").agg(pl.col("stage"))
    by_attempt = {a: sorted(s) for a, s in stages.iter_rows()}
    assert by_attempt == {0: ["cache_save", "compile"], 1: ["cache_load", "compile"], 2: ["cache_load", "compile"]}
    assert all(gt["attempts"][i]["new_steps"] > 0 for i in range(3))
