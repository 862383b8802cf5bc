"""Scenario traces generated on demand and cached in data/generated/ (ettcore.synthetic.traces)."""

from __future__ import annotations

import json

from ettcore.config import GENERATED_DIR, PROJECT_ROOT
from ettcore.synthetic.traces import display_path, scenario_trace, trace_path


def test_generated_once_then_cached() -> None:
    path = scenario_trace("representative", 2, 0)
    assert path == trace_path("representative", 2, 0) == GENERATED_DIR / "representative-n2-s0"
    meta = json.loads((path / "trace.json").read_text())
    assert meta["synthetic"] is True and meta["scenario"] == "representative" and meta["jobs"] == 2
    stamp = (path / "trace.json").stat().st_mtime_ns
    assert scenario_trace("representative", 2, 0) == path
    assert (path / "trace.json").stat().st_mtime_ns == stamp  # not regenerated


def test_display_path_is_relative_inside_the_project(tmp_path) -> None:
    assert display_path(PROJECT_ROOT / "data" / "sample") == "data/sample"
    assert display_path(tmp_path) == str(tmp_path.resolve())
