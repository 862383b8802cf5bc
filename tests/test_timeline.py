"""The timeline's per-interval attribution (``attributed_intervals.sql``) is the metric's attribution.

Its intervals tile each job's wall time [T0, T1) without overlap, and their lengths per (L1 bucket, phase) equal
the L2 matrix (``attributed_time.sql``) to the millisecond: on the bundled sample, the live job, the scenario
traces and random valid traces (SYNTHETIC, ``tests/trace_strategies.py``), with and without an as-of time.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_metric_properties import _settings
from trace_strategies import traces, write_trace_folder

from ettcore import metric
from ettcore.config import DATA_DIR, SAMPLE_TRACE
from ettcore.errors import TraceError
from ettcore.metric import intervals as timeline
from ettcore.trace import load_trace


def _check(t) -> None:
    jobs = metric.job_summary(t)["job_id"].to_list()
    tl = timeline.job_timeline(t, jobs)  # raises when the forms disagree; checked again here, independently
    l2 = metric.l2_matrix(t)
    assert timeline.mismatches(tl, l2).height == 0
    assert timeline.gaps(tl).height == 0
    # a full join: a job with wall time but no intervals (or intervals but no wall time) is a difference too; a
    # trace cut before any job has run has neither
    per_job = (
        tl.seconds(("job_id",))
        .join(metric.job_summary(t).select("job_id", "wall_s"), on="job_id", how="full", coalesce=True)
        .fill_null(0.0)
    )
    assert ((per_job["seconds"] - per_job["wall_s"]).abs() < 5e-4).all()
    by_comp = tl.seconds(("job_id", "component"))
    summary = metric.job_summary(t)
    for row in summary.iter_rows(named=True):
        got = {
            r["component"]: r["seconds"]
            for r in by_comp.filter(pl.col("job_id") == row["job_id"]).iter_rows(named=True)
        }
        want = {"effective_training": row["productive_s"], **{c: row[f"{c}_s"] for c in metric.ALL_COMPONENTS}}
        assert {k: round(v, 3) for k, v in got.items()} == {k: round(v, 3) for k, v in want.items() if v > 0}, row[
            "job_id"
        ]


@pytest.mark.parametrize("path", [SAMPLE_TRACE, DATA_DIR / "live-job" / "trace"], ids=["sample", "live-job"])
def test_bundled_traces(path: Path) -> None:
    _check(load_trace(path))


def test_sample_with_as_of() -> None:
    _check(load_trace(SAMPLE_TRACE, as_of="2026-01-05T01:10:00"))


@pytest.mark.parametrize("name, jobs", [("representative", 2), ("benchmark", 14)])
def test_scenario_traces(name: str, jobs: int) -> None:
    from ettcore.synthetic.traces import scenario_trace

    _check(load_trace(scenario_trace(name, jobs, 0)))


def test_worked_example_intervals() -> None:
    tl = timeline.job_timeline(load_trace(SAMPLE_TRACE), "worked-example")
    # spec section 7: the 5-minute queue between the attempts and the 5-minute hang are drawn, not left blank
    sched = tl.intervals.filter(pl.col("phase") == "scheduling")
    assert sched.height == 1 and sched["attempt"][0] is None and (sched["end_ms"] - sched["start_ms"])[0] == 300_000
    hang = tl.intervals.filter(pl.col("phase") == "unattributed")
    assert (hang["end_ms"] - hang["start_ms"]).sum() == 300_000
    replay = tl.intervals.filter((pl.col("phase") == "train") & (pl.col("bucket") != "productive"))
    assert set(replay["component"]) == {"wasted_training"}
    assert tl.attempts["end_reason"].to_list() == ["failure", "completed"]


def test_unknown_job_is_an_error() -> None:
    with pytest.raises(TraceError) as e:
        timeline.job_timeline(load_trace(SAMPLE_TRACE), ["worked-example", "no-such-job"])
    assert "no-such-job" in e.value.problems[0].message and e.value.problems[0].field == "job"


def test_the_comparison_can_fail() -> None:
    t = load_trace(SAMPLE_TRACE)
    tl = timeline.job_timeline(t, "worked-example")
    shifted = timeline.Timeline(
        tl.intervals.with_columns(
            pl.when(pl.col("phase") == "scheduling")
            .then(pl.col("end_ms") - 1)
            .otherwise(pl.col("end_ms"))
            .alias("end_ms")
        ),
        tl.attempts,
    )
    assert timeline.mismatches(shifted, metric.l2_matrix(t)).height == 1
    assert timeline.gaps(shifted).height == 1


@_settings(60)  # derandomized; ETT_PROPERTY_EXAMPLES scales the count (test_metric_properties)
@given(traces(), st.booleans())
def test_random_traces(trace, cut) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_trace_folder(trace, Path(tmp) / "t", fmt="parquet")
        t = load_trace(folder)
        if cut:
            lo, hi = t.sql("SELECT min(start_ms) AS lo, max(coalesce(end_ms, start_ms)) AS hi FROM clean_attempts").row(
                0
            )
            t = load_trace(folder, as_of=str((lo + (hi - lo) // 2) / 1000))
        _check(t)
