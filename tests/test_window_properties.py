"""Property tests of measurement windows: ``--since``/``--until``, exclusion windows and rolling trends.

Random valid traces (``tests/trace_strategies.py``, SYNTHETIC) with a random analysis window (either end open,
often on a recorded boundary, sometimes outside the trace) and zero to three exclusion windows (overlapping each
other or not, for all jobs, one job id, an unknown job id, or a label value) are measured by the SQL
(:func:`ettcore.metric.set_window` on a loaded trace) and compared with the plain-Python reference
(``tests/reference.py``, which cuts each job's pieces at the window bounds and keeps those whose midpoint is
measured) to the millisecond: every per-job figure, every L2 cell, the fleet and group rows, the calendar trend and
the rolling trend.  A second property cuts time into a random partition of windows and checks that the windows
add up to the whole (per job, per L2 cell, for the fleet and per trend bucket), with the same exclusions.

Derandomized like ``test_metric_properties``; ``ETT_PROPERTY_EXAMPLES`` scales the counts.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
import reference as ref  # tests/reference.py, the plain-Python oracle
from hypothesis import event, given
from hypothesis import strategies as st
from test_metric_properties import (
    L1_COUNTS,
    L1_SECONDS,
    SECONDS_TOL,
    Diffs,
    _gpu_h_tol,
    _group_keys,
    _ms,
    _settings,
    compare_all,
    measure,
    measure_trace,
    reference_all,
    sql_window,
    tiny_trace,
)
from trace_strategies import traces, write_trace_folder

from ettcore import metric
from ettcore.trace import load_trace

HOUR = 3_600_000


def _stamps(trace: dict) -> list[int]:
    out = [a["start"] for a in trace["attempts"]] + [a["end"] for a in trace["attempts"] if a["end"] is not None]
    return sorted(set(out + [s["start"] for s in trace["spans"]] + [s["end"] for s in trace["spans"]]))


def _instant(draw, stamps: list[int]) -> int:
    """A recorded boundary, a UTC hour mark near the trace, or any millisecond around it."""
    lo, hi = stamps[0], stamps[-1]
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.sampled_from(stamps))
    if kind == 1:
        return (draw(st.integers(lo - 2 * HOUR, hi + 2 * HOUR)) // HOUR) * HOUR
    return draw(st.integers(lo - 2 * HOUR, hi + 2 * HOUR))


@st.composite
def exclusions(draw, trace: dict, stamps: list[int]) -> list[dict]:
    """Zero to three exclusion windows (reference dicts), sometimes overlapping, each for all jobs or a filter."""
    job_ids = sorted({a["job_id"] for a in trace["attempts"]})
    labels: list[tuple[str, str]] = [("model", j) for j in job_ids]  # model defaults to the job id
    if trace["jobs"] is not None:
        labels = [("model", j["model"]) for j in trace["jobs"]] + [("team", j["team"]) for j in trace["jobs"]]
        labels += [("gpus", str(j["gpus"])) for j in trace["jobs"]]
    out = []
    for _ in range(draw(st.integers(0, 3))):
        start = _instant(draw, stamps)
        end = start + draw(st.one_of(st.integers(1, 3 * HOUR), st.sampled_from([60_000, HOUR])))
        kind = draw(st.sampled_from(["all", "all", "job", "label", "unknown"]))
        x = {
            "start": start,
            "end": end,
            "reason": draw(st.sampled_from(["maintenance", "incident", "freeze"])),
            "job": None,
            "label": None,
        }
        if kind == "job":
            x["job"] = draw(st.sampled_from(job_ids))
        elif kind == "unknown":
            x["job"] = "no-such-job"
        elif kind == "label":
            x["label"] = draw(st.sampled_from(sorted(set(labels))))
        out.append(x)
    return out


@st.composite
def traces_with_window(draw, train_counts: tuple[int, ...] | None = None):
    """A random trace (``train_counts``: as :func:`trace_strategies.job_trace`) with a random window, exclusions and
    now and then an as-of time."""
    trace = draw(traces(max_jobs=3) if train_counts is None else traces(max_jobs=3, train_counts=train_counts))
    stamps = _stamps(trace)
    since = None if draw(st.integers(0, 2)) == 0 else _instant(draw, stamps)
    until = None if draw(st.integers(0, 2)) == 0 else _instant(draw, stamps)
    if since is not None and until is not None:
        since, until = min(since, until), max(since, until)
        if until == since:
            until += draw(st.integers(1, 2 * HOUR))
    # now and then an explicit as-of too: the window clips what the as-of left
    as_of = draw(st.sampled_from(stamps[1:] or stamps)) if draw(st.integers(0, 3)) == 0 else None
    return trace, {"since": since, "until": until, "exclusions": draw(exclusions(trace, stamps)), "as_of": as_of}


@st.composite
def traces_with_partition(draw):
    trace = draw(traces(max_jobs=3))
    stamps = _stamps(trace)
    cuts = sorted({_instant(draw, stamps) for _ in range(draw(st.integers(1, 4)))})
    return trace, cuts, draw(exclusions(trace, stamps))


# --------------------------------------------------------------------------- interval results equal the reference


def compare_rolling(got, want: list[dict], d: Diffs, tol: float, tag: str) -> None:
    rows = list(got.iter_rows(named=True))
    d.check(
        [_ms(r["bucket_start"]) for r in rows] == [w["bucket_start_ms"] for w in want],
        f"{tag}: SQL buckets {[_ms(r['bucket_start']) for r in rows]} != reference "
        f"{[w['bucket_start_ms'] for w in want]}",
    )
    for g, w in zip(rows, want):
        at = f"{tag} {g['bucket_start']}"
        d.check(
            _ms(g["window_start"]) == w["window_start_ms"] and _ms(g["window_end"]) == w["window_end_ms"],
            f"{at}: window bounds",
        )
        for c in ["wall_gpu_h", "productive_gpu_h"] + [f"{c}_gpu_h" for c in ref.ALL_COMPONENTS]:
            d.num(f"{at} {c}", g[c], w[c], tol)
        d.num(f"{at} ett_pct", g["ett_pct"], w["ett_pct"], 1e-6 + 100 * tol / max(w["wall_gpu_h"], 1e-12))
        d.check(g["nof"] == w["nof"], f"{at} nof: SQL {g['nof']} != reference {w['nof']}")


@_settings(70)
@given(
    traces_with_window(),
    st.sampled_from(ref.EVERY),
    st.sampled_from([("hour", 1), ("hour", 5), ("day", 1), ("day", 2)]),
)
def test_window_equals_reference(trace_window, every, rolling):
    """Every figure over a random window with random exclusions, to the millisecond; the rolling trend too."""
    trace, window = trace_window
    event(
        f"window: since {'open' if window['since'] is None else 'set'}, until "
        f"{'open' if window['until'] is None else 'set'}"
    )
    event(f"exclusions: {len(window['exclusions'])}")
    event("with an explicit as-of" if window["as_of"] is not None else "default as-of")
    want, trend = reference_all(trace, window["as_of"], everys=(every,), window=window)
    event(f"jobs listed in the window: {len(want['jobs'])} of {len({a['job_id'] for a in trace['attempts']})}")
    unit, n = rolling
    step = ref.ROLLING_EVERY[unit]
    with tempfile.TemporaryDirectory(prefix="ett-win-") as tmp:
        as_of = None if window["as_of"] is None else window["as_of"] / 1000
        t = load_trace(write_trace_folder(trace, Path(tmp) / "t"), as_of=as_of)
        metric.set_window(t, **sql_window(window))
        sql = measure_trace(t, by=_group_keys(trace), everys=(every,))
        rolling_sql = metric.trend(t, unit, window=f"{n * step // 1000}s")
    compare_all(sql, want, trend)
    d = Diffs()
    rolling_want = ref.reference_rolling(
        trace["jobs"],
        trace["attempts"],
        trace["spans"],
        unit,
        n * step,
        window["as_of"],
        since=window["since"],
        until=window["until"],
        exclusions=window["exclusions"],
    )
    compare_rolling(rolling_sql, rolling_want, d, _gpu_h_tol(want), f"rolling {unit} x{n}")
    d.raise_if_any()


def test_a_window_changes_the_answer():
    """Guard against a vacuous harness: the reference's own window must disagree with another window's SQL."""
    trace = tiny_trace("failure")
    want, _ = reference_all(trace, window={"since": 1_769_900_100_000, "until": None})
    with tempfile.TemporaryDirectory(prefix="ett-win-") as tmp:
        sql = measure(write_trace_folder(trace, Path(tmp) / "t"), by=(), everys=(), window={"since": 1_769_900_100_001})
    try:
        compare_all(sql, want)
    except AssertionError as exc:
        assert "wall_s" in str(exc) and "productive_s" in str(exc)
    else:
        raise AssertionError("a 1 ms different window was not noticed")
    assert want["jobs"]["j"]["nof"] == 1 and want["jobs"]["j"]["wall_s"] == 500.0


# --------------------------------------------------------------------------- windows add up to the whole

ADDITIVE = [f for f in L1_SECONDS if f != "ttr_mean_s"] + list(L1_COUNTS) + [f"{c}_s" for c in ref.ALL_COMPONENTS]
FLEET_ADDITIVE = ["wall_gpu_h", "productive_gpu_h", "nof", "excluded_gpu_h"] + [
    f"{c}_gpu_h" for c in ref.ALL_COMPONENTS
]


@_settings(30)
@given(traces_with_partition(), st.sampled_from(ref.EVERY))
def test_windows_partition_the_whole(trace_cuts, every):
    """[-inf, c1), [c1, c2), ... [ck, +inf) with the same exclusions: per job, per L2 cell, fleet and trend add up."""
    trace, cuts, excl = trace_cuts
    event(f"windows: {len(cuts) + 1}")
    event(f"exclusions: {len(excl)}")
    bounds = [None, *cuts, None]
    windows = [{"since": a, "until": b, "exclusions": excl} for a, b in zip(bounds, bounds[1:])]
    with tempfile.TemporaryDirectory(prefix="ett-win-") as tmp:
        t = load_trace(write_trace_folder(trace, Path(tmp) / "t"))
        metric.set_window(t, **sql_window({"exclusions": excl}))
        whole = measure_trace(t, by=(), everys=(every,))
        parts = []
        for w in windows:
            metric.set_window(t, **sql_window(w))
            parts.append(measure_trace(t, by=(), everys=(every,)))
    # the whole (with the exclusions) is itself the reference's
    want, trend = reference_all(trace, everys=(every,), window={"exclusions": excl})
    compare_all(whole, want, trend)

    d = Diffs()
    tol = SECONDS_TOL * len(windows)
    for job_id, w in whole["jobs"].items():
        for f in ADDITIVE:
            total = sum(p["jobs"][job_id][f] for p in parts if job_id in p["jobs"])
            d.num(f"job {job_id} {f} summed over {len(windows)} windows", total, w[f], tol)
        cells: dict = defaultdict(float)
        for p in parts:
            for k, v in p["l2"].get(job_id, {}).items():
                cells[k] += v
        d.cells(f"job {job_id} L2 cell summed", dict(cells), whole["l2"].get(job_id, {}), tol)
    gtol = _gpu_h_tol(want) * len(windows)
    for f in FLEET_ADDITIVE:
        d.num(f"fleet {f} summed", sum(p["fleet"][f] or 0 for p in parts if p["fleet"]), whole["fleet"][f], gtol)
    buckets: dict = defaultdict(lambda: defaultdict(float))
    for p in parts:
        for r in p["trend"][every]:
            for f in ("wall_gpu_h", "productive_gpu_h", "nof"):
                buckets[r["bucket_start"]][f] += r[f]
    for r in whole["trend"][every]:
        for f in ("wall_gpu_h", "productive_gpu_h", "nof"):
            d.num(f"trend {every} {r['bucket_start']} {f} summed", buckets[r["bucket_start"]][f], r[f], gtol)
    d.check(
        set(buckets) == {r["bucket_start"] for r in whole["trend"][every]},
        "trend buckets of the windows differ from the whole's",
    )
    d.raise_if_any()


# --------------------------------------------------------------------------- the held traces

LIVE_JOB = Path(__file__).resolve().parent.parent / "data" / "live-job" / "trace"


def held_as_reference(t) -> dict:
    """A loaded trace's clean rows (what the loader typed and checked) as the reference's plain-Python input."""
    jobs = (
        t.sql("SELECT * EXCLUDE (_file, _row, gpus_raw) FROM clean_jobs").to_dicts() if t.labels is not None else None
    )
    attempts = t.sql(
        'SELECT job_id, attempt, start_ms AS start, end_ms AS "end", end_reason FROM clean_attempts'
    ).to_dicts()
    spans = t.sql(
        'SELECT job_id, attempt, phase, start_ms AS start, end_ms AS "end", cursor_start, cursor_end FROM clean_spans'
    ).to_dicts()
    return {"jobs": jobs or None, "attempts": attempts, "spans": spans}


def _ms_of(text: str) -> int:
    from ettcore.trace.instants import parse_instant

    return parse_instant(text, "test", "t")


HELD = {
    # the bundled sample (SYNTHETIC): hour marks through the worked example and the preempted job, exclusions for all
    # jobs, for a label and for one job, overlapping the failure at 00:50 and the running job's midnight
    "sample": (
        None,
        ["2026-01-05T00:30:00Z", "2026-01-05T01:00:00Z", "2026-01-05T04:30:00Z", "2026-01-05T23:00:00Z"],
        [
            ("2026-01-05T00:40:00Z", "2026-01-05T01:20:00Z", None, None),
            ("2026-01-05T01:00:00Z", "2026-01-05T04:00:00Z", None, ("team", "feed")),
            ("2026-01-05T22:00:00Z", "2026-01-06T01:00:00Z", "sample-running", None),
        ],
    ),
    # the live PyTorch job (measured on a CPU machine): minute marks through its restarts
    "live-job": (
        LIVE_JOB,
        ["2026-11-29T10:11:00Z", "2026-11-29T10:13:20Z", "2026-11-29T10:15:00.5Z", "2026-11-29T10:17:30Z"],
        [
            ("2026-11-29T10:13:00Z", "2026-11-29T10:14:00Z", None, None),
            ("2026-11-29T10:16:00Z", "2026-11-29T10:16:30Z", "live-optimized", None),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(HELD))
def test_held_traces_over_windows_equal_the_reference_and_add_up(name):
    from ettcore.config import SAMPLE_TRACE

    path, marks, excl = HELD[name]
    cuts = [_ms_of(m) for m in marks]
    exclusions = [
        {"start": _ms_of(a), "end": _ms_of(b), "reason": "held", "job": j, "label": lab} for a, b, j, lab in excl
    ]
    t = load_trace(path or SAMPLE_TRACE)
    trace = held_as_reference(t)
    bounds = [None, *cuts, None]
    windows = [
        {"since": a, "until": b, "exclusions": ex} for ex in ([], exclusions) for a, b in zip(bounds, bounds[1:])
    ]
    windows += [{"since": cuts[0], "until": cuts[-1], "exclusions": exclusions}, {"exclusions": exclusions}]
    by = ("model", "team") if trace["jobs"] and "team" in trace["jobs"][0] else ("model",)
    results = []
    for w in windows:
        metric.set_window(t, **sql_window(w))
        got = measure_trace(t, by=by, everys=("day",))
        want, trend = reference_all(trace, everys=("day",), window=w)
        compare_all(got, want, trend)
        results.append(got)
    # the partitions (with and without the exclusions) add up to their whole
    n = len(bounds) - 1
    d = Diffs()
    for part, whole in ((results[:n], None), (results[n : 2 * n], results[-1])):
        whole = whole if whole is not None else measure_whole(t)
        for job_id, w in whole["jobs"].items():
            for f in ADDITIVE:
                d.num(
                    f"{name} {job_id} {f}",
                    sum(p["jobs"][job_id][f] for p in part if job_id in p["jobs"]),
                    w[f],
                    SECONDS_TOL * n,
                )
    d.raise_if_any()


def measure_whole(t) -> dict:
    metric.set_window(t)
    return measure_trace(t, by=(), everys=())
