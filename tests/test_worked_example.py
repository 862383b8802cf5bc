"""The trace spec's worked example (section 7), measured by the SQL metric and by `ett`.

Expected numbers are typed from the spec (minutes x 60), not computed here.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ettcore import metric
from ettcore.trace import load_trace

SPEC = {  # seconds, from the spec's worked example
    "wall_s": 120 * 60,
    "productive_s": 50 * 60,
    "tts_s": 20 * 60,
    "nof": 1,
    "ttr_total_s": 39 * 60,
    "ttr_mean_s": 39 * 60,
    "in_training_loss_s": 1 * 60,
    "shutdown_tail_s": 10 * 60,
}
SPEC_COMPONENTS = {
    "scheduling": 5 * 60,
    "hardware_setup": 8 * 60,
    "trainer_init": 11 * 60,
    "pt2_compile": 16 * 60,
    "wasted_training": 15 * 60,
    "shutdown": 10 * 60,
    "unattributed": 5 * 60,
}


def test_worked_example_api(sample_trace):
    jobs = metric.job_summary(load_trace(sample_trace))
    row = jobs.filter(jobs["job_id"] == "worked-example").row(0, named=True)
    for k, v in SPEC.items():
        assert row[k] == pytest.approx(v, abs=1e-3), k
    assert row["ett_pct"] == pytest.approx(41.67, abs=0.005)
    for c, v in SPEC_COMPONENTS.items():
        assert row[f"{c}_s"] == pytest.approx(v, abs=1e-3), c


def test_worked_example_cli_json(sample_trace):
    out = subprocess.run(
        [sys.executable, "-m", "ettcore.cli", "summarize", str(sample_trace), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.stdout)
    job = next(j for j in doc["jobs"] if j["job_id"] == "worked-example")
    assert job["gpus"] == 128
    for k, v in SPEC.items():
        assert job[k] == pytest.approx(v, abs=1e-3), k
    assert job["components"] == pytest.approx(SPEC_COMPONENTS, abs=1e-3)
    assert doc["synthetic"] is True
    assert set(doc["fleet"]) >= {"ett_pct", "ett_mean_pct", "wall_gpu_h", "productive_gpu_h", "nof", "components_gpu_h"}


def test_worked_example_l2_cells(sample_trace):
    """Bucket x component cells of the worked example, derived by hand from the spec's timeline."""
    l2 = metric.l2_matrix(load_trace(sample_trace))
    cells = {
        (r["bucket"], r["phase"]): r["seconds"]
        for r in l2.filter(l2["job_id"] == "worked-example").iter_rows(named=True)
    }
    expected = {
        ("productive", "train"): 3000,
        ("tts", "hardware_setup"): 300,
        ("tts", "trainer_init"): 300,
        ("tts", "pt2_compile"): 600,
        ("in_training_loss", "checkpoint_save"): 60,
        # recovery 45-84: hang 45-50, re-queue 50-55, setup 55-58, init 58-62, load 62-64, compile 64-70, replay 70-84
        ("recovery", "unattributed"): 300,
        ("recovery", "scheduling"): 300,
        ("recovery", "hardware_setup"): 180,
        ("recovery", "trainer_init"): 240,
        ("recovery", "checkpoint_load"): 120,
        ("recovery", "pt2_compile"): 360,
        ("recovery", "train"): 840,
        ("shutdown_tail", "shutdown"): 600,
    }
    assert cells == pytest.approx(expected, abs=1e-3)
