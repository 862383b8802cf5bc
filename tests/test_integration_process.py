"""The framework-independent parts of ``ettcore.integrations``: the phase timeline and the process as an attempt.

No training framework is needed: the timeline runs on a hand-moved clock,
and the attempt's start and end are checked on real child processes (plain
Python) that exit normally, raise, receive SIGTERM, SIGINT or SIGKILL,
against bounds from the test's own clock (spawn before ``Popen``; the exit
watcher seen gone) and the child's (its first statement; the last instant
before it ends), which hold however slowly a busy machine runs them.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from ettcore import metric
from ettcore.config import PROJECT_ROOT
from ettcore.importers.recorder import collect, convert, read_records
from ettcore.integrations import process
from ettcore.integrations.phase_clock import PhaseClock
from ettcore.integrations.recorder import Recorder, RecorderWarning
from ettcore.trace import load_trace
from tools.campaigns.jobs.ground_truth import wait_for_exit_watchers

T0 = 1_800_000_000.0

pytestmark = pytest.mark.skipif(os.name != "posix", reason="uses POSIX signals and /proc")


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t

    def at(self, s: float) -> float:
        self.t = T0 + s
        return self.t


def _rows(run: Path) -> list[tuple]:
    spans = collect(run).spans.with_columns(
        s=(pl.col("start").dt.epoch("us") / 1e6 - T0).round(3), e=(pl.col("end").dt.epoch("us") / 1e6 - T0).round(3)
    )
    return [tuple(r) for r in spans.select("phase", "stage", "s", "e", "cursor_start", "cursor_end").iter_rows()]


def _timeline(tmp_path: Path, clock: Clock, interval: float = 100.0) -> tuple[PhaseClock, Recorder]:
    rec = Recorder(tmp_path / "run", "j", 0, clock=clock)
    rec.attempt_start(t=T0)
    return PhaseClock(rec, progress_interval_s=interval, clock=clock), rec


# ---------------------------------------------------------------- the timeline


def test_one_phase_at_a_time_nested_phases_pause_the_one_below(tmp_path: Path) -> None:
    clk = Clock()
    tl, rec = _timeline(tmp_path, clk)
    tl.begin("trainer_init", "model_setup", clk.at(0))
    tl.begin("checkpoint_load", "read", clk.at(2))  # pauses model_setup
    tl.end("checkpoint_load", clk.at(3))  # model_setup resumes
    tl.switch("trainer_init", "eval", "sanity_check", clk.at(4))
    tl.end("eval", clk.at(5))
    tl.train_begin(10, clk.at(5))
    for k in range(1, 4):
        clk.at(5 + k)
        tl.step(10 + k)
    tl.begin("checkpoint_save", None, clk.at(8.5))  # the train span stops here, the save runs
    tl.end("checkpoint_save", clk.at(9.5))
    clk.at(10.5)
    tl.step(14)
    tl.begin("pt2_compile", "dynamo", clk.at(11))  # compilation inside an evaluation inside training
    tl.begin("eval", "validation", clk.at(11))
    tl.end("eval", clk.at(12))
    tl.end("pt2_compile", clk.at(12.5))
    clk.at(13.5)
    tl.step(15)
    tl.train_end(clk.at(13.5))
    rec.attempt_end("completed", t=clk.at(14))
    rec.close()
    assert _rows(tmp_path / "run") == [
        ("trainer_init", "model_setup", 0.0, 2.0, None, None),
        ("checkpoint_load", "read", 2.0, 3.0, None, None),
        ("trainer_init", "model_setup", 3.0, 4.0, None, None),
        ("eval", "sanity_check", 4.0, 5.0, None, None),
        ("train", None, 5.0, 8.5, 10.0, 13.0),
        ("checkpoint_save", None, 8.5, 9.5, None, None),
        ("train", None, 9.5, 11.0, 13.0, 14.0),
        ("pt2_compile", "dynamo", 11.0, 11.0, None, None),
        ("eval", "validation", 11.0, 12.0, None, None),
        ("pt2_compile", "dynamo", 12.0, 12.5, None, None),
        ("train", None, 12.5, 13.5, 14.0, 15.0),
    ]


def test_train_spans_are_written_every_progress_interval_at_a_step_end(tmp_path: Path) -> None:
    clk = Clock()
    tl, rec = _timeline(tmp_path, clk, interval=1.0)
    tl.train_begin(0, clk.at(0))
    for k in range(1, 11):  # a step every 0.4 s
        clk.at(0.4 * k)
        tl.step(k)
    train = [r for r in _rows(tmp_path / "run") if r[0] == "train"]
    # written at the first step end at least 1 s after the previous piece: 1.2 s (step 3), 2.4 s (step 6),
    # 3.6 s (step 9)
    assert [(r[2], r[3], r[4], r[5]) for r in train] == [(0.0, 1.2, 0, 3), (1.2, 2.4, 3, 6), (2.4, 3.6, 6, 9)]


def test_a_crash_ends_training_at_the_last_step_and_the_unfinished_step_is_replay(tmp_path: Path) -> None:
    clk = Clock()
    tl, rec = _timeline(tmp_path, clk)
    tl.train_begin(0, clk.at(0))
    for k in range(1, 6):
        clk.at(k)
        tl.step(k)
    tl.stop(clk.at(7.5), crashed=True)  # the step after step 5 never finished
    rec.attempt_end("failure", t=clk.at(8))
    rec.close()
    assert [r for r in _rows(tmp_path / "run") if r[0] == "train"] == [
        ("train", None, 0.0, 5.0, 0, 5),
        ("train", None, 5.0, 7.5, 5, 5),
    ]
    conv = convert(tmp_path / "run", tmp_path / "trace")
    assert conv.problems == []
    row = metric.job_summary(load_trace(tmp_path / "trace")).row(0, named=True)
    assert row["productive_s"] == pytest.approx(5.0, abs=1e-3)
    assert row["wasted_training_s"] == pytest.approx(2.5, abs=1e-3)  # the unfinished step


def test_phases_reported_only_when_over_are_carved_out_of_training(tmp_path: Path) -> None:
    """Hugging Face's on_evaluate / on_save: they started at the last step end."""
    clk = Clock()
    tl, rec = _timeline(tmp_path, clk)
    tl.train_begin(0, clk.at(0))
    clk.at(1)
    tl.step(1)
    tl.retro("eval", "evaluate", clk.at(3))
    tl.retro("checkpoint_save", None, clk.at(4))
    clk.at(5)
    tl.step(2)
    assert tl.last_boundary(clk.at(5.5)) == pytest.approx(T0 + 5)
    tl.train_end(tl.last_boundary())
    rec.close()
    assert _rows(tmp_path / "run") == [
        ("train", None, 0.0, 1.0, 0, 1),
        ("eval", "evaluate", 1.0, 3.0, None, None),
        ("checkpoint_save", None, 3.0, 4.0, None, None),
        ("train", None, 4.0, 5.0, 1, 2),
    ]


def test_ending_a_phase_that_is_not_open_does_nothing_and_a_null_timeline_records_nothing(tmp_path: Path) -> None:
    clk = Clock()
    tl, rec = _timeline(tmp_path, clk)
    assert tl.end("eval", clk.at(1)) is None
    null = PhaseClock(None, clock=clk)
    null.begin("trainer_init")
    null.train_begin(0)
    null.step(1)
    null.retro("eval")
    null.stop(crashed=True)
    assert null.watch_compiles() is False
    rec.close()
    assert _rows(tmp_path / "run") == []


# ---------------------------------------------------------------- ids and the process start


def test_ids_come_from_the_arguments_then_the_environment_then_the_run_folder(tmp_path: Path, monkeypatch) -> None:
    for var in ("ETT_RUN_DIR", "ETT_JOB_ID", "ETT_ATTEMPT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT"):
        monkeypatch.delenv(var, raising=False)
    run = tmp_path / "my-job"
    with pytest.raises(ValueError, match="ETT_RUN_DIR"):
        process.resolve_run_dir(None)
    assert process.resolve_job_id(run) == "my-job"
    assert process.resolve_attempt(run, "my-job") == 0
    for attempt in (0, 1):
        Recorder(run, "my-job", attempt, writer="x").close()
    Recorder(run, "my-job-other", 7, writer="x").close()  # another job's files in the same folder do not count
    assert process.recorded_attempts(run, "my-job") == [0, 1]
    assert process.resolve_attempt(run, "my-job") == 2
    assert process.resolve_attempt(run, "my-job", 5) == 5
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "elastic-77")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "3")
    assert (process.resolve_job_id(run), process.resolve_attempt(run, "elastic-77")) == ("elastic-77", 3)
    monkeypatch.setenv("ETT_JOB_ID", "from-wrapper")
    monkeypatch.setenv("ETT_ATTEMPT", "4")
    assert (process.resolve_job_id(run), process.resolve_attempt(run, "x")) == ("from-wrapper", 4)
    assert process.resolve_job_id(run, "given") == "given"
    monkeypatch.setenv("ETT_RUN_DIR", str(run))
    assert process.resolve_run_dir(None) == run


def test_inside_a_slurm_job_the_ids_are_slurms_unless_torchrun_or_the_caller_give_them(
    tmp_path: Path, monkeypatch
) -> None:
    for var in (
        "ETT_JOB_ID",
        "ETT_ATTEMPT",
        "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_RESTART_COUNT",
        "SLURM_JOB_ID",
        "SLURM_ARRAY_JOB_ID",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_RESTART_COUNT",
    ):
        monkeypatch.delenv(var, raising=False)
    run = tmp_path / "run"
    Recorder(run, "4242", 0, writer="x").close()  # an earlier attempt in the folder must not decide the attempt
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert (process.resolve_job_id(run), process.resolve_attempt(run, "4242")) == ("4242", 0)  # first run: count unset
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    assert process.resolve_attempt(run, "4242") == 2
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "4200")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "7")
    assert process.resolve_job_id(run) == "4200_7"  # as sacct's JobID shows an array task
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    assert process.resolve_attempt(run, "4200_7") == 1
    assert process.resolve_job_id(run, "given") == "given"
    monkeypatch.setenv("SLURM_RESTART_COUNT", "abc")  # malformed: not Slurm's, the run folder decides
    monkeypatch.delenv("TORCHELASTIC_RESTART_COUNT")
    assert process.resolve_job_id(run) == "run"


def test_process_start_time_is_the_kernels() -> None:
    before = time.time()
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; first = time.time(); time.sleep(0.3); from ettcore.integrations"
            ".process import process_start_time as s; print(repr(s()), repr(first))",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
        check=True,
    )
    start, first = map(float, p.stdout.split())
    # the child started after `before` (10 ms kernel ticks) and before its first statement ran, not when it imported
    # ettcore at least 0.3 s after that statement (bounds from both clocks, however slowly the machine ran the child)
    assert before - 0.02 <= start <= first, (start - before, first - start)


def test_the_clock_offset_holds_when_the_process_waits_between_readings() -> None:
    """The kernel gives the start since boot; the offset to the wall clock takes two clocks read one after the other.
    A process descheduled between them (a busy machine) must not move the start by the time it waited: here the first
    readings are 0.3 s apart (a wait between them), the later ones 2 us, and the offset is off by at most 1 us."""
    boot_at_epoch = 1_800_000_000.0
    now = [5_000.0]  # seconds since boot
    waits = iter([0.0, 0.3, 0.0, 0.0, 0.0, 0.3] + [0.0] * 100)

    def advance() -> float:
        now[0] += 1e-6 + next(waits)
        return now[0]

    got = process.wall_minus_boot(wall=lambda: boot_at_epoch + advance(), boot=advance)
    assert got == pytest.approx(boot_at_epoch, abs=1e-6)
    # one pair of readings, as before, would have been off by the whole wait
    now[0], waits = 5_000.0, iter([0.0, 0.3])
    b = advance()
    assert abs(boot_at_epoch + advance() - b - boot_at_epoch) > 0.29


# ---------------------------------------------------------------- the attempt, in real child processes

CHILD = """
import os, signal, sys, time
print("first", repr(time.time()), flush=True)
from ettcore.integrations.process import Attempt
# SIGINT as Python sets it up in a foreground process (KeyboardInterrupt).  A process started from a background job of
# a shell (`cmd &`, as a CI script may be run) inherits SIGINT ignored, and Python then leaves it ignored: the
# watcher rightly keeps it so (mode sigint_ignored), and a SIGINT does nothing.
signal.signal(signal.SIGINT, signal.SIG_IGN if {mode!r} == "sigint_ignored" else signal.default_int_handler)
a = Attempt({run!r}, "child-job", None, writer="child", framework="test", progress_interval_s=0.2)
a.start(rank=0, model="none", gpus=1, setup_stage="setup")
tl = a.timeline
tl.end("trainer_init")
tl.train_begin(0)
a.watch_signals()
for step in range(1, 9):
    time.sleep(0.05)
    if step == 8:
        print("before-last-step", repr(time.time()), flush=True)
    tl.step(step)
mode = {mode!r}
print("last-step", repr(time.time()), flush=True)
# "leaving": the last instant this code saw before the action that ends the process (the end is at or after it)
if mode == "raise":
    time.sleep(0.2)
    print("leaving", repr(time.time()), flush=True)
    raise RuntimeError("injected")
# raise_signal sends the signal to this (the main) thread, which handles it at once.  (A fresh-clone run started in the
# background once saw this child exit 0 after its SIGINT: it had inherited SIGINT ignored, hence the reset above.)
if mode != "completed":
    print("leaving", repr(time.time()), flush=True)
if mode == "sigterm":
    signal.raise_signal(signal.SIGTERM)
if mode in ("sigint", "sigint_ignored"):
    signal.raise_signal(signal.SIGINT)
if mode == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
tl.train_end()
a.ended("completed")
time.sleep(0.2)
if mode == "completed":
    print("leaving", repr(time.time()), flush=True)
"""


@dataclass
class Child:
    """One run of CHILD: the test's clock around it, the child's own stamps (``first``, ``last-step`` ...), its exit."""

    spawn: float  # before the process was started
    seen: float  # after its exit watcher was gone (the end was on disk by then)
    returncode: int
    out: str
    stamps: dict[str, float]

    def check_attempt(self, att: dict) -> None:
        """The attempt is the process from its kernel start to its exit, within what both clocks bound.

        Start: after ``spawn`` (less one 10 ms kernel tick) and before the child's first statement.  End: after the
        last instant the child's code saw, and written by the exit watcher before the test saw the watcher gone.
        These hold however slowly a loaded machine runs the child, its watcher or the test.
        """
        start, end = att["start"].timestamp(), att["end"].timestamp()
        assert self.spawn - 0.02 <= start <= self.stamps["first"] + 0.001, (
            start - self.spawn,
            self.stamps["first"] - start,
        )
        assert self.stamps["leaving"] - 0.001 <= end <= self.seen + 0.001, (
            end - self.stamps["leaving"],
            self.seen - end,
        )


def _run_child(run: Path, mode: str) -> Child:
    spawn = time.time()
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD.format(run=str(run), mode=mode))],
        env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    seen = wait_for_exit_watchers(run)
    stamps = {w[0]: float(w[1]) for w in (ln.split() for ln in p.stdout.splitlines()) if len(w) == 2}
    return Child(spawn, seen, p.returncode, p.stdout + p.stderr, stamps)


@pytest.mark.parametrize(
    ("mode", "returncode", "reason", "cause"),
    [
        ("completed", 0, "completed", None),
        ("raise", 1, "failure", "user_error"),  # the RuntimeError, kept in the end record
        ("sigterm", -signal.SIGTERM, "preemption", "preemption"),
        ("sigint", -signal.SIGINT, "cancelled", None),  # KeyboardInterrupt, uncaught: Python then dies by SIGINT
        ("sigint_ignored", 0, "completed", None),  # SIGINT ignored when training began: the watcher leaves it ignored
        ("sigkill", -signal.SIGKILL, "failure", "unknown"),  # nothing ran at the kill: nothing says why
    ],
)
def test_the_attempt_is_the_process_start_to_exit_and_its_end_says_how(
    tmp_path: Path, mode: str, returncode: int, reason: str, cause: str | None
) -> None:
    run = tmp_path / "run"
    child = _run_child(run, mode)
    assert child.returncode == returncode, child.out
    conv = convert(run, tmp_path / "trace")
    att = conv.attempts.row(0, named=True)
    assert att["end_reason"] == reason
    assert att.get("cause") == cause
    (end,) = [r for f in sorted(run.glob("*.jsonl")) for r in read_records(f)[0] if r.data["k"] == "attempt_end"]
    if mode == "raise":
        assert end.data["exception"] == "RuntimeError: injected" and "signal" not in end.data
    elif mode == "sigterm":
        assert end.data["signal"] == signal.SIGTERM and "exception" not in end.data
    elif mode in ("completed", "sigkill"):
        assert "exception" not in end.data and "signal" not in end.data
    child.check_attempt(att)  # from the kernel's start of the process to its exit
    spans = conv.spans
    train = spans.filter(pl.col("phase") == "train")
    last_step = child.stamps["last-step"]
    if mode == "sigkill":  # nothing ran at the kill: the train span ends at its last written piece
        assert train["cursor_end"].max() >= 4 and train["end"].max().timestamp() <= last_step + 0.01
        assert spans.filter(pl.col("phase") == "shutdown").height == 0
    else:
        assert train["cursor_end"].max() == 8
        productive = train.filter(pl.col("cursor_end") > pl.col("cursor_start"))
        # training ended at the last step: the child's clock just before and just after that step's call
        assert child.stamps["before-last-step"] - 0.001 <= productive["end"].max().timestamp() <= last_step + 0.001
        stages = set(spans.filter(pl.col("phase") == "shutdown")["stage"])
        assert "interpreter_exit" in stages or mode == "sigterm"
    row = metric.job_summary(load_trace(tmp_path / "trace")).row(0, named=True)
    assert row["wall_s"] == pytest.approx(att["end"].timestamp() - att["start"].timestamp(), abs=0.002)
    assert row["nof"] == (0 if reason in ("completed", "cancelled") else 1)


PLAIN_LOOP = """
import signal, time
from ettcore.integrations.torchrun import record_worker
tl = record_worker({run!r}, job_id="plain", model="none", progress_interval_s=0.2)
tl.train_begin(0)
for step in range(1, 6):
    time.sleep(0.05)
    tl.step(step)
print("leaving", repr(time.time()), flush=True)
signal.raise_signal(signal.SIGTERM)
"""


def test_a_plain_loop_under_record_worker_records_a_sigterm_as_a_preemption(tmp_path: Path) -> None:
    """``record_worker`` (a plain PyTorch loop's recording, no framework) watches the preemption signals too."""
    run = tmp_path / "run"
    p = subprocess.run(
        [sys.executable, "-c", PLAIN_LOOP.format(run=str(run))],
        env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    wait_for_exit_watchers(run)
    assert p.returncode == -signal.SIGTERM, p.stdout + p.stderr  # it still dies by the signal
    conv = convert(run, tmp_path / "trace")
    att = conv.attempts.row(0, named=True)
    assert (att["end_reason"], att["cause"]) == ("preemption", "preemption")
    (end,) = [r for f in sorted(run.glob("*.jsonl")) for r in read_records(f)[0] if r.data["k"] == "attempt_end"]
    assert end.data["signal"] == signal.SIGTERM
    assert conv.spans.filter(pl.col("phase") == "train")["cursor_end"].max() == 5  # training ended at its last step


def test_restarted_processes_are_the_next_attempts_of_the_job(tmp_path: Path) -> None:
    run = tmp_path / "run"
    children = []
    for mode in ("raise", "completed"):
        if children:
            time.sleep(0.3)  # the re-queue
        children.append(_run_child(run, mode))
    conv = convert(run, tmp_path / "trace")
    assert conv.attempts["attempt"].to_list() == [0, 1]
    assert conv.attempts["end_reason"].to_list() == ["failure", "completed"]
    atts = list(conv.attempts.iter_rows(named=True))
    for child, att in zip(children, atts):
        child.check_attempt(att)
    start, end = [a["start"].timestamp() for a in atts], [a["end"].timestamp() for a in atts]
    # the re-queue is a gap between them
    assert end[0] <= children[0].seen <= children[1].spawn - 0.3 <= start[1] - 0.28
    row = metric.job_summary(load_trace(tmp_path / "trace")).row(0, named=True)
    assert row["wall_s"] == pytest.approx(end[1] - start[0], abs=0.002)
    assert row["scheduling_s"] == pytest.approx(start[1] - end[0], abs=0.002)  # the gap between the processes


def test_a_process_restarted_at_once_starts_when_the_previous_one_ended(tmp_path: Path) -> None:
    """The kernel's start time has 10 ms ticks: a restart within them must not overlap the previous attempt."""
    run = tmp_path / "run"
    for mode in ("raise", "raise", "completed"):
        _run_child(run, mode)
    conv = convert(run, tmp_path / "trace")
    load_trace(tmp_path / "trace")  # the data checks: attempts of one job never overlap
    starts, ends = conv.attempts["start"].to_list(), conv.attempts["end"].to_list()
    assert all(starts[k + 1] >= ends[k] for k in range(2))


def test_an_explicit_finish_ends_the_attempt_while_the_process_goes_on(tmp_path: Path) -> None:
    run = tmp_path / "run"
    a = process.Attempt(run, "in-process", None, writer="t", framework="test")
    a.start(rank=0)
    a.timeline.end("trainer_init")
    a.timeline.train_begin(0)
    a.timeline.step(1)
    a.timeline.train_end()
    a.ended("completed")
    t = time.time()
    a.finish(t)
    wait_for_exit_watchers(run)
    att = collect(run).attempts.row(0, named=True)
    assert att["end_reason"] == "completed" and att["end"].timestamp() == pytest.approx(t, abs=1e-3)
    a.finish()  # idempotent


def test_other_ranks_record_only_their_progress(tmp_path: Path) -> None:
    """A rank other than 0 writes no recorder file; it keeps its last progress (for live hang detection)."""
    a = process.Attempt(tmp_path / "run", "j", None, writer="t", framework="test")
    a.start(rank=1)
    a.timeline.train_begin(0)
    a.timeline.step(1)
    a.finish()
    run = tmp_path / "run"
    assert a.recorder is None and not list(run.glob("*.jsonl"))
    assert [p.name for p in (run / "progress").iterdir()] == ["j-rank-00001.json"]
    doc = json.loads((run / "progress" / "j-rank-00001.json").read_text())
    assert (doc["job_id"], doc["rank"], doc["step"], doc["cursor"]) == ("j", 1, 1, 1)


def test_an_explicit_finish_reaps_its_watcher_and_the_end_is_on_disk(tmp_path: Path) -> None:
    """finish() in a process that goes on waits for the exit watcher: no process left, no ResourceWarning later."""
    run = tmp_path / "run"
    a = process.Attempt(run, "j", None, writer="t", framework="test")
    a.start(rank=0)
    watcher = a.watch.proc
    a.finish()
    assert watcher.returncode == 0  # waited for, exited cleanly
    assert collect(run).attempts["end_reason"].to_list() == [
        "failure"
    ]  # no wait needed: written before finish returned
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del a, watcher
        gc.collect()
    assert [w.category for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_callback_errors_are_counted_and_warned_about_once(tmp_path: Path) -> None:
    a = process.Attempt(tmp_path / "run", "j", None, writer="t", framework="test")
    gc.collect()  # what earlier tests in this worker left to the collector warns before the block, not in it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a.error(RuntimeError("before the recorder"))
        a.start(rank=0)
        a.guard(lambda: 1 / 0)
        a.guard(lambda: [][1])
    assert a.errors == 3
    assert [w.category for w in caught] == [RecorderWarning]
    a.finish()


def test_the_exit_watcher_reads_the_last_report() -> None:
    assert process._parse_report(b"completed 12.5 -1 exit\n") == ("completed", 12.5, -1, "exit", {})
    assert process._parse_report(b"failure 1.0 -1 exit\npreemption 2.0 3 now\n") == ("preemption", 2.0, 3, "now", {})
    why = b'failure 1.0 -1 exit {"exception": "RuntimeError: a b\\nc", "signal": null}\n'
    assert process._parse_report(why) == ("failure", 1.0, -1, "exit", {"exception": "RuntimeError: a b\nc"})
    assert process._parse_report(b"completed 12.5 -1 ex") is None  # not a complete line yet
    assert process._parse_report(b"bogus 1 2 exit\n") is None
    assert json.dumps(process.REASONS)


def test_labels_become_job_columns_and_may_name_the_model_and_gpus(tmp_path: Path) -> None:
    a = process.Attempt(
        tmp_path / "run",
        "j",
        None,
        writer="t",
        framework="lightning",
        labels={"model": "ranker", "gpus": 8, "team": "feeds", "framework": "custom"},
    )
    a.start(rank=0, model="Regressor", gpus=1)
    a.finish()
    job = collect(tmp_path / "run").jobs.row(0, named=True)
    assert (job["model"], job["gpus"], job["team"], job["framework"]) == ("ranker", 8, "feeds", "custom")


def test_the_per_step_call_is_under_one_percent_of_a_10ms_step(tmp_path: Path) -> None:
    """PhaseClock.step per call, default progress interval, a real recorder (budget: 100 us; the framework's own
    dispatch of the hook is measured by benchmarks/callback_overhead.py).  The cost is this process's CPU time
    (user + system, the recorder's writes included), which other work on the machine does not inflate, as it does
    the wall clock."""
    rec = Recorder(tmp_path / "run", "j", 0)
    tl = PhaseClock(rec)
    tl.train_begin(0)
    n, best = 20_000, float("inf")
    for rep in range(5):
        t = time.process_time()
        for i in range(n):
            tl.step(rep * n + i)
        best = min(best, (time.process_time() - t) / n)
    tl.train_end()
    rec.close()
    assert best < 100e-6, f"PhaseClock.step costs {best * 1e6:.2f} us per step, over 1% of a 10 ms step"
