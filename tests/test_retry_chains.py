"""Retry chains and restart storms (``ettcore.metric.restarts``; ``job_retry_chains.sql``, ``fleet_retry_chains.sql``,
``restart_storms.sql``): pinned on the worked example of tests/test_crash_loops.py (SYNTHETIC) and held to the
plain-Python references (``reference_retry_chains``, ``reference_storms`` in tests/reference.py) on random traces.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import reference as ref  # tests/reference.py, the plain-Python oracle
from hypothesis import event, given
from hypothesis import strategies as st
from test_cause_properties import _write, caused_traces
from test_crash_loops import MIN, B, looping_traces, worked_example
from test_metric_properties import _ms, _settings

from ettcore.errors import InputError
from ettcore.metric import restarts
from ettcore.trace import load_trace


def test_the_worked_example(tmp_path):
    trace = worked_example()
    trace["attempts"][4]["end_reason"] = "failure"  # poison's last attempt fails too: it gave up (no attempt after)
    t = load_trace(_write(trace, tmp_path / "t"))
    jobs = {r["job_id"]: r for r in restarts.retry_chains(t).iter_rows(named=True)}
    assert jobs["poison"]["attempts"] == 5 and jobs["poison"]["interruptions"] == 5
    assert jobs["poison"]["restarts"] == 4 and jobs["poison"]["outcome"] == "interrupted"
    assert jobs["poison"]["restart_wait_s"] == 4 * 120.0 and jobs["poison"]["median_restart_wait_s"] == 120.0
    assert (jobs["advancing"]["outcome"], jobs["advancing"]["restarts"]) == ("completed", 2)
    fleet = restarts.fleet_retry_chains(t)
    assert (fleet["retried_jobs"], fleet["retried_ended"], fleet["retried_completed"]) == (3, 3, 2)
    assert fleet["retry_completion_pct"] == pytest.approx(200 / 3)
    assert (fleet["restarts"], fleet["median_restart_wait_s"]) == (8, 120.0)
    # every job's interruptions at 10 and 22 min, poison's also at 34, 46 and 58: five or more within 15 minutes
    # from 10 min on (six: 10, 10, 10, 22, 22, 22), none from 22 on (22, 22, 22, 34)
    storms = restarts.restart_storms(t, interruptions=5, window="15m")
    assert storms.height == 1
    s = storms.row(0, named=True)
    assert (_ms(s["first_interruption"]), _ms(s["last_interruption"])) == (B + 10 * MIN, B + 22 * MIN)
    assert (s["interruptions"], s["jobs"]) == (6, 3)
    assert restarts.restart_storms(t, interruptions=7, window="15m").height == 0
    by_team = restarts.restart_storms(t, by="team", interruptions=5, window="15m")
    assert by_team["team"].to_list() == ["ads"]


def test_storm_thresholds_are_checked():
    for n, w, flag in [
        (1, "1h", "--storm-interruptions"),
        ("x", "1h", "--storm-interruptions"),
        (5, "0m", "--storm-window"),
    ]:
        with pytest.raises(InputError) as info:
            restarts.storm_thresholds(n, w)
        assert info.value.problems[0].file == flag
    assert restarts.storm_thresholds(None, None) == (5, 3_600_000)


def _check(trace: dict, n: int, window_ms: int, by: str | None) -> None:
    want_jobs, want_fleet = ref.reference_retry_chains(trace["jobs"], trace["attempts"], trace["spans"])
    want_storms = ref.reference_storms(trace["jobs"], trace["attempts"], trace["spans"], n, window_ms, by)
    event(f"{min(len(want_storms), 2)} storm(s)")
    with tempfile.TemporaryDirectory(prefix="ett-chains-") as tmp:
        t = load_trace(_write(trace, Path(tmp) / "t"))
        got_jobs = {r.pop("job_id"): r for r in restarts.retry_chains(t).iter_rows(named=True)}
        got_fleet = restarts.fleet_retry_chains(t)
        storms = restarts.restart_storms(t, by=by, interruptions=n, window=f"{window_ms}ms")
    for r in got_jobs.values():
        r.pop("model")
    assert got_jobs.keys() == want_jobs.keys()
    for job_id, want in want_jobs.items():
        got = got_jobs[job_id]
        assert {k: got[k] for k in ("attempts", "interruptions", "restarts", "outcome")} == {
            k: want[k] for k in ("attempts", "interruptions", "restarts", "outcome")
        }, job_id
        assert got["restart_wait_s"] == pytest.approx(want["restart_wait_s"], abs=5e-4)
        assert got["median_restart_wait_s"] == pytest.approx(want["median_restart_wait_s"], abs=5e-4)
    assert {k: v for k, v in got_fleet.items() if not k.endswith(("_pct", "_s"))} == {
        k: v for k, v in want_fleet.items() if not k.endswith(("_pct", "_s"))
    }
    for k in ("retry_completion_pct", "median_restart_wait_s"):
        assert got_fleet[k] == pytest.approx(want_fleet[k], abs=1e-6), k
    key = by or "fleet"
    got_storms = [
        {
            "group": r[key] if by else "fleet",
            "first": _ms(r["first_interruption"]),
            "last": _ms(r["last_interruption"]),
            "interruptions": r["interruptions"],
            "jobs": r["jobs"],
        }
        for r in storms.iter_rows(named=True)
    ]
    assert got_storms == want_storms


@_settings(50)
@given(
    looping_traces(),
    st.integers(2, 5),
    st.sampled_from([5 * MIN, 20 * MIN, 3_600_000]),
    st.sampled_from([None, "team", "gpus"]),
)
def test_chains_and_storms_equal_the_reference(trace, n, window_ms, by):
    _check(trace, n, window_ms, by)


@_settings(30)
@given(caused_traces(), st.integers(2, 4), st.sampled_from([MIN, 30 * MIN]))
def test_chains_and_storms_equal_the_reference_on_general_traces(case, n, window_ms):
    _check(case[0], n, window_ms, None)


def test_summarize_shows_them(tmp_path, capsys):
    from ettcore.cli import main, schemas

    trace = worked_example()
    trace["attempts"][4]["end_reason"] = "failure"
    folder = _write(trace, tmp_path / "t")
    assert main(["summarize", str(folder), "--storm-window", "15m", "--storm-by", "team", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    schemas.validate(doc)
    poison = next(j for j in doc["jobs"] if j["job_id"] == "poison")
    assert poison["retry_chain"]["outcome"] == "interrupted" and poison["retry_chain"]["restarts"] == 4
    # poison's last attempt resumed from 100 and failed too: the loop runs from attempt 1 to 4, three restarts
    assert poison["crash_loop"] == {"loops": 1, "restarts": 3, "gpu_h": pytest.approx(4.0)}
    (loop,) = doc["restarts"]["crash_loops"]
    assert (loop["job_id"], loop["first_attempt"], loop["last_attempt"]) == ("poison", 1, 4)
    assert loop["began"] == "2026-01-31T23:15:20Z"  # attempt 1's end: 22 minutes after B
    assert doc["restarts"]["retry_chains"]["retried_completed"] == 2
    assert doc["restarts"]["storms"] == [
        {
            "group": "ads",
            "first_interruption": "2026-01-31T23:03:20Z",
            "last_interruption": "2026-01-31T23:15:20Z",
            "interruptions": 6,
            "jobs": 3,
        }
    ]
    assert main(["summarize", str(folder), "--storm-window", "15m"]) == 0
    text = capsys.readouterr().out
    assert "Crash loops" in text and "Restart storms (at least 5 interruptions within 900 s fleet-wide)" in text
    for bad in (["--storm-interruptions", "1"], ["--storm-window", "soon"], ["--storm-by", "rack"]):
        assert main(["summarize", str(folder), *bad]) == 2
    assert main(["summarize", str(folder), "--storm-by", "rack"]) == 2
    assert "--storm-by" in capsys.readouterr().err


def test_summarize_of_a_store_gives_what_the_trace_gives(tmp_path, capsys):
    from ettcore.cli import main

    trace = worked_example()
    trace["attempts"][4]["end_reason"] = "failure"
    folder = _write(trace, tmp_path / "t")
    store = tmp_path / "fleet.duckdb"
    assert main(["ingest", str(store), str(folder)]) == 0
    capsys.readouterr()
    answers = []
    for where in (store, folder):
        assert main(["summarize", str(where), "--json", "--storm-window", "15m"]) == 0
        doc = json.loads(capsys.readouterr().out)
        doc.pop("input")
        answers.append(doc)
    assert answers[0]["restarts"]["crash_loops"][0]["restarts"] == 3
    assert answers[0] == answers[1]
