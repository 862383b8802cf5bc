"""ml-goodput-measurement and ettcore side by side, on the same recorded timelines.

Each case records a timeline through the library's own ``GoodputRecorder`` into
an in-memory ``cloud_logger`` (no Google Cloud, no network: sockets are
blocked for these tests), then

- runs the library's ``GoodputCalculator`` on those entries, and
- writes the entries as JSON lines, imports them with ``ett import goodput``
  and computes the ETT metric.

The timelines are synthetic (made up for the test; the traces say
``"synthetic": true``).  Seconds from the job's start, expected values worked
out by hand in each case's docstring.  Where the two agree and why they differ:

| case | goodput (library) | ETT% | why |
|---|---|---|---|
| clean run, eval + checkpoint save in the loop | 44.78 | 44.78 | same definitions: start-up, blocking events, the last step to job end |
| slow first step | 41.67 | 58.33 | the library moves first-step time above the mean step into PROGRAM_STARTUP (12 s); a trace has no such split, the step is training |
| restart repeating steps, same speed | 34.62 | 34.62 | the library wastes the *lost* steps of the failed attempt, ETT the *replayed* steps of the next; equal when they take equal time |
| restart repeating steps, faster replay | 29.17 | 32.50 | same, unequal: the difference is the lost steps' time minus the replay's (12 s - 8 s) |
| restart that does not repeat a step | 71.43 | 25.71 | the library sees no disruption (it detects one only by a repeated step number) and counts the whole outage inside "step 4" as productive; the trace has a new attempt (a job start) and counts it as recovery |
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import socket
from pathlib import Path

import pytest

from ettcore.importers.goodput import MemoryLogger

from ettcore import cli, metric
from ettcore.importers import register
from ettcore.errors import TraceError
from ettcore.importers.frames import write_import
from ettcore.importers.goodput import import_entries
from ettcore.trace import load_trace

goodput = pytest.importorskip("ml_goodput_measurement.src.goodput", reason="test extra: ml-goodput-measurement")
BadputType = goodput.BadputType

BASE = dt.datetime(2025, 3, 1, tzinfo=dt.timezone.utc)
JOB = "gp-test"


def at(s: float) -> dt.datetime:
    return BASE + dt.timedelta(seconds=s)


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


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
    log = MemoryLogger()
    rec = goodput.GoodputRecorder(JOB, "ett-test", True, log)
    script(rec, log)
    calc = goodput.GoodputCalculator(JOB, "ett-test", log, cache_dir=str(tmp_path / "cache"))
    pct, _breakdown, _step = calc.get_job_goodput(include_badput_breakdown=True)
    info = calc._goodput_cache.get_goodput_info()
    lib = {"goodput_pct": pct, "productive_s": info.total_productive_time, "disruptions": info.number_of_disruptions,
           "job_s": info.total_elapsed_time, **{k.name: v for k, v in info.total_unproductive_time.items()}}
    entries = tmp_path / "entries.jsonl"
    entries.write_text("".join(json.dumps(e) + "\n" for e in log.entries))
    frames, report = import_entries(entries, synthetic=True)
    out = write_import(tmp_path / "trace", frames, report)
    assert json.loads((out / "trace.json").read_text())["synthetic"] is True
    row = metric.job_summary(load_trace(out)).row(0, named=True)
    return lib, row, json.loads((out / "import_report.json").read_text())


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
                log.write_cloud_logging_entry({  # orbax's checkpoint logger writes save records to the same log
                    "job_name": JOB, "step": 5, "event_type": "save", "directory": "gs://bucket/ckpt",
                    "wait_for_prev_start_time": at(t + 5).timestamp(), "wait_for_prev_duration_secs": 0.0,
                    "checkpointer_blocking_start_time": at(t + 5).timestamp(), "checkpointer_blocking_duration_secs": 2.0,
                    "get_old_steps_start_time": at(t + 7).timestamp(), "get_old_steps_duration_secs": 0.0,
                    "checkpoint_manager_blocking_start_time": at(t + 5).timestamp(),
                    "checkpoint_manager_blocking_duration_secs": 2.0})
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
    assert ett["wasted_training_s"] == pytest.approx(lib["CUSTOM_BADPUT_EVENTS"]["EVAL"] + lib["UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"]) == pytest.approx(7)
    assert ett["in_training_loss_s"] == pytest.approx(7)
    # what neither names: the idle seconds 0-1 and 25-30
    assert ett["unattributed_s"] == pytest.approx(lib["OTHER"]) == pytest.approx(6)
    assert lib["disruptions"] == ett["nof"] == 0


def test_slow_first_step_is_program_startup_only_for_the_library(tmp_path):
    """Same start-up; step 0 takes 15 s (30-45), steps 1-9 take 3 s, job end 72.  The library: first step
    15 s, mean of the others 3 s, so PROGRAM_STARTUP = 12 s and productive = 42 - 12 = 30 (41.667%).  The trace
    has no way to split a step: productive = 42 (58.333%)."""

    def script(rec, log):
        t = startup(rec, 0) + 5
        for step in range(10):
            rec.record_step_start_time(step, at(t))
            t += 15 if step == 0 else 3
        rec.record_job_end_time(at(t))

    lib, ett, _ = side_by_side(tmp_path, script)
    assert lib["PROGRAM_STARTUP"] == pytest.approx(12)
    assert lib["productive_s"] == pytest.approx(30) and lib["goodput_pct"] == pytest.approx(100 * 30 / 72)
    assert ett["productive_s"] == pytest.approx(42) and ett["ett_pct"] == pytest.approx(100 * 42 / 72)
    assert ett["productive_s"] - lib["productive_s"] == pytest.approx(lib["PROGRAM_STARTUP"])


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
    assert ett["productive_s"] - lib["productive_s"] == pytest.approx(lib["WASTED_PROGRESS_FROM_DISRUPTION"] - ett["wasted_training_s"])


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
    """The ``ett`` command; ``import`` via this package's ``register`` until the CLI lists it as a plugin."""
    if "ettcore.importers" in cli.PLUGINS:
        return cli.main(argv)
    parser = argparse.ArgumentParser(prog="ett")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_import_goodput_and_running_job(tmp_path):
    lines = [
        {"job_name": "a", "job_start_time": 1700001000.0},
        {"jsonPayload": {"job_name": "a", "step_count": 0, "step_start_time": 1700001010.0}},  # as exported from Cloud Logging
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
    src.write_text('{"job_name": "a", "job_start_time": 1700001000.0}\n{"job_name": "a", "step_count": "x", "step_start_time": 1700001010.0}\n')
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
