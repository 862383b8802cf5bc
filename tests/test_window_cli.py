"""Windows and exclusions through the ``ett`` command and the exclusion-file reader.

On the bundled sample trace (SYNTHETIC), whose job ``worked-example`` is the spec's worked example: the window
clips each job instant by instant and keeps the job's own classification; ``summarize --json`` keeps its field
names, its envelope's ``window`` lists the exclusions; bad times, windows and exclusion files are input
errors naming file, row and field; hostile values reach SQL only as bound data.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ettcore import metric
from ettcore.cli import main
from ettcore.config import SAMPLE_TRACE
from ettcore.errors import TraceError
from ettcore.trace import load_trace
from ettcore.trace.window import Exclusion, read_exclusions

MIN = 60


def _json(capsys, argv) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_worked_example_in_a_window_keeps_its_classification():
    """01:00-02:00 of the worked example (minutes 60-120): recovery 60-84 (it began at the failure at 50), productive
    84-110, shutdown tail 110-120; the failure at minute 50 is before the window."""
    t = load_trace(SAMPLE_TRACE, since="2026-01-05T01:00:00Z", until="2026-01-05T02:00:00Z")
    r = metric.job_summary(t).filter(pl.col("job_id") == "worked-example").row(0, named=True)
    assert (r["wall_s"], r["productive_s"], r["ttr_total_s"], r["shutdown_tail_s"], r["tts_s"]) == (
        60 * MIN,
        26 * MIN,
        24 * MIN,
        10 * MIN,
        0,
    )
    assert r["nof"] == 0 and r["ttr_mean_s"] is None and r["excluded_s"] == 0
    assert r["ett_pct"] == pytest.approx(100 * 26 / 60)
    # the L2 cells of the window: replay 70-84 (wasted training), trainer init 60-64, compile 64-70, shutdown 110-120
    l2 = metric.l2_matrix(t).filter(pl.col("job_id") == "worked-example")
    cells: dict = {}
    for x in l2.iter_rows(named=True):
        cells[(x["bucket"], x["component"])] = cells.get((x["bucket"], x["component"]), 0) + x["seconds"]
    assert cells[("recovery", "wasted_training")] == 14 * MIN and cells[("recovery", "pt2_compile")] == 6 * MIN
    assert cells[("recovery", "trainer_init")] == 4 * MIN and sum(cells.values()) == 60 * MIN


def test_summarize_json_keeps_its_fields_and_lists_the_window(capsys, tmp_path):
    whole = _json(capsys, ["summarize", str(SAMPLE_TRACE), "--json"])
    # the envelope's window is always there: unbounded (null), no exclusion, for the whole trace
    assert whole["window"] == {"since": None, "until": None, "exclusions": []}
    assert "exclusions" not in whole and "excluded_s" not in whole["jobs"][0]
    ex = _write(
        tmp_path / "ex.json",
        json.dumps(
            [
                {"start": "2026-01-05T00:40:00Z", "end": "2026-01-05T01:20:00Z", "reason": "maintenance"},
                {
                    "start": 1767582000,
                    "end": "2026-01-05T06:00:00+02:00",
                    "reason": "incident",
                    "label": {"team": "feed"},
                },
            ]
        ),
    )
    got = _json(
        capsys,
        [
            "summarize",
            str(SAMPLE_TRACE),
            "--json",
            "--since",
            "2026-01-05T00:30:00Z",
            "--exclude",
            str(ex),
            "--by",
            "team",
        ],
    )
    assert (got["window"]["since"], got["window"]["until"]) == ("2026-01-05T00:30:00Z", None)
    assert [x["reason"] for x in got["window"]["exclusions"]] == ["maintenance", "incident"]
    second = got["window"]["exclusions"][1]
    assert (second["label"], second["start"], second["end"], second["job"]) == (
        "team=feed",
        "2026-01-05T03:00:00Z",
        "2026-01-05T04:00:00Z",
        None,
    )
    assert second["wall_gpu_h"] == pytest.approx(
        8.0
    )  # sample-preempted (8 GPUs) 03:00-04:00; sample-running starts later
    first = got["window"]["exclusions"][0]
    assert (first["jobs"], first["nof"]) == (1, 1)  # the worked example, whose failure at 00:50 it leaves out
    assert first["wall_gpu_h"] == pytest.approx(128 * 40 / 60)
    for job in got["jobs"]:
        assert set(whole["jobs"][0]) | {"excluded_s"} == set(job)
    keys = set(whole["fleet"]) | {"excluded_gpu_h"}
    assert set(got["fleet"]) == keys and all(set(g) == keys | {"team"} for g in got["groups"])
    we = next(j for j in got["jobs"] if j["job_id"] == "worked-example")
    assert we["t0"] == "2026-01-05T00:30:00Z" and we["excluded_s"] == 40 * MIN and we["wall_s"] == 90 * MIN - 40 * MIN
    assert we["nof"] == 0


def test_summarize_text_lists_exclusions(capsys, tmp_path):
    ex = _write(
        tmp_path / "ex.csv",
        'start,end,reason,job\n2026-01-05T22:00:00Z,2026-01-06T01:00:00Z,"benchmark freeze, week 2",sample-running\n',
    )
    assert main(["summarize", str(SAMPLE_TRACE), "--exclude", str(ex), "--until", "2026-01-06T00:00:00Z"]) == 0
    out = capsys.readouterr().out
    assert "Measured from the start to 2026-01-06T00:00:00Z" in out
    assert "Exclusion windows" in out and "benchmark freeze, week 2" in out and "sample-running" in out


def test_trend_rolling_and_hourly(capsys):
    rows = _json(capsys, ["trend", str(SAMPLE_TRACE), "--every", "hour", "--window", "24h", "--json"])["buckets"]
    assert rows[0]["bucket_start"] == "2026-01-05T00:00:00Z" and rows[0]["window_start"] == "2026-01-04T01:00:00Z"
    last_full = next(r for r in rows if r["bucket_start"] == "2026-01-05T23:00:00Z")
    day = metric.trend(load_trace(SAMPLE_TRACE), "day").row(0, named=True)
    assert last_full["wall_gpu_h"] == pytest.approx(day["wall_gpu_h"])  # the window 00:00-24:00 is the first day
    assert last_full["ett_pct"] == pytest.approx(day["ett_pct"]) and last_full["nof"] == day["nof"] == 3
    hourly = _json(capsys, ["trend", str(SAMPLE_TRACE), "--every", "hour", "--json"])["buckets"]
    assert sum(r["wall_gpu_h"] for r in hourly) == pytest.approx(
        sum(r["wall_gpu_h"] for r in _json(capsys, ["trend", str(SAMPLE_TRACE), "--json"])["buckets"])
    )
    capsys.readouterr()
    assert main(["trend", str(SAMPLE_TRACE), "--every", "day", "--window", "7d", "--csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("bucket_start,window_start,window_end,ett_pct")


def test_buckets_shorter_than_an_hour_partition_the_hours(capsys):
    # 15-minute buckets: four of them add up to each hour, instant by instant (wall, productive, NoF)
    quarter = metric.trend(load_trace(SAMPLE_TRACE), "15m")
    hourly = metric.trend(load_trace(SAMPLE_TRACE), "hour")
    assert (quarter["window_end"] - quarter["window_start"]).dt.total_minutes().unique().to_list() == [15]
    by_hour = (
        quarter.group_by(pl.col("bucket_start").dt.truncate("1h"))
        .agg(pl.col("wall_gpu_h").sum(), pl.col("productive_gpu_h").sum(), pl.col("nof").sum())
        .sort("bucket_start")
    )
    joined = hourly.join(by_hour, on="bucket_start", suffix="_q")
    assert joined.height == hourly.height
    for c in ("wall_gpu_h", "productive_gpu_h"):
        assert joined[c].to_list() == pytest.approx(joined[f"{c}_q"].to_list(), abs=1e-9)
    assert joined["nof"].to_list() == joined["nof_q"].to_list()
    rolled = metric.trend(load_trace(SAMPLE_TRACE), "15m", window="1h")  # a trailing hour at each quarter's end
    on_the_hour = rolled.filter(pl.col("window_end").dt.minute() == 0).join(
        hourly.select(pl.col("window_end"), pl.col("wall_gpu_h").alias("h")), on="window_end"
    )
    assert on_the_hour.height > 0 and on_the_hour["wall_gpu_h"].to_list() == pytest.approx(
        on_the_hour["h"].to_list(), abs=1e-9
    )
    capsys.readouterr()
    assert main(["trend", str(SAMPLE_TRACE), "--every", "7m"]) == 2  # 7 minutes do not divide a day
    assert "divides a day" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--since", "yesterday"], "since"),
        (["--until", "2026-01-05T25:00:00Z"], "until"),
        (["--since", "2026-01-05T02:00:00Z", "--until", "2026-01-05T02:00:00Z"], "until"),
        (["--since", "1e400"], "since"),
        (["--since", "x'); DROP TABLE spans; --"], "since"),
    ],
)
def test_bad_windows_are_input_errors(capsys, argv, field):
    capsys.readouterr()
    assert main(["summarize", str(SAMPLE_TRACE), *argv]) == 2
    err = capsys.readouterr().err
    assert f"field '{field}'" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--every", "week", "--window", "7d"], "needs --every hour, day or a duration"),
        (["--every", "hour", "--window", "90m"], "not a whole number of hours"),
        (["--every", "day", "--window", "36h"], "not a whole number of days"),
        (["--every", "hour", "--window=-1h"], "not a positive duration"),
        (["--every", "hour", "--window", "24h; DROP TABLE spans"], "not a positive duration"),
    ],
)
def test_bad_rolling_windows(capsys, argv, message):
    capsys.readouterr()
    assert main(["trend", str(SAMPLE_TRACE), *argv]) == 2
    assert message in capsys.readouterr().err


def test_exclusion_file_errors_name_file_row_and_field(tmp_path):
    bad = _write(
        tmp_path / "bad.csv",
        "start,end,reason,label,job\n"
        "2026-01-05T01:00:00Z,2026-01-05T00:00:00Z,backwards,,\n"
        "not a time,2026-01-05T02:00:00Z,,team,\n"
        "2026-01-05T01:00:00Z,2026-01-05T02:00:00Z,ok,,\n"
        "1767571200,1767574800.5,ok,=x,j\n",
    )
    with pytest.raises(TraceError) as info:
        read_exclusions(bad)
    found = {(p.row, p.field) for p in info.value.problems}
    assert found == {(1, "end"), (2, "start"), (2, "reason"), (2, "label"), (4, "label")}
    assert all(p.file == str(bad) for p in info.value.problems)
    bad_json = _write(
        tmp_path / "bad.json",
        json.dumps(
            [
                {"start": "2026-01-05T01:00:00Z", "end": True, "reason": "r", "colour": "red"},
                {"start": 1767571200, "end": 1767574800, "reason": "r", "job": 7},
            ]
        ),
    )
    with pytest.raises(TraceError) as info:
        read_exclusions(bad_json)
    assert {(p.row, p.field) for p in info.value.problems} == {(1, "end"), (1, "colour"), (2, "job")}
    for name, text, field in [
        ("missing.csv", "start,reason\n", "end"),
        ("extra.csv", "start,end,reason,colour\n", "colour"),
        ("x.txt", "", None),
        ("broken.json", "{", None),
        ("obj.json", '{"start": 1}', None),
        ("row.json", "[1]", None),
    ]:
        with pytest.raises(TraceError) as info:
            read_exclusions(_write(tmp_path / name, text))
        assert info.value.problems[0].field == field and info.value.problems[0].file == str(tmp_path / name)


def test_unknown_label_column_is_refused_with_the_exclusion_row(tmp_path):
    ex = _write(tmp_path / "ex.csv", "start,end,reason,label\n2026-01-05T00:00:00Z,2026-01-05T01:00:00Z,x,colour=red\n")
    t = load_trace(SAMPLE_TRACE, exclude=ex)
    with pytest.raises(TraceError) as info:
        metric.job_summary(t)
    p = info.value.problems[0]
    assert (p.file, p.row, p.field) == (str(ex), 1, "label") and "team" in p.message


def test_hostile_filter_values_are_data(tmp_path):
    """A job or label value that reads like SQL matches nothing and changes nothing."""
    hostile = [
        Exclusion(1767571200000, 1767657600000, "x", job_id="x'); DROP TABLE spans; --"),
        Exclusion(1767571200000, 1767657600000, "x", label=("team", "ads' OR '1'='1")),
    ]
    t = load_trace(SAMPLE_TRACE, exclude=hostile)
    assert metric.job_summary(t)["excluded_s"].sum() == 0
    assert metric.exclusion_summary(t)["jobs"].to_list() == [0, 0]
    assert t.sql("SELECT count(*) AS n FROM clean_spans")["n"][0] == 47


def test_overlapping_exclusions_count_once(tmp_path):
    ex = _write(
        tmp_path / "ex.csv",
        "start,end,reason\n2026-01-05T00:00:00Z,2026-01-05T00:30:00Z,a\n"
        "2026-01-05T00:20:00Z,2026-01-05T00:40:00Z,b\n2026-01-05T00:40:00Z,2026-01-05T00:45:00Z,c\n",
    )
    t = load_trace(SAMPLE_TRACE, exclude=ex)
    r = metric.job_summary(t).filter(pl.col("job_id") == "worked-example").row(0, named=True)
    assert r["excluded_s"] == 45 * MIN and r["wall_s"] == 75 * MIN
    # 00:00-00:45 held TTS 0-20 and productive 20-30, 31-45 (and a save 30-31): all of it left out
    assert r["productive_s"] == (50 - 24) * MIN and r["tts_s"] == 0
    per = metric.exclusion_summary(t)
    assert per["wall_gpu_h"].to_list() == pytest.approx([128 * 30 / 60, 128 * 20 / 60, 128 * 5 / 60])


def test_exclusion_summary_counts_productive_time_of_jobs_starting_inside_a_day(tmp_path):
    """An exclusion over the whole sample takes out every job's productive time: worked-example 128 GPUs x 50 min,
    sample-preempted 8 x 145, sample-running 16 x 330 (to the as-of time), sample-startup-failure 4 x 60.  Three of
    the jobs start after midnight, inside their first attribution cell (which starts at the grid mark); they were
    left out of the productive column before (170.67 GPU-h listed instead of 218)."""
    ex = _write(tmp_path / "ex.csv", "start,end,reason\n2026-01-05T00:00:00Z,2026-01-07T00:00:00Z,all\n")
    row = metric.exclusion_summary(load_trace(SAMPLE_TRACE, exclude=ex)).row(0, named=True)
    assert row["productive_gpu_h"] == pytest.approx((128 * 50 + 8 * 145 + 16 * 330 + 4 * 60) / 60)
    assert row["wall_gpu_h"] == pytest.approx((128 * 120 + 8 * 300 + 16 * 360 + 4 * 104) / 60)
    # a window cutting jobs: what it lists equals what it takes out of the fleet's figures (measured_time's path)
    ex = _write(tmp_path / "ex2.csv", "start,end,reason\n2026-01-05T01:10:00Z,2026-01-05T12:00:00Z,part\n")
    for since in (None, "2026-01-05T01:30:00Z"):
        whole = metric.fleet_summary(load_trace(SAMPLE_TRACE, since=since)).row(0, named=True)
        t = load_trace(SAMPLE_TRACE, since=since, exclude=ex)
        left = metric.fleet_summary(t).row(0, named=True)
        row = metric.exclusion_summary(t).row(0, named=True)
        for c in ("wall_gpu_h", "productive_gpu_h"):
            assert row[c] == pytest.approx(whole[c] - left[c]), (since, c)


def test_window_values_never_reach_sql_text(tmp_path, monkeypatch):
    """Exclusion reasons, job ids and label values, and the window's times, are bound: no SQL text holds them."""
    import duckdb
    from test_injection import MARK, RecordingConnection

    log: list[str] = []
    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: RecordingConnection(real(*a, **k), log))
    ex = _write(
        tmp_path / "ex.json",
        json.dumps(
            [
                {
                    "start": "2026-01-05T00:40:00Z",
                    "end": "2026-01-05T01:20:00Z",
                    "reason": f"x'); DROP TABLE spans; --{MARK}",
                },
                {
                    "start": "2026-01-05T01:00:00Z",
                    "end": "2026-01-05T04:00:00Z",
                    "reason": "r",
                    "job": f"{MARK}' OR '1'='1",
                },
                {
                    "start": "2026-01-05T01:00:00Z",
                    "end": "2026-01-05T04:00:00Z",
                    "reason": "r",
                    "label": f'team={MARK}"; --',
                },
            ]
        ),
    )
    t = load_trace(SAMPLE_TRACE, since="2026-01-05T00:30:00Z", until="2026-01-06T00:00:00Z", exclude=ex)
    metric.job_summary(t)
    metric.trend(t, "hour", window="6h")
    listed = metric.exclusion_summary(t)
    assert listed["reason"][0].endswith(MARK) and listed["jobs"].to_list() == [1, 0, 0]
    assert log and not [q for q in log if MARK in q or "1767573000" in q]
