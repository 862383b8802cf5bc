"""Stalls: train spans whose data cursor stood still longer than a threshold; reporting only.

The SQL (``ettcore.metric.stalls``) is compared with the plain-Python reference
(:func:`reference.reference_stalls`) on random traces (SYNTHETIC; flat cursors and uneven paces are
common there) with random windows and thresholds, and pinned on a hand-made job with one hang.  The metric's own figures
must not change with the threshold.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import polars as pl
import pytest
import reference as ref  # tests/reference.py, the plain-Python oracle
from hypothesis import event, given
from hypothesis import strategies as st
from test_metric_properties import _ms, _settings, sql_window
from test_window_properties import traces_with_window
from trace_strategies import train_spans, write_trace_folder

from ettcore import metric
from ettcore.cli import main
from ettcore.errors import TraceError
from ettcore.metric import stalls
from ettcore.trace import load_trace

B = 1_769_900_000_000  # 2026-01-31T22:53:20Z
MIN = 60_000


def _hang_trace() -> dict:
    """One job: five train spans at 100 cursor units a minute, then one of 11 minutes that advances 100 (a 10-minute
    hang)."""
    pieces = [(minutes * 60, units) for minutes, units in [(1, 100), (1, 100), (1, 100), (1, 100), (11, 100), (1, 100)]]
    spans = train_spans("j", 0, pieces, B)
    t = spans[-1]["end"]
    return {
        "jobs": None,
        "attempts": [dict(job_id="j", attempt=0, start=B, end=t, end_reason="completed")],
        "spans": spans,
    }


def test_one_hang_is_one_stall(tmp_path):
    t = load_trace(write_trace_folder(_hang_trace(), tmp_path / "t"))
    per_job = stalls.job_stalls(t).row(0, named=True)
    assert per_job["stalls"] == 1
    assert per_job["pace_per_s"] == pytest.approx(100 / 60)
    assert per_job["longest_stall_s"] == pytest.approx(600.0) and per_job["stall_s"] == pytest.approx(600.0)
    assert per_job["stall_after_s"] == 60.0  # 10 units at 100/min take 6 s; the floor is 60 s
    listed = stalls.train_stalls(t)
    assert listed.height == 1 and _ms(listed["start"][0]) == B + 4 * MIN
    # a threshold above the hang finds nothing; one below finds it
    assert stalls.job_stalls(t, stall_after=601)["stalls"][0] == 0
    assert stalls.job_stalls(t, stall_after=599)["stalls"][0] == 1
    # reporting only: the metric is the same whatever the threshold
    assert metric.job_summary(t)["productive_s"][0] == 16 * 60.0


def test_stall_after_must_be_a_positive_number(tmp_path):
    t = load_trace(write_trace_folder(_hang_trace(), tmp_path / "t"))
    for bad in ["0", "-5", "nan", "inf", "ten", "1; DROP TABLE spans"]:
        with pytest.raises(TraceError) as info:
            stalls.job_stalls(t, stall_after=bad)
        assert info.value.problems[0].field == "stall_after"


def test_stalls_command(tmp_path, capsys):
    folder = write_trace_folder(_hang_trace(), tmp_path / "t")
    assert main(["stalls", str(folder), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["synthetic"] is True
    assert doc["jobs"][0]["stalls"] == 1 and len(doc["stalls"]) == 1
    assert doc["stalls"][0]["start"] == "2026-01-31T22:57:20Z"
    assert main(["stalls", str(folder), "--since", "2026-01-31T23:00:00Z"]) == 0  # the hang starts before: not counted
    assert "0 stall(s)" in capsys.readouterr().out
    assert main(["stalls", str(folder), "--stall-after", "x"]) == 2


@_settings(60)
@given(traces_with_window(), st.one_of(st.none(), st.sampled_from([1.0, 30.0, 120.0, 600.0])))
def test_stalls_equal_reference(trace_window, stall_after):
    """Per job: pace, threshold, and each stall (start, stalled time), over random windows and exclusions."""
    trace, window = trace_window
    want = ref.reference_stalls(
        trace["jobs"],
        trace["attempts"],
        trace["spans"],
        window["as_of"],
        stall_after=stall_after,
        since=window["since"],
        until=window["until"],
        exclusions=window["exclusions"],
    )
    event(
        "stalls in the reference: "
        f"{min(3, sum(len(w['stalls']) for w in want.values()))}"
        f"{'+' * (sum(len(w['stalls']) for w in want.values()) >= 3)}"
    )
    with tempfile.TemporaryDirectory(prefix="ett-stall-") as tmp:
        t = load_trace(
            write_trace_folder(trace, Path(tmp) / "t"),
            as_of=None if window["as_of"] is None else window["as_of"] / 1000,
        )
        metric.set_window(t, **sql_window(window))
        per_job = {r["job_id"]: r for r in stalls.job_stalls(t, stall_after).iter_rows(named=True)}
        listed = stalls.train_stalls(t, stall_after)
    assert sorted(per_job) == sorted(want)
    for job_id, w in want.items():
        g = per_job[job_id]
        assert (g["pace_per_s"] is None) == (w["pace"] is None)
        if w["pace"] is not None:
            assert g["pace_per_s"] == pytest.approx(w["pace"], rel=1e-12)
        assert g["stall_after_s"] == pytest.approx(w["threshold"], rel=1e-12)
        assert g["stalls"] == len(w["stalls"]), job_id
        assert g["stall_s"] == pytest.approx(sum(s for _, s in w["stalls"]), abs=1e-6)
        assert g["longest_stall_s"] == pytest.approx(max([s for _, s in w["stalls"]], default=0.0), abs=1e-6)
        mine = listed.filter(pl.col("job_id") == job_id)
        assert [_ms(v) for v in mine["start"]] == [s for s, _ in w["stalls"]]
        assert mine["stalled_s"].to_list() == pytest.approx([s for _, s in w["stalls"]], abs=1e-6)
