"""Crash loops (``ettcore.metric.restarts``, ``crash_loops.sql``): pinned on the worked example of docs/metric.md, and
the SQL equal to the plain-Python reference (``reference_crash_loops`` in tests/reference.py) on random traces
(SYNTHETIC): the general strategy with random causes, and one that makes attempts resume from a few points so that
loops, attempts without a train span inside and after them, preemptions and time limits between crashes are common.
Their trend (``ett trend``'s ``crash_loop_restarts`` and ``crash_loop_gpu_h``, calendar and rolling) is pinned on
the worked example and held to ``reference_crash_loop_trend`` on the same random traces.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import reference as ref  # tests/reference.py, the plain-Python oracle
from hypothesis import event, given
from hypothesis import strategies as st
from test_cause_properties import CHOICES, _write, caused_traces
from test_metric_properties import _ms, _settings
from trace_strategies import train_spans

from ettcore import metric
from ettcore.metric import restarts
from ettcore.trace import load_trace

B = 1_769_900_000_000  # 2026-01-31T22:53:20Z
MIN = 60_000


def _attempt(job: str, k: int, start: int, minutes: int, reason: str, cause: str | None = None) -> dict:
    return dict(job_id=job, attempt=k, start=start, end=start + minutes * MIN, end_reason=reason, cause=cause)


def worked_example() -> dict:
    """docs/metric.md "Crash loops": job ``poison`` (8 GPUs) trains 0 -> 100 in attempt 0 and crashes; attempts 1 and 3
    resume from 100 and crash again, attempt 2 between them crashes before training (no train span); attempt 4 resumes
    from 100 and completes.  The loop is attempts 1-3: attempt 0 made progress.  Job ``advancing`` (8 GPUs) crashes
    twice, each attempt resuming further (0, 50, then 100, completed).  Job ``preempted``
    (8 GPUs) is preempted twice at the same point: preemptions are not crashes."""
    atts, spans = [], []
    t = B
    for k, (reason, resume) in enumerate(
        [("failure", 0), ("failure", 100), ("failure", None), ("failure", 100), ("completed", 100)]
    ):
        atts.append(_attempt("poison", k, t, 10, reason, "user_error" if reason == "failure" else None))
        if resume is not None:
            spans += train_spans("poison", k, [(300, 100 if k == 0 else 30)], t + 2 * MIN, resume)
        t += 12 * MIN
    t = B
    for k, resume in enumerate([0, 50, 100]):
        atts.append(_attempt("advancing", k, t, 10, "failure" if k < 2 else "completed", None))
        spans += train_spans("advancing", k, [(300, 60)], t + 2 * MIN, resume)
        t += 12 * MIN
    t = B
    for k in range(3):
        atts.append(_attempt("preempted", k, t, 10, "preemption" if k < 2 else "completed"))
        spans += train_spans("preempted", k, [(300, 10)], t + 2 * MIN, 100)
        t += 12 * MIN
    jobs = [dict(job_id=j, model="m", gpus=8, team="ads") for j in ("poison", "advancing", "preempted")]
    return {"jobs": jobs, "attempts": atts, "spans": spans}


def _loops(trace: dict, folder: Path, as_of: int | None = None, now: bool = False) -> list[dict]:
    """The trace's crash loops (``now``: only the open ones, :func:`ettcore.metric.restarts.open_crash_loops`)."""
    t = load_trace(_write(trace, folder), as_of=None if as_of is None else as_of / 1000)
    return _rows((restarts.open_crash_loops if now else restarts.crash_loops)(t))


def _rows(frame) -> list[dict]:
    return [{**r, "began": _ms(r["began"]), "last_crash": _ms(r["last_crash"])} for r in frame.iter_rows(named=True)]


def test_the_worked_example(tmp_path):
    trace = worked_example()
    got = _loops(trace, tmp_path / "t")
    assert len(got) == 1
    loop = got[0]
    assert (loop["job_id"], loop["first_attempt"], loop["last_attempt"], loop["restarts"]) == ("poison", 1, 3, 2)
    assert loop["resume_cursor"] == 100.0
    assert loop["began"] == B + 22 * MIN  # attempt 1's end, the loop's first crash
    assert loop["last_crash"] == B + 46 * MIN  # attempt 3's end
    assert loop["gpu_h"] == pytest.approx(8 * 2 * 10 / 60)  # two restarts of 10 minutes on 8 GPUs: 2.67 GPU-hours
    want = ref.reference_crash_loops(trace["jobs"], trace["attempts"], trace["spans"])
    assert [(w["job_id"], w["first_attempt"], w["last_attempt"], w["restarts"]) for w in want] == [("poison", 1, 3, 2)]


def test_a_time_limit_between_crashes_breaks_the_loop(tmp_path):
    trace = worked_example()
    trace["attempts"][2]["cause"] = "time_limit"  # attempt 2 of poison: a failure whose cause is no crash
    assert _loops(trace, tmp_path / "t") == []  # attempts 1 to 3 are no longer all crashes


def test_an_attempt_without_a_train_span_starts_no_loop(tmp_path):
    trace = worked_example()
    # poison's attempt 1 now fails before training too: attempts 1 and 2 have no train span, attempt 0 repeats
    # nothing and attempt 3 resumes from 100, not from attempt 0's 0: no loop at all
    trace["spans"] = [s for s in trace["spans"] if not (s["job_id"] == "poison" and s["attempt"] == 1)]
    assert _loops(trace, tmp_path / "t") == []


def test_the_as_of_time_cuts_the_loop(tmp_path):
    trace = worked_example()
    # attempt 3 runs from 36 to 46 min: at 45 it is running, no crash yet, and attempt 2 belongs to no loop
    assert _loops(trace, tmp_path / "t", as_of=B + 45 * MIN) == []
    assert len(_loops(trace, tmp_path / "t2", as_of=B + 47 * MIN)) == 1


def test_a_loop_is_open_until_an_attempt_after_it_ends(tmp_path):
    """poison's loop (attempts 1-3) is open while attempt 3 is its last ended attempt: at 47 min (attempt 3 crashed
    at 46, attempt 4 not started) and at 50 min (attempt 4 running since 48); closed at 60 min, attempt 4 completed
    at 58.  advancing and preempted are in no loop at any time."""
    trace = worked_example()
    for k, as_of in enumerate((47, 50)):
        (loop,) = _loops(trace, tmp_path / f"open{k}", as_of=B + as_of * MIN, now=True)
        assert (loop["job_id"], loop["first_attempt"], loop["last_attempt"], loop["restarts"]) == ("poison", 1, 3, 2)
    assert _loops(trace, tmp_path / "closed", as_of=B + 60 * MIN, now=True) == []
    assert len(_loops(trace, tmp_path / "all", as_of=B + 60 * MIN)) == 1  # the loop itself stays


@st.composite
def looping_traces(draw):
    """1-3 jobs of 2-7 attempts; each attempt resumes from 0, 100 or 200 (or has no train span), and ends by
    failure, preemption or cancel (its last also completed or running), an interruption with a random cause."""
    jobs, attempts, spans = [], [], []
    for j in range(draw(st.integers(1, 3))):
        job = f"job-{j}"
        t = B + draw(st.integers(0, 60)) * MIN
        n = draw(st.integers(2, 7))
        for k in range(n):
            last = k == n - 1
            reasons = (
                ("failure", "completed", "running", "preemption")
                if last
                else ("failure",) * 3
                + (
                    "preemption",
                    "cancelled",
                )
            )
            reason = draw(st.sampled_from(reasons))
            point = draw(st.sampled_from([0, 100, 100, 200, None]))
            start = t
            if point is not None:
                pieces = [
                    (60 * draw(st.integers(1, 5)), draw(st.sampled_from([0, 30])))
                    for _ in range(draw(st.integers(1, 2)))
                ]
                spans += train_spans(job, k, pieces, t + MIN, point)
                t = spans[-1]["end"]
            t += MIN
            cause = draw(st.sampled_from(CHOICES)) if reason in ref.INTERRUPTIONS else None
            attempts.append(
                dict(
                    job_id=job,
                    attempt=k,
                    start=start,
                    end=None if reason == "running" else t,
                    end_reason=reason,
                    cause=cause,
                )
            )
            t += draw(st.integers(0, 3)) * MIN
        jobs.append(
            dict(
                job_id=job,
                model="m",
                gpus=draw(st.sampled_from([1, 8, 512])),
                team=draw(st.sampled_from(["ads", "feed"])),
            )
        )
    return {"jobs": jobs, "attempts": attempts, "spans": spans}


def _check(trace: dict) -> None:
    want = ref.reference_crash_loops(trace["jobs"], trace["attempts"], trace["spans"])
    want_open = ref.reference_open_crash_loops(trace["jobs"], trace["attempts"], trace["spans"])
    event(f"{min(len(want), 3)} loop(s), {min(len(want_open), 2)} open")
    with tempfile.TemporaryDirectory(prefix="ett-loops-") as tmp:
        t = load_trace(_write(trace, Path(tmp) / "t"))
        got, got_open = _rows(restarts.crash_loops(t)), _rows(restarts.open_crash_loops(t))
    keys = ("job_id", "first_attempt", "last_attempt", "restarts", "resume_cursor", "began", "last_crash")
    for g_rows, w_rows in ((got, want), (got_open, want_open)):
        assert [tuple(g[k] for k in keys) for g in g_rows] == [tuple(w[k] for k in keys) for w in w_rows]
        assert [g["gpu_h"] for g in g_rows] == pytest.approx([w["gpu_h"] for w in w_rows], abs=1e-9)


@_settings(60)
@given(looping_traces())
def test_crash_loops_equal_the_reference(trace):
    _check(trace)


@_settings(40)
@given(caused_traces())
def test_crash_loops_equal_the_reference_on_general_traces(case):
    _check(case[0])


def test_the_export_writes_the_open_loop_and_the_fleets_loops(tmp_path):
    """``ett export prometheus`` on the worked example (hand-derived from docs/metric.md): at 50 minutes poison is in
    its loop (2 restarts) and advancing in none; its two restarts held 8 GPUs x 20 minutes = 9600 GPU-seconds; at 60
    minutes attempt 4 completed: the loop is closed (0), the fleet's loops stay."""
    from ettcore import cli

    folder = str(_write(worked_example(), tmp_path / "t"))
    for as_of, now in ((50, 2), (60, 0)):
        out = tmp_path / f"at{as_of}.prom"
        args = ["export", "prometheus", folder, "--as-of", str((B + as_of * MIN) / 1000), "--out", str(out)]
        assert cli.main(args) == 0
        lines = set(out.read_text().splitlines())
        assert f'ett_job_crash_loop_restarts{{job_id="poison",model="m"}} {now}' in lines
        assert 'ett_job_crash_loop_restarts{job_id="advancing",model="m"} 0' in lines
        assert "ett_fleet_crash_loop_restarts_total 2" in lines
        assert "ett_fleet_crash_loop_gpu_seconds_total 9600" in lines
        assert 'ett_model_crash_loop_gpu_seconds{model="m"} 9600' in lines
    window = tmp_path / "window.prom"  # loops are not windowed: an export of a window writes none
    assert cli.main(["export", "prometheus", folder, "--since", str(B / 1000 + 60), "--out", str(window)]) == 0
    assert "crash_loop" not in window.read_text()


# ----------------------------------------------------------------------------- in a trend

HOUR = 3_600_000
# (every, --window, the buckets' length and the trailing window in ms; None: calendar buckets)
TRENDS = (
    ("day", None, None, None),
    ("week", None, None, None),
    ("month", None, None, None),
    ("hour", None, HOUR, HOUR),
    ("15m", "1h", HOUR // 4, HOUR),
    ("hour", "3h", HOUR, 3 * HOUR),
)


def _trend(t, every: str, window: str | None) -> dict:
    """bucket (a date, or the bucket's start in ms) -> (crash_loop_restarts, crash_loop_gpu_h), every bucket shown."""
    frame = restarts.trend(t, metric.trend(t, every, window), every, window)
    return {
        (r["bucket_start"] if every in ("day", "week", "month") and window is None else _ms(r["bucket_start"])): (
            r["crash_loop_restarts"],
            r["crash_loop_gpu_h"],
        )
        for r in frame.iter_rows(named=True)
    }


def test_the_worked_example_in_a_trend(tmp_path):
    """poison's two restarts start at 23:17:20 and 23:29:20 on 2026-01-31 (24 and 36 minutes after B) and held 8 GPUs
    x 20 minutes: 2 restarts and 2.67 GPU-hours in that day, that month and the 23:00 hour.  In a trend of 5-minute
    buckets rolling over an hour (a bucket's window ends with it), the 23:10 bucket's window [22:15, 23:15) holds
    neither, the 23:15 bucket's one (23:17:20), the 23:25 bucket's both, and so on to the trend's last bucket, 23:50
    (attempt 4 completes at 23:51:20)."""
    from datetime import date

    t = load_trace(_write(worked_example(), tmp_path / "t"))
    gpu_h = 8 * 20 / 60
    day = _trend(t, "day", None)
    assert day[date(2026, 1, 31)] == (2, pytest.approx(gpu_h)) and sum(n for n, _ in day.values()) == 2
    assert _trend(t, "month", None)[date(2026, 1, 1)] == (2, pytest.approx(gpu_h))
    hour = _trend(t, "hour", None)
    h23 = B - B % HOUR + HOUR  # 2026-01-31T23:00Z
    assert hour[h23] == (2, pytest.approx(gpu_h)) and sum(n for n, _ in hour.values()) == 2
    rolling = _trend(t, "5m", "1h")
    m5 = HOUR // 12
    want = {h23 + 2 * m5: 0, h23 + 3 * m5: 1, h23 + 4 * m5: 1, h23 + 5 * m5: 2, h23 + 10 * m5: 2}
    assert {b: rolling[b][0] for b in want} == want and max(rolling) == h23 + 10 * m5
    assert rolling[h23 + 5 * m5][1] == pytest.approx(gpu_h) and rolling[h23 + 3 * m5][1] == pytest.approx(gpu_h / 2)


def _check_trend(trace: dict) -> None:
    loops = ref.reference_crash_loops(trace["jobs"], trace["attempts"], trace["spans"])
    event(f"{min(sum(w['restarts'] for w in loops), 4)} restart(s)")
    with tempfile.TemporaryDirectory(prefix="ett-loop-trend-") as tmp:
        t = load_trace(_write(trace, Path(tmp) / "t"))
        for every, window, every_ms, window_ms in TRENDS:
            got = _trend(t, every, window)
            if every_ms is None:
                want = ref.reference_crash_loop_trend(loops, every)
                starts = set(want)
            else:
                want = ref.reference_crash_loop_trend(loops, every_ms=every_ms, window_ms=window_ms)
                starts = {s - s % every_ms for w in loops for s, _ in w["restarted"]}
            assert starts <= set(got), (every, window)  # each restart's own bucket is shown
            shown = {b: v for b, v in want.items() if b in got}  # a rolling trend ends with its last bucket
            assert {b: n for b, (n, _) in got.items() if n} == {b: n for b, (n, _) in shown.items()}, (every, window)
            for b, (_, gpu_h) in shown.items():
                assert got[b][1] == pytest.approx(gpu_h, abs=1e-9), (every, window, b)


@_settings(25)
@given(looping_traces())
def test_the_crash_loop_trend_equals_the_reference(trace):
    _check_trend(trace)
