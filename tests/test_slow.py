"""Slow time: training time lost to train spans slower than the job's own ideal pace (docs/metric.md, "Slow time").

Pinned on a hand-made job (SYNTHETIC) with a slow warm-up, two slow spans and one within the tolerance, and compared
with the plain-Python reference (:func:`reference.reference_slow`) on random traces with random windows, exclusions,
as-of times and tolerances.  The metric's own figures must not change with the tolerance.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path

import polars as pl
import pytest
import reference as ref  # tests/reference.py, the plain-Python oracle
from conftest import assert_same_answer  # tests/conftest.py
from hypothesis import event, given
from hypothesis import strategies as st
from test_metric_properties import _ms, _settings, sql_window
from test_window_properties import traces_with_window
from trace_strategies import train_spans, write_trace_folder

from ettcore import cli, metric
from ettcore.errors import TraceError
from ettcore.importers.recorder import RANK_TIMING_DIR, rank_timing_name, read_rank_timing
from ettcore.metric import slow
from ettcore.trace import load_trace

B = 1_769_900_000_000  # 2026-01-31T22:53:20Z


def _slow_trace() -> dict:
    """One job, one attempt: a 10 s warm-up span advancing 10 units, eight spans of 10 s advancing 100, two of 30 s
    advancing 100 (each 20 s over the ideal 10 s) and one of 11 s advancing 100 (10 % over: jitter)."""
    pieces = [(10, 10)] + [(10, 100)] * 8 + [(30, 100), (30, 100), (11, 100)]
    spans = train_spans("j", 0, pieces, B)
    return {
        "jobs": [dict(job_id="j", model="m", gpus=8)],
        "attempts": [dict(job_id="j", attempt=0, start=B, end=spans[-1]["end"], end_reason="completed")],
        "spans": spans,
    }


def test_two_slow_spans_are_forty_slow_seconds(tmp_path):
    t = load_trace(write_trace_folder(_slow_trace(), tmp_path / "t"))
    per_job = slow.job_slow(t).row(0, named=True)
    assert per_job["ideal_pace_per_s"] == pytest.approx(10.0)  # 10th percentile of 0.1 s a unit
    assert per_job["slow_spans"] == 2
    assert per_job["slow_s"] == pytest.approx(40.0)
    assert per_job["slow_gpu_h"] == pytest.approx(8 * 40 / 3600)
    assert per_job["ett_pct"] == pytest.approx(100.0)
    assert per_job["ett_ideal_pct"] == pytest.approx(100 * 121 / 161)
    listed = slow.train_slow(t)
    assert [_ms(v) for v in listed["start"]] == [B + 90_000, B + 120_000]
    assert listed["slow_s"].to_list() == pytest.approx([20.0, 20.0])
    # the tolerance decides what is jitter: 30 s is 3x the ideal
    assert slow.job_slow(t, tolerance=2.1)["slow_spans"][0] == 0
    assert slow.job_slow(t, tolerance=1.9)["slow_spans"][0] == 2
    assert slow.job_slow(t, tolerance=0.05)["slow_s"][0] == pytest.approx(41.0)  # the 11 s span too
    (fleet,) = slow.group_slow(t).iter_rows(named=True)
    assert fleet["jobs"] == 1 and fleet["slow_gpu_h"] == pytest.approx(8 * 40 / 3600)
    assert fleet["ett_ideal_pct"] == pytest.approx(100 * 121 / 161)
    # slow time changes no figure of the metric
    assert metric.job_summary(t)["productive_s"][0] == 161.0


def _two_jobs_trace() -> dict:
    """The worked example's job j (model m, 8 GPUs, 40 slow seconds in spans starting at 22:54:50 and 22:55:20) beside
    a 4-GPU job k of model n that ran at one pace from 22:53:20 for 70 s, none of it slow (SYNTHETIC)."""
    trace = _slow_trace()
    k = train_spans("k", 0, [(10, 10)] + [(10, 100)] * 6, B)
    trace["jobs"].append(dict(job_id="k", model="n", gpus=4))
    trace["attempts"].append(dict(job_id="k", attempt=0, start=B, end=k[-1]["end"], end_reason="completed"))
    trace["spans"] += k
    return trace


def _two_jobs(folder: Path) -> Path:
    """:func:`_two_jobs_trace` written as a trace folder."""
    return write_trace_folder(_two_jobs_trace(), folder)


def test_summarize_shows_slow_time_per_job_per_group_and_for_the_fleet(tmp_path, capsys):
    """``ett summarize`` on :func:`_two_jobs`: the figures as docs/metric.md works them out by hand."""
    folder = _two_jobs(tmp_path / "t")
    assert cli.main(["summarize", str(folder), "--json", "--by", "model"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == {"name": "ett-summarize", "version": 2} and doc["slow"] == {"tolerance": 0.25}
    j, k = doc["jobs"]
    assert (j["job_id"], j["slow_spans"], j["ideal_pace_per_s"]) == ("j", 2, pytest.approx(10.0))
    assert (j["slow_s"], j["slow_gpu_h"]) == (pytest.approx(40.0), pytest.approx(8 * 40 / 3600))
    assert (j["ett_pct"], j["ett_ideal_pct"]) == (pytest.approx(100.0), pytest.approx(100 * 121 / 161))
    assert (k["slow_spans"], k["slow_s"], k["slow_gpu_h"], k["ett_ideal_pct"]) == (0, 0.0, 0.0, pytest.approx(100.0))
    m, n = doc["groups"]
    assert (m["model"], m["slow_spans"], m["slow_gpu_h"]) == ("m", 2, pytest.approx(8 * 40 / 3600))
    assert (n["model"], n["slow_spans"], n["slow_gpu_h"], n["ett_ideal_pct"]) == ("n", 0, 0.0, pytest.approx(100.0))
    fleet = doc["fleet"]
    assert (fleet["slow_spans"], fleet["slow_gpu_h"]) == (2, pytest.approx(8 * 40 / 3600))
    assert fleet["ett_ideal_pct"] == pytest.approx(100 * (8 * 121 + 4 * 70) / (8 * 161 + 4 * 70))
    # the tolerance is the measuring option's: at 0.05 the 11 s span (10 % over) is slow too
    assert cli.main(["summarize", str(folder), "--json", "--slow-tolerance", "0.05"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["slow"] == {"tolerance": 0.05} and doc["jobs"][0]["slow_s"] == pytest.approx(41.0)
    # with a price: the slow GPU-hours' part of the cost, per job and for the fleet
    assert cli.main(["summarize", str(folder), "--json", "--gpu-hour-price", "2.5", "--currency", "EUR"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [x["money"]["slow_cost"] for x in doc["jobs"]] == [pytest.approx(8 * 40 / 3600 * 2.5), 0.0]
    assert doc["slow"] == {"tolerance": 0.25, "cost": pytest.approx(8 * 40 / 3600 * 2.5), "currency": "EUR"}
    assert cli.main(["summarize", str(folder), "--gpu-hour-price", "2.5"]) == 0
    assert "Slow time cost: 0.22 USD" in capsys.readouterr().out
    assert cli.main(["summarize", str(folder), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["job_id"], float(r["slow_s"])) for r in rows] == [("j", pytest.approx(40.0)), ("k", 0.0)]
    assert cli.main(["summarize", str(folder)]) == 0
    text = capsys.readouterr().out
    section = text[text.index("Slow time (train spans slower than 1.25 x") :].splitlines()
    rows = [line.split() for line in section[4 : section.index("")]]  # the jobs with slow time, after the header
    assert rows == [["j", "2", "40.00", "0.09", "100.00", "75.16"]]


def test_without_slow_time_the_ett_at_ideal_pace_is_ett_itself_to_the_last_digit(capsys):
    """The bundled sample has no slow span: every job's, group's and bucket's ETT at ideal pace is its ETT%, the same
    float, though the two are computed by different queries (job_slow, group_slow, slow.trend against the metric's)."""
    from ettcore.config import SAMPLE_TRACE

    for argv in (["summarize", "--json", "--by", "model"], ["trend", "--json", "--every", "hour"]):
        assert cli.main([argv[0], str(SAMPLE_TRACE), *argv[1:]]) == 0
        doc = json.loads(capsys.readouterr().out)
        rows = doc.get("jobs", []) + doc.get("groups", []) + [doc.get("fleet") or {}] + doc.get("buckets", [])
        rows = [r for r in rows if r]
        assert rows and all(r["slow_spans"] == 0 and r["ett_ideal_pct"] == r["ett_pct"] for r in rows), argv


def test_trend_counts_slow_time_where_a_slow_span_starts_in_calendar_and_rolling_buckets(tmp_path, capsys):
    """``ett trend`` on :func:`_two_jobs`, by hand: one day holds both slow spans; rolling minutes over a 2-minute
    window hold the span starting at 22:54:50 from the 22:54 bucket ([22:53, 22:55)) and the one at 22:55:20 from
    the 22:55 bucket, each in two windows."""
    folder = _two_jobs(tmp_path / "t")
    assert cli.main(["trend", str(folder), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == {"name": "ett-trend", "version": 3} and doc["slow"] == {"tolerance": 0.25}
    (day,) = doc["buckets"]
    assert (day["bucket_start"], day["slow_spans"], day["slow_gpu_h"]) == (
        "2026-01-31",
        2,
        pytest.approx(8 * 40 / 3600),
    )
    assert day["ett_ideal_pct"] == pytest.approx(100 * (8 * 121 + 4 * 70) / (8 * 161 + 4 * 70))
    assert cli.main(["trend", str(folder), "--every", "1m", "--window", "2m", "--json"]) == 0
    buckets = json.loads(capsys.readouterr().out)["buckets"]
    got = [(b["bucket_start"][11:16], b["slow_spans"], round(b["slow_gpu_h"] * 3600)) for b in buckets]
    assert got == [("22:53", 0, 0), ("22:54", 1, 160), ("22:55", 2, 320), ("22:56", 1, 160)]
    # [22:54, 22:56): j's 120 s on 8 GPUs and k's 30 s on 4, all productive, 320 GPU-seconds of them slow
    assert buckets[2]["ett_ideal_pct"] == pytest.approx(100 * (8 * 120 + 4 * 30 - 320) / (8 * 120 + 4 * 30))
    assert cli.main(["trend", str(folder), "--json", "--slow-tolerance", "0.05"]) == 0
    assert json.loads(capsys.readouterr().out)["buckets"][0]["slow_gpu_h"] == pytest.approx(8 * 41 / 3600)


def test_the_export_writes_slow_gpu_seconds_gauges_and_counters_and_each_job_s_slow_seconds(tmp_path, capsys):
    """``ett export prometheus`` on :func:`_two_jobs`: j's 40 slow seconds on 8 GPUs are 320 GPU-seconds for the fleet
    and model m, 0 for model n; the counters only for the whole trace (a window's totals are not cumulative)."""
    folder = _two_jobs(tmp_path / "t")
    assert cli.main(["export", "prometheus", str(folder), "--job-series-within", "all"]) == 0
    lines = set(capsys.readouterr().out.splitlines())
    assert {
        "ett_export_slow_tolerance 0.25",
        "ett_fleet_slow_gpu_seconds 320",
        "ett_fleet_slow_gpu_seconds_total 320",
        'ett_model_slow_gpu_seconds_total{model="m"} 320',
        'ett_model_slow_gpu_seconds_total{model="n"} 0',
        'ett_job_slow_seconds{job_id="j",model="m"} 40',
        'ett_job_slow_seconds{job_id="k",model="n"} 0',
        "# TYPE ett_fleet_slow_gpu_seconds_total counter",
    } <= lines
    argv = ["export", "prometheus", str(folder), "--job-series-within", "all", "--slow-tolerance", "0.05"]
    assert cli.main([*argv, "--since", "2026-01-31T00:00:00Z"]) == 0
    text = capsys.readouterr().out
    assert "\nett_fleet_slow_gpu_seconds 328\n" in text and "slow_gpu_seconds_total" not in text  # 41 s on 8 GPUs


def test_a_store_gives_the_slow_figures_of_a_one_shot_measurement(tmp_path, capsys):
    """:func:`_two_jobs` ingested into a fleet store: summarize, trend (fixed and rolling) and the export give the
    slow figures a one-shot DuckDB measurement of the trace folder gives (the same queries over the stored rows)."""
    from ettcore.cli import slow_fields

    folder = _two_jobs(tmp_path / "t")
    store = tmp_path / "fleet.duckdb"
    assert cli.main(["ingest", str(store), str(folder)]) == 0
    capsys.readouterr()

    def answer(where, *argv):
        words = 2 if argv[0] == "export" else 1  # the command's words, then the input
        assert cli.main([*argv[:words], str(where), *argv[words:]]) == 0
        return capsys.readouterr().out

    one, stored = (json.loads(answer(w, "summarize", "--json", "--by", "model")) for w in (folder, store))
    assert stored["slow"] == one["slow"]
    for key, keys in (("jobs", slow_fields.JOB_KEYS), ("groups", slow_fields.GROUP_KEYS)):
        assert [{k: x[k] for k in keys} for x in stored[key]] == [{k: x[k] for k in keys} for x in one[key]]
    assert {k: stored["fleet"][k] for k in slow_fields.GROUP_KEYS} == {
        k: one["fleet"][k] for k in slow_fields.GROUP_KEYS
    }
    assert one["jobs"][0]["slow_s"] == pytest.approx(40.0)  # not a comparison of zeros
    for argv in (["trend", "--json"], ["trend", "--every", "1m", "--window", "2m", "--json"]):
        one, stored = (json.loads(answer(w, *argv))["buckets"] for w in (folder, store))
        keys = ("bucket_start", "slow_spans", "slow_gpu_h", "ett_ideal_pct")
        assert [{k: b[k] for k in keys} for b in stored] == [{k: b[k] for k in keys} for b in one]
    export = ["export", "prometheus", "--job-series-within", "all"]
    one, stored = (
        sorted(x for x in answer(w, *export).splitlines() if "slow" in x.split("{")[0].split(" ")[0])
        for w in (folder, store)
    )
    assert stored == one and "ett_fleet_slow_gpu_seconds_total 320" in one


def _slow_and_looping(folder: Path) -> Path:
    """:func:`_two_jobs` beside the crash-loop worked example's three jobs (``test_crash_loops.worked_example``, from
    the same instant: job ``poison`` is in a crash loop of three attempts, job ``advancing`` crashes but advances),
    SYNTHETIC: a trace where both slow time and crash loops are not zero."""
    from test_crash_loops import worked_example

    trace, looping = _two_jobs_trace(), worked_example()
    for table in ("jobs", "attempts", "spans"):
        trace[table] += looping[table]
    return write_trace_folder(trace, folder / "t")


@pytest.mark.spark
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_spark_gives_the_slow_and_crash_loop_figures_of_a_one_shot_duckdb_measurement(tmp_path, capsys, spark_master):
    """:func:`_slow_and_looping` on Spark (the same query files, translated): summarize's slow figures and restarts
    (crash loops, retry chains, storms), and trend's slow and crash-loop figures per bucket (fixed, at a given
    tolerance, bound as a parameter on Spark as on DuckDB; and rolling, at the default) equal DuckDB's.  One trace for
    both features: each run of a command on Spark costs a minute or more on 2 cores."""
    from ettcore.cli import slow_fields
    from ettcore.engines.spark import spark_available

    if not spark_available():
        pytest.skip("pyspark or Java not installed")
    folder = _slow_and_looping(tmp_path)
    spark = ["--engine", "spark", "--spark-master", spark_master]

    def answer(*argv):
        assert cli.main([argv[0], str(folder), *argv[1:]]) == 0
        return json.loads(capsys.readouterr().out)

    argv = ["summarize", "--json", "--by", "model"]
    duck, on_spark = answer(*argv), answer(*argv, *spark)
    assert on_spark["slow"] == duck["slow"] and on_spark["input"]["engine"] == "spark"
    loop_keys = ("job_id", "retry_chain", "crash_loop")
    for key, keys in (("jobs", (*slow_fields.JOB_KEYS, *loop_keys)), ("groups", slow_fields.GROUP_KEYS)):
        for a, b in zip(on_spark[key], duck[key], strict=True):
            assert_same_answer({k: a[k] for k in keys}, {k: b[k] for k in keys})
    got, want = ({k: d["fleet"][k] for k in slow_fields.GROUP_KEYS} for d in (on_spark, duck))
    assert got == pytest.approx(want, rel=1e-9)
    assert_same_answer(on_spark["restarts"], duck["restarts"])
    # not comparisons of zeros: the hand figures of the two worked examples
    jobs = {j["job_id"]: j for j in duck["jobs"]}
    assert jobs["j"]["slow_s"] == pytest.approx(40.0)
    (loop,) = duck["restarts"]["crash_loops"]
    assert (loop["job_id"], loop["first_attempt"], loop["last_attempt"]) == ("poison", 1, 3)
    for argv in (
        ["trend", "--json", "--slow-tolerance", "0.05"],
        ["trend", "--every", "1m", "--window", "10m", "--json"],
    ):
        duck, on_spark = answer(*argv)["buckets"], answer(*argv, *spark)["buckets"]
        assert any(b["slow_spans"] for b in duck) and any(b["crash_loop_restarts"] for b in duck), argv
        for a, b in zip(on_spark, duck, strict=True):
            counts = ("bucket_start", "slow_spans", "crash_loop_restarts")
            assert [a[k] for k in counts] == [b[k] for k in counts]
            hours = ("slow_gpu_h", "ett_ideal_pct", "crash_loop_gpu_h")
            assert [a[k] for k in hours] == pytest.approx([b[k] for k in hours], rel=1e-9)


def _windows(rank: int, node: str, t0_s: float, t1_s: float, work_share: float) -> list[dict]:
    """One window a second of one rank from ``t0_s`` to ``t1_s`` (epoch seconds), its work share ``work_share``."""
    return [
        dict(
            job_id="j",
            attempt=0,
            rank=rank,
            node=node,
            start=t,
            end=t + 1.0,
            steps=10,
            work_s=work_share,
            wait_s=1.0 - work_share,
        )
        for t in range(int(t0_s), int(t1_s))
    ]


def _held_windows() -> list[dict]:
    """Rank 1 on node b works 90 % of each second in the first slow span (rank 0 waits 70 %); in the second only
    rank 0 has windows; before them both ranks are balanced."""
    b = B / 1000
    return (
        _windows(0, "a", b, b + 90, 0.5)
        + _windows(1, "b", b, b + 90, 0.5)
        + _windows(0, "a", b + 90, b + 150, 0.3)
        + _windows(1, "b", b + 90, b + 120, 0.9)
    )


def test_the_slow_spans_name_the_rank_that_worked_longest(tmp_path):
    """Rank 1 on node b works 90 % of each second in the first slow span (rank 0 waits 70 %); in the second only
    rank 0 has windows; outside the slow spans both ranks are balanced."""
    t = load_trace(write_trace_folder(_slow_trace(), tmp_path / "t"))
    b = B / 1000
    got = slow.holders(t, _held_windows())
    assert got["rank"].to_list() == [1, 0]
    assert got["node"].to_list() == ["b", "a"]
    assert got["ranks"].to_list() == [2, 1]
    assert got["work_share"][0] == pytest.approx(0.9)
    assert got["slow_s"].to_list() == pytest.approx([20.0, 20.0])
    # a slow span no window overlaps names no one
    none = slow.holders(t, _windows(0, "a", b, b + 90, 0.5))
    assert none["rank"].to_list() == [None, None] and none["ranks"].to_list() == [0, 0]


def test_a_slow_replay_is_wasted_training_already_not_slow_time(tmp_path):
    """Attempt 0 trains 1060 units at the ideal pace and fails; attempt 1 starts again from 0: its warm-up, eight
    spans at pace, then two slow 30 s spans that replay units 810-1010 (wasted training: no slow time), then one slow
    30 s span half replay (1010-1060) and half new (1060-1110): half its 20 s excess is slow time."""
    first = train_spans("j", 0, [(10, 10)] + [(10, 100)] * 10 + [(5, 50)], B)
    t1 = first[-1]["end"] + 60_000
    again = train_spans("j", 1, [(10, 10)] + [(10, 100)] * 8 + [(30, 100)] * 3, t1, c=0)
    trace = {
        "jobs": [dict(job_id="j", model="m", gpus=1)],
        "attempts": [
            dict(job_id="j", attempt=0, start=B, end=first[-1]["end"], end_reason="failure"),
            dict(job_id="j", attempt=1, start=t1, end=again[-1]["end"], end_reason="completed"),
        ],
        "spans": first + again,
    }
    t = load_trace(write_trace_folder(trace, tmp_path / "t"))
    listed = slow.train_slow(t)
    assert listed.height == 1 and listed["attempt"][0] == 1
    assert listed["slow_s"][0] == pytest.approx(10.0)


def test_the_tolerance_must_be_a_fraction_of_zero_or_more(tmp_path):
    t = load_trace(write_trace_folder(_slow_trace(), tmp_path / "t"))
    for bad in ["-0.1", "nan", "inf", "ten", "1; DROP TABLE spans"]:
        with pytest.raises(TraceError) as info:
            slow.job_slow(t, tolerance=bad)
        assert info.value.problems[0].field == "slow_tolerance"


@_settings(60)
@given(traces_with_window(train_counts=(0, 2, 6, 9, 12)), st.sampled_from([None, 0.0, 0.1, 1.0]))
def test_slow_time_equals_reference(trace_window, tolerance):
    """Per job: ideal pace, each slow span (start, slow time), slow seconds and GPU-hours and the ETT at ideal pace;
    per model and for the fleet: slow spans and GPU-hours and the weighted ETT at ideal pace; over random windows and
    exclusions, on traces whose attempts train in up to 12 spans."""
    trace, window = trace_window
    want = ref.reference_slow(
        trace["jobs"],
        trace["attempts"],
        trace["spans"],
        window["as_of"],
        tolerance=slow.DEFAULT_TOLERANCE if tolerance is None else tolerance,
        since=window["since"],
        until=window["until"],
        exclusions=window["exclusions"],
    )
    n = sum(len(w["slow"]) for w in want.values())
    event(f"slow spans in the reference: {min(3, n)}{'+' * (n >= 3)}")
    measured = ref.reference_metrics(
        trace["jobs"],
        trace["attempts"],
        trace["spans"],
        window["as_of"],
        since=window["since"],
        until=window["until"],
        exclusions=window["exclusions"],
    )
    with tempfile.TemporaryDirectory(prefix="ett-slow-") as tmp:
        t = load_trace(
            write_trace_folder(trace, Path(tmp) / "t"),
            as_of=None if window["as_of"] is None else window["as_of"] / 1000,
        )
        metric.set_window(t, **sql_window(window))
        per_job = {r["job_id"]: r for r in slow.job_slow(t, tolerance).iter_rows(named=True)}
        listed = slow.train_slow(t, tolerance)
        groups = {by: slow.group_slow(t, by, tolerance) for by in (None, "model")}
    for by, got in groups.items():
        want_rows = ref.reference_group_slow(measured, want, by)
        rows = list(got.iter_rows(named=True))
        assert [r.get(by) for r in rows] == [w["key"] for w in want_rows] if by else len(rows) == len(want_rows)
        for g, w in zip(rows, want_rows):
            assert (g["jobs"], g["slow_spans"]) == (w["jobs"], w["slow_spans"])
            assert g["slow_gpu_h"] == pytest.approx(w["slow_gpu_h"], rel=1e-9, abs=1e-9)
            for pct in ("ett_pct", "ett_ideal_pct"):
                assert (g[pct] is None) == (w[pct] is None), pct
                if w[pct] is not None:
                    assert g[pct] == pytest.approx(w[pct], abs=1e-6), pct
    assert sorted(per_job) == sorted(want)
    for job_id, w in want.items():
        g = per_job[job_id]
        assert (g["ideal_pace_per_s"] is None) == (w["ideal"] is None), job_id
        if w["ideal"] is not None:
            assert g["ideal_pace_per_s"] == pytest.approx(1 / w["ideal"], rel=1e-9)
        assert g["slow_spans"] == len(w["slow"]), job_id
        assert g["slow_s"] == pytest.approx(w["slow_s"], abs=1e-6)
        assert g["slow_gpu_h"] == pytest.approx(w["slow_gpu_h"], abs=1e-9)
        if w["ett_ideal_pct"] is None:
            assert g["ett_ideal_pct"] is None
        else:
            assert g["ett_ideal_pct"] == pytest.approx(w["ett_ideal_pct"], abs=1e-6)
        mine = listed.filter(pl.col("job_id") == job_id)
        assert [_ms(v) for v in mine["start"]] == [s for s, _ in w["slow"]]
        assert mine["slow_s"].to_list() == pytest.approx([s for _, s in w["slow"]], abs=1e-6)


def test_rank_timing_files_are_read_and_a_bad_line_is_named(tmp_path):
    """``read_rank_timing``: the windows of every rank's file in order; a last line cut short is left out; a bad line
    is one input error naming the file, the line and the field."""
    folder = tmp_path / RANK_TIMING_DIR
    folder.mkdir()
    good = dict(job_id="j", attempt=0, rank=1, node="b", start=1.0, end=2.0, steps=3, work_s=0.9, wait_s=0.1)
    path = folder / rank_timing_name("j", 1)
    path.write_text(
        json.dumps(good) + "\n" + json.dumps({**good, "start": 2.0, "end": 3.0}) + "\n" + '{"job_id": "j", "att'
    )
    assert [w["start"] for w in read_rank_timing(tmp_path)] == [1.0, 2.0]
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "steps": "many"}) + "\n")
    with pytest.raises(TraceError) as info:
        read_rank_timing(tmp_path)
    (p,) = info.value.problems
    assert (p.file, p.row, p.field) == (str(path), 2, "steps")
    path.write_text("not json\n" + json.dumps(good) + "\n")
    with pytest.raises(TraceError) as info:
        read_rank_timing(tmp_path)
    assert info.value.problems[0].row == 1
    assert read_rank_timing(tmp_path / "no-such-run") == []


def _rank_timing_csv(folder: Path, rows: list[str]) -> Path:
    head = "job_id,attempt,rank,node,start,end,steps,work_s,wait_s"
    path = folder / "rank_timing.csv"
    path.write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")
    return path


def test_the_traces_rank_timing_table_names_the_rank_that_worked_longest(tmp_path):
    """The windows of ``test_the_slow_spans_name_the_rank_that_worked_longest`` as the trace's ``rank_timing``
    table (CSV, ISO-8601 instants): ``holders`` without windows reads them and names the same ranks and nodes."""
    folder = write_trace_folder(_slow_trace(), tmp_path / "t")
    windows = _held_windows()

    def iso(s: float) -> str:
        return pl.Series([int(s * 1000)]).cast(pl.Datetime("ms", "UTC")).dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")[0]

    _rank_timing_csv(
        folder,
        [
            f"{w['job_id']},{w['attempt']},{w['rank']},{w['node']},{iso(w['start'])},{iso(w['end'])},{w['steps']},"
            f"{w['work_s']},{w['wait_s']}"
            for w in windows
        ],
    )
    t = load_trace(folder)
    assert t.accounting["rank_timing"]["used"] == len(windows)
    got = slow.holders(t)
    assert got["rank"].to_list() == [1, 0] and got["node"].to_list() == ["b", "a"]
    assert got["ranks"].to_list() == [2, 1] and got["work_share"][0] == pytest.approx(0.9)
    # without the table (a trace as before): no window, no holder
    (folder / "rank_timing.csv").unlink()
    none = slow.holders(load_trace(folder))
    assert none["rank"].to_list() == [None, None] and none["ranks"].to_list() == [0, 0]


@pytest.mark.parametrize(
    "row, field, words",
    [
        (",0,0,a,{s},{e},3,0.5,0.5", "job_id", "job_id is missing"),
        ("j,x,0,a,{s},{e},3,0.5,0.5", "attempt", "attempt is not an integer: x"),
        ("j,0,,a,{s},{e},3,0.5,0.5", "rank", "rank is missing"),
        ("j,0,-1,a,{s},{e},3,0.5,0.5", "rank", "rank must be >= 0, got -1"),
        ("j,0,0,a,yesterday,{e},3,0.5,0.5", "start", "unparsable or implausible timestamp: yesterday"),
        ("j,0,0,a,{s},,3,0.5,0.5", "end", "end is missing"),
        ("j,0,0,a,{e},{s},3,0.5,0.5", "end", "end is before start"),
        ("j,0,0,a,{s},{e},0,0.5,0.5", "steps", "steps must be >= 1, got 0"),
        ("j,0,0,a,{s},{e},2.5,0.5,0.5", "steps", "steps is not an integer: 2.5"),
        ("j,0,0,a,{s},{e},3,inf,0.5", "work_s", "work_s is not a finite number: inf"),
        ("j,0,0,a,{s},{e},3,0.5,-0.1", "wait_s", "wait_s must be >= 0 seconds, got -0.1"),
        ("j,7,0,a,{s},{e},3,0.5,0.5", "attempt", "unknown attempt 7 of job j"),
    ],
)
def test_a_bad_rank_timing_row_is_one_problem_naming_file_row_and_field(tmp_path, row, field, words):
    """Each bad value of the ``rank_timing`` table is an input error naming the file, the row (after a good one) and
    the field; ``--skip-invalid`` leaves the job out and counts its rows as rejected."""
    folder = write_trace_folder(_slow_trace(), tmp_path / "t")
    good = "j,0,1,b,2026-01-31T22:53:20Z,2026-01-31T22:53:21Z,3,0.5,0.5"
    path = _rank_timing_csv(folder, [good, row.format(s="2026-01-31T22:53:20Z", e="2026-01-31T22:53:21Z")])
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    (p,) = info.value.problems
    assert (p.file, p.row, p.field, p.table) == (str(path), 2, field, "rank_timing")
    assert words in p.message
    skipped = load_trace(folder, skip_invalid=True).accounting["rank_timing"]
    # a row without a job id leaves no job out: the good row of job j is used
    assert (skipped["rejected"], skipped["used"]) == ((1, 1) if field == "job_id" else (2, 0))


def test_a_rank_timing_file_without_a_required_column_is_one_problem(tmp_path):
    folder = write_trace_folder(_slow_trace(), tmp_path / "t")
    path = folder / "rank_timing.csv"
    path.write_text("job_id,attempt,rank,node,start,end,steps,work\nj,0,0,a,1769900000,1769900001,3,0.5\n")
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    assert [(p.file, p.row, p.field) for p in info.value.problems] == [
        (str(path), None, "work_s"),
        (str(path), None, "wait_s"),
    ]
    assert "did you mean 'work'?" in info.value.problems[0].message


def test_the_importer_writes_the_run_folders_rank_timing_as_the_traces_table(tmp_path):
    """``convert`` of a run folder whose ranks kept their windows writes them as the trace's ``rank_timing`` table,
    one row a window with its instants to the microsecond; a run folder without any writes none."""
    from test_recorder import T0, _simple_run

    from ettcore.importers.recorder import convert

    run = tmp_path / "run"
    _simple_run(run)
    assert convert(run, tmp_path / "without").out_dir is not None
    assert not (tmp_path / "without" / "rank_timing.parquet").exists()
    folder = run / RANK_TIMING_DIR
    folder.mkdir()
    for rank, node in ((0, "a"), (1, "b")):
        lines = [
            dict(
                job_id="j",
                attempt=0,
                rank=rank,
                node=node,
                start=T0 + 10 + s + 0.5,
                end=T0 + 10 + s + 1.5,
                steps=1,
                work_s=0.9,
                wait_s=0.1,
            )
            for s in range(3)
        ]
        (folder / rank_timing_name("j", rank)).write_text("".join(json.dumps(w) + "\n" for w in lines))
    convert(run, tmp_path / "with")
    table = pl.read_parquet(tmp_path / "with" / "rank_timing.parquet")
    assert table.height == 6 and table["node"].to_list() == ["a"] * 3 + ["b"] * 3
    t = load_trace(tmp_path / "with")
    got = t.sql("SELECT rank, start_ms, end_ms, steps, work_s FROM clean_rank_timing ORDER BY rank, start_ms")
    assert got.row(0) == (0, round((T0 + 10.5) * 1000), round((T0 + 11.5) * 1000), 1, 0.9)
    assert t.accounting["rank_timing"] == {"read": 6, "used": 6, "rejected": 0, "rejected_by_reason": {}}
