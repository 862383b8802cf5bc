"""Live hang detection: jobs running at the analysis time that are hung, slow or advancing.

A hand-written trace (SYNTHETIC) with values derived by hand in the comments pins the definitions; the SQL
(``ettcore.metric.hangs``) is compared with the plain-Python reference (:func:`reference.reference_live`)
on random traces (SYNTHETIC) with random as-of times and thresholds.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import reference as ref  # tests/reference.py, the plain-Python oracle
from hypothesis import event, given
from hypothesis import strategies as st
from test_metric_properties import _ms, _settings
from test_prometheus import needs_promtool, promtool_check, series, value
from test_window_properties import _stamps
from trace_strategies import traces, write_trace_folder
from trace_strategies import train_spans as _train

from ettcore.cli import main
from ettcore.errors import InputError
from ettcore.metric import hangs
from ettcore.trace import load_trace

B = 1_769_900_000_000  # 2026-01-31T22:53:20Z
S = 1000


def _live_trace() -> dict:
    """Five jobs, analysed at B + 270 s:

    - ``hung``: five spans of 10 s advancing 10 steps (1 s a step) from B, then nothing: last advance B + 50 s, age
      220 s; median step 1 s, threshold max(60, 10 x 1) = 60 s: hung; recent step 50 s / 50 = 1 s.
    - ``slow``: six spans of 10 s / 10 steps, then five of 40 s / 10 steps (4 s a step) to B + 260 s: the median of
      the eleven rates (six of 1/s, five of 0.25/s) is 1/s, so the median step is 1 s and the threshold 60 s; age
      10 s: not hung; recent step (last five) 200 s / 50 = 4 s > 3 x 1 s: slow.
    - ``steady``: 26 spans of 10 s / 10 steps to B + 260 s: age 10 s, recent 1 s: advancing.
    - ``done``: completed at B + 100 s: not running, not listed.
    - ``restarted``: attempt 0 trained (1 s a step) and failed at B + 100 s; attempt 1 from B + 150 s is in
      trainer_init: no advance in the current attempt: starting, age 270 - 150 = 120 s.
    """
    running = [dict(job_id=j, attempt=0, start=B, end=None, end_reason="running") for j in ("hung", "slow", "steady")]
    attempts = running + [
        dict(job_id="done", attempt=0, start=B, end=B + 100 * S, end_reason="completed"),
        dict(job_id="restarted", attempt=0, start=B, end=B + 100 * S, end_reason="failure"),
        dict(job_id="restarted", attempt=1, start=B + 150 * S, end=None, end_reason="running"),
    ]
    spans = (
        _train("hung", 0, [(10, 10)] * 5, B)
        + _train("slow", 0, [(10, 10)] * 6 + [(40, 10)] * 5, B)
        + _train("steady", 0, [(10, 10)] * 26, B)
        + _train("done", 0, [(10, 10)] * 10, B)
        + _train("restarted", 0, [(10, 10)] * 10, B)
        + [
            dict(
                job_id="restarted",
                attempt=1,
                phase="trainer_init",
                start=B + 150 * S,
                end=B + 270 * S,
                cursor_start=None,
                cursor_end=None,
                stage=None,
            )
        ]
    )
    return {"jobs": None, "attempts": attempts, "spans": spans}


AS_OF = (B + 270 * S) / 1000


@pytest.fixture
def live(tmp_path):
    return write_trace_folder(_live_trace(), tmp_path / "t")


def _by_job(trace, **kw):
    return {r["job_id"]: r for r in hangs.live_progress(trace, **kw).iter_rows(named=True)}


def test_states_by_hand(live):
    got = _by_job(load_trace(live, as_of=AS_OF))
    assert sorted(got) == ["hung", "restarted", "slow", "steady"]  # "done" is not running
    assert {j: r["state"] for j, r in got.items()} == {
        "hung": "hung",
        "slow": "slow",
        "steady": "advancing",
        "restarted": "starting",
    }
    h = got["hung"]
    assert h["progress_age_s"] == 220.0 and h["stall_threshold_s"] == 60.0
    assert h["median_step_s"] == pytest.approx(1.0) and h["recent_step_s"] == pytest.approx(1.0)
    assert _ms(h["last_advance"]) == B + 50 * S and h["cursor"] == 50
    s = got["slow"]
    assert s["progress_age_s"] == 10.0 and s["median_step_s"] == pytest.approx(1.0)
    assert s["recent_step_s"] == pytest.approx(4.0) and s["stall_threshold_s"] == 60.0
    assert got["steady"]["recent_step_s"] == pytest.approx(1.0)
    r = got["restarted"]
    assert r["attempt"] == 1 and r["progress_age_s"] == 120.0 and r["last_advance"] is None


def test_thresholds_overridden(live):
    t = load_trace(live, as_of=AS_OF)
    # --stall-after 5: the slow and the steady job (age 10 s) are hung too
    got = _by_job(t, stall_after=5)
    assert [got[j]["state"] for j in ("hung", "slow", "steady")] == ["hung", "hung", "hung"]
    # the job's own 300 s beats --stall-after 5 and the default: 220 s is not hung; recent 1 s: advancing
    got = _by_job(t, stall_after=5, job_stall_after={"hung": 300.0})
    assert got["hung"]["state"] == "advancing" and got["hung"]["stall_threshold_s"] == 300.0
    # earlier, at B + 100 s, the hung job had stood still 50 s: under its 60 s threshold
    early = _by_job(load_trace(live, as_of=(B + 100 * S) / 1000))
    assert early["hung"]["state"] == "advancing" and early["hung"]["progress_age_s"] == 50.0
    # at B + 111 s: 61 s > 60 s
    assert _by_job(load_trace(live, as_of=(B + 111 * S) / 1000))["hung"]["state"] == "hung"


def test_job_threshold_file(tmp_path):
    good = tmp_path / "t.csv"
    good.write_text("job_id,stall_after_s\nhung,300\nslow,90.5\n")
    assert hangs.read_job_thresholds(good) == {"hung": 300.0, "slow": 90.5}
    (tmp_path / "t.json").write_text('{"a": 12}')
    assert hangs.read_job_thresholds(tmp_path / "t.json") == {"a": 12.0}
    for text, row, fld in [
        ("job_id,stall_after_s\nhung,-1\n", 2, "stall_after_s"),
        ("job_id,stall_after_s\nhung,10\nx,\n", 3, "stall_after_s"),
        ("job_id,stall_after_s\nhung,10\nhung,20\n", 3, "job_id"),
    ]:
        good.write_text(text)
        with pytest.raises(InputError) as info:
            hangs.read_job_thresholds(good)
        p = info.value.problems[0]
        assert (p.file, p.row, p.field) == (str(good), row, fld)


def test_rank_extremes_by_hand():
    ranks = [
        dict(job_id="j", rank=0, node="n0", step=101, cursor=101, t=1000.0),
        dict(job_id="j", rank=1, node="n1", step=100, cursor=100, t=990.0),  # stopped first: smallest step
        dict(job_id="j", rank=2, node="n1", step=101, cursor=101, t=1001.0),  # advanced last
        dict(job_id="j", rank=3, node="n2", step=5, cursor=5, t=10.0),  # of an earlier attempt: before its start
        dict(job_id="k", rank=0, node="m", step=1, cursor=1, t=995.0),
    ]
    first, last = hangs.rank_extremes(ranks, "j", since_s=500.0)
    assert (first["rank"], first["node"]) == (1, "n1")
    assert (last["rank"], last["node"]) == (2, "n1")
    assert hangs.rank_extremes(ranks, "x", since_s=0) == (None, None)


def test_live_command(live, capsys):
    assert main(["stalls", str(live), "--live", "--as-of", str(AS_OF), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["synthetic"] is True and doc["as_of"] == "2026-01-31T22:57:50Z"
    states = {j["job_id"]: j["state"] for j in doc["jobs"]}
    assert states == {"hung": "hung", "slow": "slow", "steady": "advancing", "restarted": "starting"}
    assert [j["job_id"] for j in doc["hung"]] == ["hung"] and [j["job_id"] for j in doc["slow"]] == ["slow"]
    assert main(["stalls", str(live), "--live", "--as-of", str(AS_OF)]) == 0
    out = capsys.readouterr().out
    assert "1 hung" in out and "1 slow" in out and "hung" in out.split("slow")[0]
    assert main(["stalls", str(live), "--live", "--as-of", str(AS_OF), "--stall-after", "0"]) == 2


@st.composite
def traces_with_as_of(draw):
    """A random trace and an as-of time: none (the trace's latest instant), or the end of one of its train spans (any
    instant without one) plus 0 to 20 min, so that running attempts with recent train spans are common."""
    trace = draw(traces(max_jobs=3))
    if draw(st.integers(0, 4)) == 0:
        return trace, None
    ends = sorted({x["end"] for x in trace["spans"] if x["phase"] == "train"}) or _stamps(trace)
    return trace, draw(st.sampled_from(ends)) + draw(st.sampled_from([0, 1, 30_000, 61_000, 1_200_000]))


@_settings(80)
@given(traces_with_as_of(), st.sampled_from([None, 1.0, 30.0, 600.0]), st.sampled_from([1.5, 3.0]), st.integers(1, 4))
def test_live_equals_reference(trace_as_of, stall_after, slow_factor, recent_spans):
    trace, as_of = trace_as_of
    want = ref.reference_live(
        trace["jobs"],
        trace["attempts"],
        trace["spans"],
        as_of,
        stall_after=stall_after,
        slow_factor=slow_factor,
        recent_spans=recent_spans,
    )
    event(f"states in the reference: {sorted({w['state'] for w in want.values()})}")
    with tempfile.TemporaryDirectory(prefix="ett-live-") as tmp:
        t = load_trace(write_trace_folder(trace, Path(tmp) / "t"), as_of=None if as_of is None else as_of / 1000)
        got = {
            r["job_id"]: r
            for r in hangs.live_progress(t, stall_after, slow_factor=slow_factor, recent_spans=recent_spans).iter_rows(
                named=True
            )
        }
    assert sorted(got) == sorted(want)
    for job_id, w in want.items():
        g = got[job_id]
        assert g["state"] == w["state"], (job_id, g, w)
        assert g["attempt"] == w["attempt"]
        assert (None if g["last_advance"] is None else _ms(g["last_advance"])) == w["last_advance"]
        assert g["progress_age_s"] == pytest.approx(w["age"], abs=1e-9)
        assert g["stall_threshold_s"] == pytest.approx(w["threshold"], rel=1e-12)
        for k, wk in (("median_step_s", "median_step"), ("recent_step_s", "recent_step"), ("cursor", "cursor")):
            assert (g[k] is None) == (w[wk] is None), (job_id, k)
            if w[wk] is not None:
                assert g[k] == pytest.approx(w[wk], rel=1e-9)


HOSTILE = 'a"b\\c\nd} x{y="z"'


@needs_promtool
def test_export_gauges_pass_promtool(tmp_path):
    """The four live families on the hand-written trace, with a hostile job id and node name: promtool accepts them,
    and they parse back to the hand-derived values (hung 1 with rank 1 and its node, slow 1, ages, thresholds)."""
    trace = _live_trace()
    for row in trace["attempts"] + trace["spans"]:
        if row["job_id"] == "hung":
            row["job_id"] = HOSTILE
    folder = write_trace_folder(trace, tmp_path / "t")
    ranks = [
        dict(job_id=HOSTILE, attempt=0, rank=0, node="good-node", step=50, cursor=50, t=(B + 50 * S) / 1000),
        dict(job_id=HOSTILE, attempt=0, rank=1, node='bad"node\n', step=49, cursor=49, t=(B + 49 * S) / 1000),
    ]
    (folder / "trace.json").write_text(json.dumps({"synthetic": True, "rank_progress": ranks}))
    out = tmp_path / "ett.prom"
    assert main(["export", "prometheus", str(folder), "--as-of", str(AS_OF), "--out", str(out)]) == 0
    text = out.read_bytes().decode("utf-8")
    checked = promtool_check(text)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    got = series(text)
    hung_labels = dict(job_id=HOSTILE, model=HOSTILE, first_stopped_rank="1", first_stopped_node='bad"node\n')
    assert value(got, "ett_job_hung", **hung_labels) == 1
    assert value(got, "ett_job_hung", job_id="slow", model="slow", first_stopped_rank="", first_stopped_node="") == 0
    assert value(got, "ett_job_slow", job_id="slow", model="slow") == 1
    assert value(got, "ett_job_slow", job_id=HOSTILE, model=HOSTILE) == 0
    assert value(got, "ett_job_progress_age_seconds", job_id=HOSTILE, model=HOSTILE) == 220.0
    assert value(got, "ett_job_progress_age_seconds", job_id="restarted", model="restarted") == 120.0
    assert value(got, "ett_job_stall_threshold_seconds", job_id="steady", model="steady") == 60.0
    assert not any(k[0] == "ett_job_hung" and dict(k[1])["job_id"] == "done" for k in got)  # not running: no series
    # --stall-after reaches the export: the steady job (10 s without advance) is hung at 5 s
    assert (
        main(["export", "prometheus", str(folder), "--as-of", str(AS_OF), "--stall-after", "5", "--out", str(out)]) == 0
    )
    got = series(out.read_bytes().decode("utf-8"))
    steady = dict(job_id="steady", model="steady", first_stopped_rank="", first_stopped_node="")
    assert value(got, "ett_job_hung", **steady) == 1
    assert value(got, "ett_job_stall_threshold_seconds", job_id="steady", model="steady") == 5.0


def _run_folder(tmp_path) -> Path:
    """A recorder run folder (SYNTHETIC times): job ``rf`` steps 1 s a step from T0 = 1769900000 to T0 + 30 s, one
    ``progress`` record a second, then stands still, its attempt open; rank 0 (``node-a``) and rank 1 (``node-b``)
    kept their progress: rank 1's last step 29 at T0 + 29 s, rank 0's step 30 at T0 + 30 s."""
    from ettcore.integrations.rank_progress import RankProgress
    from ettcore.integrations.recorder import Recorder

    t0 = 1_769_900_000.0
    clock = iter([t0 + i for i in range(1, 40)])
    now = {"t": t0}

    def tick():
        now["t"] = next(clock)
        return now["t"]

    run = tmp_path / "run"
    rec = Recorder(run, "rf", 0, clock=lambda: now["t"])
    rec.job(model="m", gpus=2)
    rec.attempt_start(t=t0)
    span = rec.train_span(cursor=0).__enter__()
    tick()
    for step in range(1, 31):
        span.advance(step)
        tick()
    rec._fd and __import__("os").close(rec._fd)  # the process hangs: nothing more is written, the attempt stays open
    for rank, node, step in ((0, "node-a", 30), (1, "node-b", 29)):
        p = RankProgress(run, "rf", 0, rank, node=node, interval_s=3600)
        p.step(step, t=t0 + step)
        p.steps = step
        p.close()
    return run


def test_live_run_folder(tmp_path, capsys):
    """Analysed at T0 + 100 s: last advance at T0 + 30 s (the last progress record), age 70 s; pace 1 step a second,
    so the threshold is max(60, 10) = 60 s: hung; rank 1 on node-b stopped first, rank 0 on node-a advanced last."""
    run = _run_folder(tmp_path)
    assert main(["stalls", str(run), "--live", "--as-of", "1769900100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (job,) = doc["jobs"]
    assert doc["input"]["path"] == str(run) and doc["input"]["kind"] == "run folder"
    assert job["state"] == "hung" and job["progress_age_s"] == 70.0 and job["stall_threshold_s"] == 60.0
    assert job["median_step_s"] == pytest.approx(1.0) and job["cursor"] == 30
    assert (job["first_stopped_rank"], job["first_stopped_node"], job["first_stopped_step"]) == (1, "node-b", 29)
    assert (job["last_advanced_rank"], job["last_advanced_node"], job["last_advanced_step"]) == (0, "node-a", 30)
    assert job["ranks"] == 2
    # at T0 + 80 s it had stood still 50 s: not yet hung
    assert main(["stalls", str(run), "--live", "--as-of", "1769900080", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"][0]["state"] == "advancing"
    assert main(["stalls", str(run), "--live", "--as-of", "1769900100"]) == 0
    out = capsys.readouterr().out
    assert "rf: rank 1 on node-b stopped first (step 29); rank 0 on node-a advanced last (step 30)" in out
    # the export of the run folder carries the gauge with the rank and node
    assert main(["export", "prometheus", str(run), "--as-of", "1769900100"]) == 0
    text = capsys.readouterr().out
    assert 'ett_job_hung{job_id="rf",model="m",first_stopped_rank="1",first_stopped_node="node-b"} 1' in text
    assert 'ett_trace_info{trace="' + str(run) + '",synthetic="false"} 1' in text


def test_bad_rank_file(tmp_path, capsys):
    """A rank progress file that is not one: exit 2, one line naming the file and the field."""
    run = _run_folder(tmp_path)
    bad = run / "progress" / "rf-rank-00001.json"
    bad.write_text('{"job_id": "rf", "attempt": 0, "rank": "one"}')
    capsys.readouterr()
    assert main(["stalls", str(run), "--live"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ett: {bad}, field 'rank': expected int, got 'one'"]


def test_recorder_keeps_rank_progress(tmp_path):
    """A plain Recorder with keep_rank_progress: after three advances (cursor 8, 16, 24 at T0 + 1, 2, 3 s) and
    close, the rank's file holds step 3, cursor 24, t = T0 + 3 s, its rank and node."""
    from ettcore.integrations.recorder import Recorder

    now = {"t": 1_769_900_000.0}
    rec = Recorder(tmp_path / "run", "pr", 0, clock=lambda: now["t"])
    rec.keep_rank_progress(rank=3, node="node-x")
    with rec.train_span(cursor=0) as span:
        for i in (1, 2, 3):
            now["t"] += 1
            span.advance(8 * i)
    rec.close()
    doc = json.loads((tmp_path / "run" / "progress" / "pr-rank-00003.json").read_text())
    assert doc == {
        "job_id": "pr",
        "attempt": 0,
        "rank": 3,
        "node": "node-x",
        "step": 3,
        "cursor": 24,
        "t": 1_769_900_003.0,
    }
