"""ml-goodput-measurement and ettcore side by side, on the same recorded timelines.

Each case records a timeline through the library's own ``GoodputRecorder`` into
an in-memory ``cloud_logger`` (no Google Cloud, no network: sockets are
blocked for these tests), then

- runs the library's ``GoodputCalculator`` on those entries, and
- writes the entries as JSON lines, imports them with ``ett import goodput``
  and computes the ETT metric.

The timelines are synthetic (made up for the test; the traces say
``"synthetic": true``).  Seconds from the job's start, expected values worked
out by hand in each case's docstring.  Where the two agree and why they differ
(per case: goodput (library), ETT%; why):

- clean run, eval + checkpoint save in the loop: 44.78, 44.78; same definitions: start-up, blocking events, the last
  step to job end
- slow first step: 41.67, 41.67; the library moves first-step time above the mean step into PROGRAM_STARTUP (12 s);
  the importer makes the first-step time above the median step a `pt2_compile` span (12 s)
- restart repeating steps, same speed: 34.62, 34.62; the library wastes the *lost* steps of the failed attempt, ETT
  the *replayed* steps of the next; equal when they take equal time
- restart repeating steps, faster replay: 29.17, 32.50; same, unequal: the difference is the lost steps' time minus
  the replay's (12 s - 8 s)
- restart that does not repeat a step: 71.43, 25.71; the library sees no disruption (it detects one only by a
  repeated step number) and counts the whole outage inside "step 4" as productive; the trace has a new attempt (a job
  start) and counts it as recovery
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest
from conftest import needs  # tests/conftest.py

from ettcore import cli, metric
from ettcore.errors import TraceError
from ettcore.importers.frames import write_import
from ettcore.importers.goodput import MemoryLogger, import_entries
from ettcore.trace import load_trace

BASE = dt.datetime(2025, 3, 1, tzinfo=dt.timezone.utc)
JOB = "gp-test"


def at(s: float) -> dt.datetime:
    return BASE + dt.timedelta(seconds=s)


# the library must work offline; one worker imports it (seconds), where it is installed (tests/conftest.py)
pytestmark = [
    pytest.mark.usefixtures("no_network"),
    pytest.mark.xdist_group("goodput"),
    needs("ml_goodput_measurement", extra="test"),
]


def startup(rec, t: float) -> float:
    """job start at t; TPU init t+1..t+11; training preparation t+11..t+21; data loading t+21..t+25."""
    rec.record_job_start_time(at(t))
    rec.record_tpu_init_start_time(at(t + 1))
    rec.record_tpu_init_end_time(at(t + 11))
    rec.record_training_preparation_start_time(at(t + 11))
    rec.record_training_preparation_end_time(at(t + 21))
    rec.record_data_loading_start_time(at(t + 21))
    rec.record_data_loading_end_time(at(t + 25))
    return t + 25


def side_by_side(tmp_path: Path, script) -> tuple[dict, dict, dict]:
    """(library results, ETT job summary row, import report) for one recorded timeline."""
    from ml_goodput_measurement.src import goodput

    log = MemoryLogger()
    rec = goodput.GoodputRecorder(JOB, "ett-test", True, log)
    script(rec, log)
    calc = goodput.GoodputCalculator(JOB, "ett-test", log, cache_dir=str(tmp_path / "cache"))
    pct, _breakdown, _step = calc.get_job_goodput(include_badput_breakdown=True)
    info = calc._goodput_cache.get_goodput_info()
    lib = {
        "goodput_pct": pct,
        "productive_s": info.total_productive_time,
        "disruptions": info.number_of_disruptions,
        "job_s": info.total_elapsed_time,
        **{k.name: v for k, v in info.total_unproductive_time.items()},
    }
    entries = tmp_path / "entries.jsonl"
    entries.write_text("".join(json.dumps(e) + "\n" for e in log.entries))
    frames, report = import_entries(entries, synthetic=True)
    out = write_import(tmp_path / "trace", frames, report)
    assert json.loads((out / "trace.json").read_text())["synthetic"] is True
    row = metric.job_summary(load_trace(out)).row(0, named=True)
    rep = json.loads((out / "import_report.json").read_text())
    assert_every_second_accounted(rep, row)
    return lib, row, rep


def assert_every_second_accounted(report: dict, row: dict) -> None:
    """The import report's time accounting covers the wall time the metric measures, second for second: its rows add up
    to the wall, 'no span' is the metric's unattributed time and 'between attempts' its scheduling time."""
    acc = report["files"][0]["time_accounting"][row["job_id"]]
    by = {}
    for r in acc["rows"]:
        by[r["category"]] = by.get(r["category"], 0) + r["seconds"]
    assert acc["wall_s"] == pytest.approx(row["wall_s"], abs=2e-3)
    assert sum(by.values()) == pytest.approx(row["wall_s"], abs=2e-3)
    assert by.get("no span", 0) == pytest.approx(row["unattributed_s"], abs=2e-3)
    assert by.get("between attempts", 0) == pytest.approx(row["scheduling_s"], abs=2e-3)


def test_clean_run_agrees_component_by_component(tmp_path):
    """Start-up 0-30 (TPU init 1-11, preparation 11-21, data loading 21-25, idle 0-1 and 25-30); steps 0-9 of
    3 s from 30, with an evaluation (custom badput, 45-50) and a checkpoint save blocking 50-52 between
    steps 4 and 5; job end 67.  Productive = 10 steps x 3 s = 30 of 67 s = 44.776%."""

    def script(rec, log):
        t = startup(rec, 0) + 5
        for step in range(10):
            rec.record_step_start_time(step, at(t))
            t += 3
            if step == 4:
                rec.record_custom_badput_event_start_time(at(t), "eval")
                rec.record_custom_badput_event_end_time(at(t + 5), "eval")
                log.write_cloud_logging_entry(
                    {  # orbax's checkpoint logger writes save records to the same log
                        "job_name": JOB,
                        "step": 5,
                        "event_type": "save",
                        "directory": "gs://bucket/ckpt",
                        "wait_for_prev_start_time": at(t + 5).timestamp(),
                        "wait_for_prev_duration_secs": 0.0,
                        "checkpointer_blocking_start_time": at(t + 5).timestamp(),
                        "checkpointer_blocking_duration_secs": 2.0,
                        "get_old_steps_start_time": at(t + 7).timestamp(),
                        "get_old_steps_duration_secs": 0.0,
                        "checkpoint_manager_blocking_start_time": at(t + 5).timestamp(),
                        "checkpoint_manager_blocking_duration_secs": 2.0,
                    }
                )
                t += 7
        rec.record_job_end_time(at(t))

    lib, ett, _ = side_by_side(tmp_path, script)
    assert lib["job_s"] == pytest.approx(67) and ett["wall_s"] == pytest.approx(67)
    assert lib["productive_s"] == pytest.approx(30) and ett["productive_s"] == pytest.approx(30)
    assert lib["goodput_pct"] == pytest.approx(100 * 30 / 67) and ett["ett_pct"] == pytest.approx(100 * 30 / 67)
    # start-up phases, one to one
    assert ett["hardware_setup_s"] == pytest.approx(lib["TPU_INITIALIZATION"]) == pytest.approx(10)
    assert ett["trainer_init_s"] == pytest.approx(lib["TRAINING_PREP"] + lib["DATA_LOADING_SYNC"]) == pytest.approx(14)
    assert ett["tts_s"] == pytest.approx(30)
    # blocking work in the loop: custom badput (eval) + checkpoint save = the trace's wasted training
    assert (
        ett["wasted_training_s"]
        == pytest.approx(lib["CUSTOM_BADPUT_EVENTS"]["EVAL"] + lib["UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"])
        == pytest.approx(7)
    )
    assert ett["in_training_loss_s"] == pytest.approx(7)
    # what neither names: the idle seconds 0-1 and 25-30
    assert ett["unattributed_s"] == pytest.approx(lib["OTHER"]) == pytest.approx(6)
    assert lib["disruptions"] == ett["nof"] == 0


def restart_script(replay_step_s: float):
    """Attempt 0: start-up 0-25, steps 0-9 every 3 s from 30 (step 9 starts at 57), then the job dies
    (checkpoint at step 5).  Attempt 1: job start at 70, start-up 70-95, steps 5-14 every
    ``replay_step_s`` from 100, job end one step after step 14."""

    def script(rec, log):
        t = startup(rec, 0) + 5
        for step in range(10):
            rec.record_step_start_time(step, at(t))
            t += 3
        t = startup(rec, 70) + 5
        for step in range(5, 15):
            rec.record_step_start_time(step, at(t))
            t += replay_step_s
        rec.record_job_end_time(at(t))

    return script


def test_restart_replay_versus_wasted_progress_equal_speed(tmp_path):
    """Library: steps 0-5 of attempt 0 productive (15 s), its steps 5-9 wasted (57 - 42 = 12 s), 57-70 infrastructure
    recovery (13 s), attempt 1 all productive (10 steps x 3 s = 30 s): 45 of 130 s.  ETT: attempt 0 all
    productive (30-57, 27 s), attempt 1 replays cursor 5-9 (100-112, 12 s) and then is productive (112-130, 18 s):
    45 of 130 s.  Same total, from opposite attempts."""
    lib, ett, _ = side_by_side(tmp_path, restart_script(3))
    assert lib["productive_s"] == pytest.approx(45) and ett["productive_s"] == pytest.approx(45)
    assert lib["goodput_pct"] == pytest.approx(ett["ett_pct"]) == pytest.approx(100 * 45 / 130)
    assert ett["wasted_training_s"] == pytest.approx(lib["WASTED_PROGRESS_FROM_DISRUPTION"]) == pytest.approx(12)
    assert ett["scheduling_s"] == pytest.approx(lib["INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION"]) == pytest.approx(13)
    assert ett["hardware_setup_s"] == pytest.approx(lib["TPU_INITIALIZATION"]) == pytest.approx(20)
    assert lib["disruptions"] == ett["nof"] == 1
    # recovery window: last productive instant 57 to the first new-data instant 112
    assert ett["ttr_total_s"] == pytest.approx(55)


def test_restart_replay_versus_wasted_progress_faster_replay(tmp_path):
    """As above with 2 s steps after the restart (steps 5-14 from 100, job end 120).  Library: 15 + 10 x 2 = 35 s
    productive (29.167%), still 12 s wasted (the lost steps, timed in attempt 0).  ETT: 27 + (120 - 108) = 39 s
    (32.500%), 8 s replay (cursor 5-9 in attempt 1, 100-108).  Difference 4 s = 12 s lost - 8 s replayed."""
    lib, ett, _ = side_by_side(tmp_path, restart_script(2))
    assert lib["productive_s"] == pytest.approx(35) and lib["goodput_pct"] == pytest.approx(100 * 35 / 120)
    assert ett["productive_s"] == pytest.approx(39) and ett["ett_pct"] == pytest.approx(100 * 39 / 120)
    assert lib["WASTED_PROGRESS_FROM_DISRUPTION"] == pytest.approx(12) and ett["wasted_training_s"] == pytest.approx(8)
    assert ett["productive_s"] - lib["productive_s"] == pytest.approx(
        lib["WASTED_PROGRESS_FROM_DISRUPTION"] - ett["wasted_training_s"]
    )


def test_restart_that_does_not_repeat_a_step(tmp_path):
    """Attempt 0: steps 0-4 every 3 s from 30 (step 4 starts at 42), then the job dies with step 5 checkpointed.
    Attempt 1: job start 60, start-up 60-85, resumes at step 5 at 90, steps 5-9 every 3 s, job end 105.
    No step number repeats, so the library sees no disruption: 'step 4' lasts 42-90 = 48 s and counts as
    productive: 12 + 48 + 12 + 3 = 75 of 105 s (71.43%).  The trace has two attempts (two job starts): step 4
    has no known end in attempt 0, productive = 12 + 15 = 27 s (25.71%), one interruption, recovery 42-90."""

    def script(rec, log):
        t = startup(rec, 0) + 5
        for step in range(5):
            rec.record_step_start_time(step, at(t))
            t += 3
        t = startup(rec, 60) + 5
        for step in range(5, 10):
            rec.record_step_start_time(step, at(t))
            t += 3
        rec.record_job_end_time(at(t))

    lib, ett, report = side_by_side(tmp_path, script)
    assert lib["disruptions"] == 0 and ett["nof"] == 1
    assert lib["productive_s"] == pytest.approx(75) and lib["goodput_pct"] == pytest.approx(100 * 75 / 105)
    assert ett["productive_s"] == pytest.approx(27) and ett["ett_pct"] == pytest.approx(100 * 27 / 105)
    assert lib["productive_s"] - ett["productive_s"] == pytest.approx(90 - 42)
    assert ett["ttr_total_s"] == pytest.approx(90 - 42)
    notes = report["files"][0]["notes"]
    assert any("last step of an attempt" in n["what"] for n in notes)
    assert any("attempt 0 end" in n["what"] and "failure" in n["why"] for n in notes)


# --- the importer on its own --------------------------------------------------------------------------


def run_ett(argv: list[str]) -> int:
    """The ``ett`` command."""
    return cli.main(argv)


def test_cli_import_goodput_and_running_job(tmp_path):
    lines = [
        {"job_name": "a", "job_start_time": 1700001000.0},
        {
            "jsonPayload": {"job_name": "a", "step_count": 0, "step_start_time": 1700001010.0}
        },  # as exported from Cloud Logging
        {"job_name": "a", "step_count": 1, "step_start_time": 1700001013.0},
        {"job_name": "a", "step_count": 2, "step_start_time": 1700001016.0},
    ]
    src = tmp_path / "entries.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert run_ett(["import", "goodput", str(src), "--gpus", "8", "--out", str(tmp_path / "t")]) == 0
    frames, report = import_entries(src, gpus=8)
    assert frames.attempts["end_reason"].to_list() == ["running"] and frames.attempts["end"].to_list() == [None]
    assert frames.jobs["gpus"].to_list() == [8]
    train = frames.spans.filter(frames.spans["phase"] == "train")
    assert train["cursor_start"].to_list() == [0.0, 1.0] and train["cursor_end"].to_list() == [1.0, 2.0]
    assert json.loads((tmp_path / "t" / "trace.json").read_text())["synthetic"] is False


def test_bad_entries_name_file_row_and_field(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text(
        '{"job_name": "a", "job_start_time": 1700001000.0}\n{"job_name": "a", "step_count": "x", "step_start_time": '
        "1700001010.0}\n"
    )
    with pytest.raises(TraceError) as exc:
        import_entries(src)
    p = exc.value.problems[0]
    assert (p.file, p.row, p.field) == (str(src), 2, "step_count")
    src.write_text('{"job_name": "a", "job_start_time": 1700001000.0}\nnot json\n')
    with pytest.raises(TraceError) as exc:
        import_entries(src)
    assert (exc.value.problems[0].row, exc.value.problems[0].file) == (2, str(src))
    src.write_text('{"job_name": "a", "step_count": 0, "step_start_time": 1700001010.0}\n')
    with pytest.raises(TraceError) as exc:
        import_entries(src)
    assert exc.value.problems[0].field == "job_start_time"


# --- exports as Cloud Logging writes them ------------------------------------------


def record(script) -> list[dict]:
    """The entries a recorded timeline writes, in write order (oldest first)."""
    from ml_goodput_measurement.src import goodput

    log = MemoryLogger()
    script(goodput.GoodputRecorder(JOB, "ett-test", True, log), log)
    return log.entries


def two_attempts_with_evaluations(rec, log):
    """Attempt 0: start-up 0-25, steps 0-9 every 3 s from 30, an evaluation 45-50 after step 4 (steps move by 5 s),
    the job dies at 62.  Attempt 1: job start 70, start-up 70-95, steps 5-14 every 3 s from 100 with an evaluation
    115-120 after step 9, job end 135."""
    for t0, first in ((0, 0), (70, 5)):
        t = startup(rec, t0) + 5
        for step in range(first, first + 10):
            rec.record_step_start_time(step, at(t))
            t += 3
            if step == first + 4:
                rec.record_custom_badput_event_start_time(at(t), "eval")
                rec.record_custom_badput_event_end_time(at(t + 5), "eval")
                t += 5
    rec.record_job_end_time(at(t))


def _write_jsonl(path: Path, entries: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def _imported(path: Path, tmp_path: Path, name: str):
    frames, report = import_entries(path, synthetic=True)
    out = write_import(tmp_path / name, frames, report)
    return frames, report, metric.job_summary(load_trace(out)).row(0, named=True)


def _same_frames(a, b):
    for x, y in (
        (a.attempts, b.attempts),
        (a.spans, b.spans),
        (a.jobs.drop("source_file"), b.jobs.drop("source_file")),
    ):
        assert x.equals(y), (x, y)


def test_newest_first_export_pairs_every_interval_by_time(tmp_path):
    """`gcloud logging read` lists the newest entry first.  The same entries in that order give the same trace: both
    evaluations, both start-ups, no 'data_warmup ends before it starts'.  Hand-worked: productive = attempt 0's steps
    0-8 (9 x 3 s; step 9 never ends) + attempt 1's steps 9-14 (18 s; steps 5-8 are replay) = 45 s of 135 s."""
    entries = record(two_attempts_with_evaluations)
    fwd = _imported(_write_jsonl(tmp_path / "oldest-first.jsonl", entries), tmp_path, "a")
    rev = _imported(_write_jsonl(tmp_path / "newest-first.jsonl", entries[::-1]), tmp_path, "b")
    _same_frames(fwd[0], rev[0])
    for row in (fwd[2], rev[2]):
        assert row["wall_s"] == pytest.approx(135) and row["productive_s"] == pytest.approx(45)
        assert row["hardware_setup_s"] == pytest.approx(20) and row["trainer_init_s"] == pytest.approx(28)
    assert rev[0].spans.filter(pl.col("phase") == "eval").height == 2


def test_gcloud_json_array_newest_first(tmp_path):
    """`gcloud logging read --format=json`: one JSON array of LogEntry objects (payload under jsonPayload),
    pretty-printed, newest first.  Imported like the JSON lines; line numbers point at each entry's first line."""
    entries = record(two_attempts_with_evaluations)
    log_entries = [
        {
            "insertId": f"id{k:04d}",
            "jsonPayload": e,
            "logName": "projects/p/logs/goodput",
            "severity": "INFO",
            "timestamp": "2025-03-01T00:00:00Z",
        }
        for k, e in enumerate(entries)
    ]
    arr = tmp_path / "gcloud.json"
    arr.write_text(json.dumps(log_entries[::-1], indent=2))
    fwd = _imported(_write_jsonl(tmp_path / "lines.jsonl", entries), tmp_path, "a")
    got = _imported(arr, tmp_path, "b")
    _same_frames(fwd[0], got[0])
    assert got[2]["ett_pct"] == pytest.approx(fwd[2]["ett_pct"])
    from ettcore.importers.goodput import read_entries

    rows = [e.row for e in read_entries(arr)]
    text = arr.read_text().splitlines()
    assert rows[0] == 2 and all(text[r - 1].strip() == "{" for r in rows)


def test_a_file_that_is_neither_json_lines_nor_an_array_is_one_error(tmp_path):
    pretty = tmp_path / "pretty.json"
    pretty.write_text(
        json.dumps({"job_name": "a", "job_start_time": 1700001000.0}, indent=2)
    )  # one object over 4 lines
    csv_like = tmp_path / "entries.csv"
    csv_like.write_text(
        "job_name,step_count,step_start_time\n" + "".join(f"a,{k},{1700001000 + k}\n" for k in range(120))
    )
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps([{"jsonPayload": {"job_name": "a", "job_start_time": 1700001000.0}}] * 3, indent=2)[:-40])
    for f in (pretty, csv_like, cut):
        with pytest.raises(TraceError) as exc:
            import_entries(f)
        (p,) = exc.value.problems
        assert p.file == str(f) and "expected" in p.message and "JSON array" in p.message, p
    with pytest.raises(TraceError) as exc:
        import_entries(cut)
    assert exc.value.problems[0].row is not None and exc.value.problems[0].row > 1  # where the array breaks off


def test_implausible_checkpoint_time_is_dropped_with_a_note(tmp_path):
    """The library's own checkpoint test writes save/restore records with start times of 10 s after the epoch: it adds
    their durations and never places them.  One such record is dropped and noted like any other unusable entry; the
    rest of the import is the import without it."""
    entries = record(two_attempts_with_evaluations)
    base = _imported(_write_jsonl(tmp_path / "base.jsonl", entries), tmp_path, "a")
    bad = {
        "job_name": JOB,
        "step": 1,
        "event_type": "save",
        "checkpoint_manager_blocking_start_time": 10.0,
        "checkpoint_manager_blocking_duration_secs": 6.0,
    }
    src = _write_jsonl(tmp_path / "bad.jsonl", entries[:12] + [bad] + entries[12:])
    frames, report, row = _imported(src, tmp_path, "b")
    _same_frames(base[0], frames)
    notes = [n for n in report.files[0].notes if n.kind == "dropped" and "checkpoint" in n.what]
    assert len(notes) == 1 and notes[0].rows == [13] and "1990..2100" in notes[0].why
    outside = report.files[0].time_accounting[JOB]["outside"]
    assert any(r["seconds"] == pytest.approx(6.0) and "checkpoint" in r["what"] for r in outside)


def test_memory_logger_honours_incremental_reads(tmp_path):
    """A calculator asked twice reads only what is new the second time (start_time / last_entry_info), as Cloud Logging
    does.  Job start 0, steps 0-4 every 3 s from 5; first query; steps 5-9, job end 35; second query: 30 of 35 s."""
    from ml_goodput_measurement.src import goodput

    log = MemoryLogger()
    rec = goodput.GoodputRecorder(JOB, "ett-test", True, log)
    calc = goodput.GoodputCalculator(JOB, "ett-test", log, cache_dir=str(tmp_path / "cache"))
    rec.record_job_start_time(at(0))
    for s in range(5):
        rec.record_step_start_time(s, at(5 + 3 * s))
    calc.get_job_goodput()
    for s in range(5, 10):
        rec.record_step_start_time(s, at(5 + 3 * s))
    rec.record_job_end_time(at(35))
    pct, _, last = calc.get_job_goodput()
    info = calc._goodput_cache.get_goodput_info()
    assert info.total_elapsed_time == pytest.approx(35) and info.total_productive_time == pytest.approx(30)
    assert pct == pytest.approx(100 * 30 / 35) and last == 9
    assert len(list(calc._goodput_cache.get_cached_entries())) == 12  # each entry read once
    entries, info2 = log.read_cloud_logging_entries(last_entry_info=None)
    assert len(entries) == 12 and info2[0] is not None


def test_first_step_above_the_typical_step_is_compilation(tmp_path):
    """Start-up 0-30; step 0 takes 15 s (30-45), steps 1-9 take 3 s, job end 72.  The typical step is 3 s, so 12 s of
    step 0 is compilation (the library's PROGRAM_STARTUP): pt2_compile = 12 s, productive 30 of 72 s in both."""

    def script(rec, log):
        t = startup(rec, 0) + 5
        for step in range(10):
            rec.record_step_start_time(step, at(t))
            t += 15 if step == 0 else 3
        rec.record_job_end_time(at(t))

    lib, ett, report = side_by_side(tmp_path, script)
    assert ett["pt2_compile_s"] == pytest.approx(lib["PROGRAM_STARTUP"]) == pytest.approx(12)
    assert ett["ett_pct"] == pytest.approx(lib["goodput_pct"]) == pytest.approx(100 * 30 / 72)
    notes = report["files"][0]["notes"]
    assert any(n["kind"] == "inferred" and "pt2_compile" in n["what"] and "typical" in n["why"] for n in notes)
    rows = report["files"][0]["time_accounting"][JOB]["rows"]
    assert any(
        r["category"] == "inferred" and "compil" in r["what"] and r["seconds"] == pytest.approx(12) for r in rows
    )


def test_step_rollback_without_a_job_start_is_an_interruption(tmp_path):
    """Steps 0-9 every 3 s from 30 (step 9 starts at 57), then step 5 is logged again at 62 with no job start (an
    in-process restart from the step-5 checkpoint), steps 5-14 every 3 s, job end 92.  The library counts a disruption;
    the import ends attempt 0 there as a failure and starts attempt 1 at 62 with no re-queue gap: NoF 1, scheduling 0.
    Productive: steps 0-8 (27 s; step 9 never finished) + steps 9-14 of attempt 1 (74-92, 18 s; steps 5-8, 62-74, are
    replay); recovery from the last productive instant (57) to the first new data (74, step 9 again)."""

    def script(rec, log):
        t = startup(rec, 0) + 5
        for step in range(10):
            rec.record_step_start_time(step, at(t))
            t += 3
        t += 2
        for step in range(5, 15):
            rec.record_step_start_time(step, at(t))
            t += 3
        rec.record_job_end_time(at(t))

    lib, ett, report = side_by_side(tmp_path, script)
    assert lib["disruptions"] == 1 and ett["nof"] == 1
    assert ett["attempts"] == 2 and ett["scheduling_s"] == 0
    assert ett["wall_s"] == pytest.approx(92) and ett["productive_s"] == pytest.approx(27 + 18)
    assert ett["ttr_total_s"] == pytest.approx(74 - 57) and ett["in_training_loss_s"] == 0
    assert ett["wasted_training_s"] == pytest.approx(lib["WASTED_PROGRESS_FROM_DISRUPTION"]) == pytest.approx(74 - 62)
    assert ett["ett_pct"] == pytest.approx(lib["goodput_pct"]) == pytest.approx(100 * 45 / 92)
    notes = report["files"][0]["notes"]
    assert any("rollback" in n["what"] and "interruption" in n["why"] for n in notes)


def test_end_before_any_start_and_checkpoint_without_duration_are_dropped_with_notes(tmp_path):
    """Paired in time order, a tpu_init end dated before its start is an end without a start and a start without an end:
    both dropped and named (they used to abort the import).  A save record without its blocking duration cannot be
    placed: dropped and named too.  The steps still give 4 x 10 s of training (steps 0-3, step 4 to job end 20 s)."""
    t = 1767571200.0
    src = _write_jsonl(
        tmp_path / "e.jsonl",
        [
            {"job_name": "gp", "job_start_time": t},
            {"job_name": "gp", "tpu_init_start_time": t + 1},
            {"job_name": "gp", "tpu_init_end_time": t + 0.5},
            {"job_name": "gp", "event_type": "save", "step": 2, "checkpoint_manager_blocking_start_time": t + 35},
            *[{"job_name": "gp", "step_count": k, "step_start_time": t + 20 + 10 * k} for k in range(5)],
            {"job_name": "gp", "job_end_time": t + 80},
        ],
    )
    frames, report, row = _imported(src, tmp_path, "t")
    notes = {(n.kind, n.what): n.rows for n in report.files[0].notes}
    assert notes[("dropped", "'tpu_init_start_time' start without an end")] == [2]
    assert notes[("dropped", "'tpu_init_start_time' end without a start")] == [3]
    assert notes[("dropped", "checkpoint record that cannot be placed")] == [4]
    assert row["productive_s"] == pytest.approx(60) and row["hardware_setup_s"] == 0
