"""NoF and lost time by interruption cause: the SQL (job_cause_time.sql, group_cause_time.sql, built on
attributed_segments.sql) equals the plain-Python reference (tests/reference.py, piece_causes) on random traces
whose interruptions carry random causes (or none: derived from the end reason), with and without a window."""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
import reference as ref  # tests/reference.py, the plain-Python oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trace_strategies import traces, write_trace_folder

from ettcore import metric
from ettcore.trace import load_trace

CHOICES = (None, *ref.CAUSES)


@st.composite
def caused_traces(draw):
    trace = draw(traces(max_jobs=3))
    for a in trace["attempts"]:
        if a["end_reason"] in ref.INTERRUPTIONS:
            a["cause"] = draw(st.sampled_from(CHOICES))
    window = None
    if draw(st.booleans()):
        t0 = min(a["start"] for a in trace["attempts"])
        since = t0 + draw(st.integers(0, 120)) * 60_000
        window = {"since": since, "until": since + draw(st.integers(1, 240)) * 60_000}
    return trace, window


def _write(trace: dict, folder: Path) -> Path:
    out = write_trace_folder(trace, folder)
    causes = pl.DataFrame(
        [(a["job_id"], a["attempt"], a.get("cause")) for a in trace["attempts"]],
        schema={"job_id": pl.Utf8, "attempt": pl.Int64, "cause": pl.Utf8},
        orient="row",
    )
    attempts = pl.read_parquet(out / "attempts.parquet").join(causes, on=["job_id", "attempt"], how="left")
    attempts.write_parquet(out / "attempts.parquet")
    return out


@settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(caused_traces())
def test_nof_and_lost_time_by_cause_equal_the_reference(case):
    trace, window = case
    kw = {} if window is None else {"since": window["since"], "until": window["until"]}
    want = ref.reference_metrics(trace["jobs"], trace["attempts"], trace["spans"], **kw)["jobs"]
    with tempfile.TemporaryDirectory(prefix="ett-cause-") as tmp:
        t = load_trace(_write(trace, Path(tmp) / "t"))
        if window is not None:
            metric.set_window(t, since=window["since"] / 1000, until=window["until"] / 1000)
        jobs = {r["job_id"]: r for r in metric.job_summary(t).iter_rows(named=True)}
        got: dict = {}
        for r in metric.job_causes(t).iter_rows(named=True):
            got[(r["job_id"], r["cause"])] = (r["nof"], r["lost_s"])
        fleet = {r["cause"]: r for r in metric.cause_summary(t).iter_rows(named=True)}
    assert set(jobs) == set(want)
    for job_id, w in want.items():
        assert jobs[job_id]["cancelled"] == w["cancelled"], job_id
        for c in ref.CAUSES:
            n, lost = got.get((job_id, c), (0, 0.0))
            assert n == w["nof_by_cause"][c], (job_id, c)
            assert abs(lost - w["lost_s_by_cause"][c]) < 1e-6, (job_id, c, lost, w["lost_s_by_cause"][c])
        # the causes split NoF and the recovery time exactly
        assert sum(w["nof_by_cause"].values()) == w["nof"]
        assert abs(sum(w["lost_s_by_cause"].values()) - w["ttr_total_s"]) < 1e-6
    for c in ref.CAUSES:
        w_nof = sum(w["nof_by_cause"][c] for w in want.values())
        w_gpu_h = sum(w["gpus"] * w["lost_s_by_cause"][c] for w in want.values()) / 3600
        row = fleet.get(c, {"nof": 0, "lost_gpu_h": 0.0})
        assert row["nof"] == w_nof and abs(row["lost_gpu_h"] - w_gpu_h) < 1e-9, c


def test_the_comparison_can_fail():
    """A cause changed after the reference ran: the per-cause figures disagree."""
    trace = {
        "jobs": None,
        "attempts": [
            {
                "job_id": "j",
                "attempt": 0,
                "start": 1_767_225_600_000,
                "end": 1_767_225_700_000,
                "end_reason": "failure",
                "cause": "hardware",
            },
            {
                "job_id": "j",
                "attempt": 1,
                "start": 1_767_225_710_000,
                "end": 1_767_225_800_000,
                "end_reason": "completed",
            },
        ],
        "spans": [
            {
                "job_id": "j",
                "attempt": 0,
                "phase": "train",
                "start": 1_767_225_610_000,
                "end": 1_767_225_690_000,
                "cursor_start": 0.0,
                "cursor_end": 80.0,
                "stage": None,
            },
            {
                "job_id": "j",
                "attempt": 1,
                "phase": "train",
                "start": 1_767_225_720_000,
                "end": 1_767_225_790_000,
                "cursor_start": 50.0,
                "cursor_end": 120.0,
                "stage": None,
            },
        ],
    }
    want = ref.reference_metrics(None, trace["attempts"], trace["spans"])["jobs"]["j"]
    # by hand: recovery from the last productive instant (690 s) to the next (720 + 30 = 750 s): 60 s, all hardware
    assert want["lost_s_by_cause"]["hardware"] == 60.0 and want["nof_by_cause"]["hardware"] == 1
    trace["attempts"][0]["cause"] = "user_error"
    with tempfile.TemporaryDirectory(prefix="ett-cause-") as tmp:
        t = load_trace(_write(trace, Path(tmp) / "t"))
        got = {r["cause"]: r["lost_s"] for r in metric.job_causes(t).iter_rows(named=True)}
    assert got == {"user_error": 60.0}
    assert got.get("hardware", 0.0) != want["lost_s_by_cause"]["hardware"]
