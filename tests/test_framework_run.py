"""The bundled framework run (``data/framework-run``): its trace agrees with the ground truth kept beside it.

No PyTorch needed: the trace side is recomputed from the bundled trace by
``ettcore.metric`` (:func:`ettcore.bundled.framework_run_comparison`); the ground truth is what the test harness
measured when the run was made (``tools.campaigns.framework_run``; the live version of this check is
``tests/test_integration_lightning.py``).
"""

from __future__ import annotations

import json

import pytest

from ettcore import bundled
from ettcore.trace import load_trace
from tools.campaigns.jobs import ground_truth as gt


def test_the_bundled_trace_agrees_with_its_ground_truth() -> None:
    table = bundled.framework_run_comparison()
    assert set(table["quantity"]) >= {"wall_s", "NoF", "end reasons", "final cursor (step)", "productive_s", "replay_s"}
    assert table["within"].all(), table


def test_the_bundled_numbers_are_reproducible_from_the_trace() -> None:
    run = bundled.framework_run()
    stored = {c["quantity"]: c["trace"] for c in run.comparison}
    now = bundled.framework_run_values(run.trace_dir)
    for quantity, value in now.items():
        assert value == stored[quantity] or abs(float(value) - float(stored[quantity])) < 1e-3, quantity


def test_the_ground_truth_follows_from_the_jobs_own_log() -> None:
    """``runs.json``'s ground truth is what ``ground_truth.py`` computes from ``events.csv`` (the job script's own
    log) and the harness's clock (the first spawn, the last reap), to the microsecond ``events.csv`` keeps."""
    run = bundled.framework_run()
    events = [gt.Event(e["kind"], e["try"], e["step"], e["start"], e["end"]) for e in bundled.framework_run_events()]
    assert {e.kind for e in events} >= {"step", "save", "eval", "crash", "train_start"}
    truth = gt.ground_truth(events, 60, run.processes[0]["spawn_t"], run.processes[-1]["reap_t"]).as_dict()
    want = run.ground_truth
    assert (truth["nof"], truth["final_step"], truth["replayed_steps"]) == (2, 60, 11)
    assert (want["nof"], want["final_step"], want["replayed_steps"]) == (2, 60, 11)
    for seconds in ("wall_s", "productive_s", "replay_s", "ttr_total_s", "median_step_s"):
        assert truth[seconds] == pytest.approx(want[seconds], abs=1e-4), seconds
    assert {str(k): list(v) for k, v in truth["steps_per_try"].items()} == run.steps_per_try


def test_the_run_is_what_its_readme_says() -> None:
    run = bundled.framework_run()
    assert [p["returncode"] for p in run.processes] == [1, 0, 0]  # crash, SIGTERM (Lightning exits 0), clean end
    assert run.ground_truth["nof"] == 2 and run.ground_truth["final_step"] == 60
    meta = json.loads((bundled.FRAMEWORK_RUN / "trace" / "trace.json").read_text())
    assert meta["measured"] is True and meta["synthetic"] is False and meta["recorder_notes"] == []
    t = load_trace(run.trace_dir)  # the data checks pass
    assert t.sql("SELECT count(*) AS n FROM clean_attempts")["n"][0] == 3
