"""The bundled framework run (``data/framework-run``): its trace agrees with the ground truth kept beside it.

No PyTorch needed: the trace side is recomputed from the bundled trace by
``ettcore.metric``; the ground truth is what the test harness measured when
the run was made (``ettcore.demo.framework_run``; the live version of this
check is ``tests/test_integration_lightning.py``).
"""

from __future__ import annotations

import json

from ettcore.demo.framework_run import FRAMEWORK_RUN_DIR, comparison, load, trace_values
from ettcore.trace import load_trace


def test_the_bundled_trace_agrees_with_its_ground_truth() -> None:
    table = comparison()
    assert set(table["quantity"]) >= {"wall_s", "NoF", "end reasons", "final cursor (step)", "productive_s", "replay_s"}
    assert table["within"].all(), table


def test_the_bundled_numbers_are_reproducible_from_the_trace() -> None:
    run = load()
    stored = {c["quantity"]: c["trace"] for c in run.comparison}
    now = trace_values(run.trace_dir)
    for quantity, value in now.items():
        assert value == stored[quantity] or abs(float(value) - float(stored[quantity])) < 1e-3, quantity


def test_the_run_is_what_its_readme_says() -> None:
    run = load()
    assert [p["returncode"] for p in run.processes] == [1, 0, 0]  # crash, SIGTERM (Lightning exits 0), clean end
    assert run.ground_truth["nof"] == 2 and run.ground_truth["final_step"] == 60
    meta = json.loads((FRAMEWORK_RUN_DIR / "trace" / "trace.json").read_text())
    assert meta["measured"] is True and meta["synthetic"] is False and meta["recorder_notes"] == []
    t = load_trace(run.trace_dir)  # the data checks pass
    assert t.sql("SELECT count(*) AS n FROM clean_attempts")["n"][0] == 3
