"""The trace recorder: format, crash safety (torn lines), failure isolation, Parquet on close, overhead."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import polars as pl
import pytest

from ettcore.config import PACKAGE_DIR
from ettcore.errors import TraceError
from ettcore.importers.recorder import collect, convert, read_records
from ettcore.integrations import recorder as recorder_mod
from ettcore.integrations.recorder import Recorder, RecorderWarning

T0 = 1_800_000_000.0  # 2027-01-15, a plausible epoch


class FakeClock:
    """A clock the test moves by hand (minutes for the spec's worked example)."""

    def __init__(self, t: float = T0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def at_min(self, minutes: float) -> None:
        self.t = T0 + 60.0 * minutes


def record_worked_example(run_dir: Path) -> None:
    """The trace spec's worked example (section 7), recorded through the recorder API."""
    clk = FakeClock()
    sup0 = Recorder(run_dir, "ex", 0, writer="supervisor", clock=clk)
    sup0.job(model="example", gpus=128, team="ranking")
    sup0.attempt_start()
    rec = Recorder(run_dir, "ex", 0, writer="trainer", clock=clk, progress_interval_s=60.0)
    for phase, a, b in (("hardware_setup", 0, 5), ("trainer_init", 5, 10), ("pt2_compile", 10, 20)):
        clk.at_min(a)
        with rec.phase(phase):
            clk.at_min(b)
    with rec.train_span(0) as span:  # 20-30, cursor 0-100
        for m in range(21, 31):
            clk.at_min(m)
            span.advance((m - 20) * 10)
    with rec.phase("checkpoint_save"):
        clk.at_min(31)
    with rec.train_span(100) as span:  # 31-45, cursor 100-240
        for m in range(32, 46):
            clk.at_min(m)
            span.advance(100 + (m - 31) * 10)
    rec.close()
    clk.at_min(50)  # nothing recorded 45-50: a hang until the failure is detected
    sup0.attempt_end("failure")
    sup0.close()

    clk.at_min(55)
    sup1 = Recorder(run_dir, "ex", 1, writer="supervisor", clock=clk)
    sup1.attempt_start()
    rec = Recorder(run_dir, "ex", 1, writer="trainer", clock=clk)
    for phase, a, b in (
        ("hardware_setup", 55, 58),
        ("trainer_init", 58, 62),
        ("checkpoint_load", 62, 64),
        ("pt2_compile", 64, 70),
    ):
        clk.at_min(a)
        with rec.phase(phase):
            clk.at_min(b)
    with rec.train_span(100) as span:  # 70-110, cursor 100-500
        for m in range(71, 111):
            clk.at_min(m)
            rec.advance(100 + (m - 70) * 10)  # the recorder-level advance reaches the open span
    with rec.phase("shutdown"):
        clk.at_min(120)
    rec.close()
    sup1.attempt_end("completed")
    sup1.close()


def test_worked_example_through_the_recorder_matches_the_spec(tmp_path: Path) -> None:
    from ettcore import metric
    from ettcore.trace import load_trace

    run = tmp_path / "run"
    record_worked_example(run)
    conv = convert(run, tmp_path / "trace")
    assert conv.problems == []
    for table in ("attempts", "spans", "jobs"):
        assert (tmp_path / "trace" / f"{table}.parquet").is_file()
    row = metric.job_summary(load_trace(tmp_path / "trace")).row(0, named=True)
    # expected values: the spec's section 7, in minutes
    assert row["wall_s"] == pytest.approx(120 * 60, abs=0.01)
    assert row["productive_s"] == pytest.approx(50 * 60, abs=0.01)
    assert row["ett_pct"] == pytest.approx(41.67, abs=0.01)
    assert row["tts_s"] == pytest.approx(20 * 60, abs=0.01)
    assert row["nof"] == 1
    assert row["ttr_total_s"] == pytest.approx(39 * 60, abs=0.01)
    assert row["in_training_loss_s"] == pytest.approx(60, abs=0.01)
    assert row["shutdown_tail_s"] == pytest.approx(600, abs=0.01)
    expect_l2 = {
        "scheduling": 5,
        "hardware_setup": 8,
        "trainer_init": 11,
        "pt2_compile": 16,
        "wasted_training": 15,
        "shutdown": 10,
        "unattributed": 5,
    }
    for comp, minutes in expect_l2.items():
        assert row[f"{comp}_s"] == pytest.approx(minutes * 60, abs=0.01), comp
    assert row["gpus"] == 128 and row["model"] == "example" and row["team"] == "ranking"


def test_every_line_is_a_json_record_with_job_and_attempt(tmp_path: Path) -> None:
    record_worked_example(tmp_path)
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) == 4  # supervisor and trainer, two attempts: one file per writer, never shared
    for f in files:
        raw = f.read_bytes()
        assert raw.endswith(b"\n")
        for line in raw.splitlines():
            rec = json.loads(line)
            assert rec["job_id"] == "ex" and rec["attempt"] in (0, 1) and rec["k"] in recorder_mod.RECORD_KINDS


# ---------------------------------------------------------------- torn lines and bad lines


def _simple_run(run: Path, clk: FakeClock | None = None) -> Path:
    clk = clk or FakeClock()
    rec = Recorder(run, "j", 0, clock=clk, progress_interval_s=1.0)
    rec.attempt_start()
    with rec.phase("trainer_init"):
        clk.t += 10
    with rec.train_span(0) as span:
        for i in range(1, 21):
            clk.t += 1
            span.advance(i)
    rec.attempt_end("completed")
    rec.close()
    assert rec.path is not None
    return rec.path


@pytest.mark.parametrize(
    "tail", [b'{"job_id":"j","attempt":0,"k":"progr', b'{"job_id":"j","att\x00\x00\x00\n', b"\xff\xfe garbage"]
)
def test_torn_final_line_is_reported_and_skipped_never_breaks_loading(tmp_path: Path, tail: bytes) -> None:
    from ettcore import metric
    from ettcore.trace import load_trace

    path = _simple_run(tmp_path / "run")
    n_lines = len(path.read_bytes().splitlines())
    with open(path, "ab") as fh:
        fh.write(tail)
    records, problems = read_records(path)
    assert len(records) == n_lines
    assert len(problems) == 1
    p = problems[0]
    assert p.file == str(path) and p.row == n_lines + 1 and "torn final line" in p.message
    conv = convert(tmp_path / "run", tmp_path / "trace")
    assert [q.row for q in conv.problems] == [n_lines + 1]
    meta = json.loads((tmp_path / "trace" / "trace.json").read_text())
    assert any("torn final line" in n for n in meta["recorder_notes"])
    row = metric.job_summary(load_trace(tmp_path / "trace")).row(0, named=True)
    assert row["wall_s"] == pytest.approx(30.0) and row["productive_s"] == pytest.approx(20.0)


def test_a_bad_line_before_the_end_is_an_error_naming_file_and_row(tmp_path: Path) -> None:
    path = _simple_run(tmp_path / "run")
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(2, b"{not json\n")
    path.write_bytes(b"".join(lines))
    with pytest.raises(TraceError) as err:
        convert(tmp_path / "run", tmp_path / "trace")
    (p,) = err.value.problems
    assert p.file == str(path) and p.row == 3
    assert not (tmp_path / "trace").exists()


def test_a_bad_field_is_an_error_naming_file_row_and_field(tmp_path: Path) -> None:
    path = _simple_run(tmp_path / "run")
    lines = path.read_text().splitlines(keepends=True)
    rec = json.loads(lines[1])
    rec["t" if "t" in rec else "start"] = "yesterday"
    lines[1] = json.dumps(rec) + "\n"
    path.write_text("".join(lines))
    with pytest.raises(TraceError) as err:
        collect(tmp_path / "run")
    (p,) = err.value.problems
    assert (p.file, p.row, p.field) == (str(path), 2, "t" if "t" in rec else "start")


def test_empty_or_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="does not exist"):
        collect(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match="no recorder files"):
        collect(tmp_path / "empty")


# ---------------------------------------------------------------- crashes


_CRASHING_CHILD = r"""
import os, signal, sys, time
from ettcore.integrations.recorder import Recorder
run, attempt = sys.argv[1], int(sys.argv[2])
sup = Recorder(run, "crash", attempt, writer="supervisor")
sup.attempt_start()
rec = Recorder(run, "crash", attempt, writer="trainer", progress_interval_s=0.0)
with rec.phase("trainer_init", stage="device_init"):
    pass
if attempt == 0:
    with rec.phase("pt2_compile"):
        pass
    span = rec.train_span(0).__enter__()
    for step in range(1, 51):
        span.advance(step)
    os.kill(os.getpid(), signal.SIGKILL)      # dies inside the train span, and inside no attempt_end
with rec.train_span(0) as span:
    for step in range(1, 101):
        span.advance(step)
sup.attempt_end("completed")
"""


def test_a_killed_process_loses_nothing_it_wrote_and_open_spans_are_closed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR.parent))
    r0 = subprocess.run([sys.executable, "-c", _CRASHING_CHILD, str(run), "0"], env=env, timeout=60)
    assert r0.returncode == -signal.SIGKILL
    r1 = subprocess.run([sys.executable, "-c", _CRASHING_CHILD, str(run), "1"], env=env, timeout=60)
    assert r1.returncode == 0
    conv = collect(run)
    att = conv.attempts.sort("attempt")
    assert att["end_reason"].to_list() == ["failure", "completed"]
    notes = conv.note_lines()
    assert any("attempt 0 has no attempt_end record: taken as a failure" in n for n in notes)
    assert any("train span opened here was never closed" in n for n in notes)
    train0 = conv.spans.filter((pl.col("attempt") == 0) & (pl.col("phase") == "train"))
    # progress was written every step (interval 0): the last one before the kill is step 50
    assert (train0["cursor_start"].min(), train0["cursor_end"].max()) == (0, 50)
    assert train0["end"].max() == att["end"][0]  # the attempt's end is its last record, the last progress line
    # each progress record split the span: consecutive pieces, cursor never going back
    rows = train0.sort("start").rows(named=True)
    assert all(a["end"] == b["start"] and a["cursor_end"] == b["cursor_start"] for a, b in zip(rows, rows[1:]))
    whole = collect(run, split_train=False).spans.filter((pl.col("attempt") == 0) & (pl.col("phase") == "train"))
    assert whole.height == 1 and (whole["cursor_start"][0], whole["cursor_end"][0]) == (0, 50)


def test_an_open_non_train_span_closes_at_the_attempt_end(tmp_path: Path) -> None:
    clk = FakeClock()
    sup = Recorder(tmp_path, "j", 0, writer="supervisor", clock=clk)
    sup.attempt_start()
    rec = Recorder(tmp_path, "j", 0, writer="trainer", clock=clk)
    rec.phase("pt2_compile").__enter__()  # never exited: the process "died" compiling
    clk.t += 42
    sup.attempt_end("preemption")
    conv = collect(tmp_path)
    span = conv.spans.row(0, named=True)
    assert span["phase"] == "pt2_compile"
    assert (span["end"] - span["start"]).total_seconds() == pytest.approx(42)


def test_a_last_attempt_without_end_is_running_or_failure(tmp_path: Path) -> None:
    clk = FakeClock()
    rec = Recorder(tmp_path, "j", 0, clock=clk)
    rec.attempt_start()
    with rec.phase("trainer_init"):
        clk.t += 5
    assert collect(tmp_path).attempts["end_reason"].to_list() == ["running"]
    assert collect(tmp_path).attempts["end"].null_count() == 1
    failed = collect(tmp_path, open_last_attempt="failure").attempts.row(0, named=True)
    assert failed["end_reason"] == "failure" and (failed["end"] - failed["start"]).total_seconds() == pytest.approx(5)


# ---------------------------------------------------------------- a recorder failure never stops training


def _train(rec: Recorder, steps: int = 50) -> int:
    done = 0
    with rec.phase("trainer_init"):
        pass
    with rec.train_span(0) as span:
        for i in range(steps):
            done += 1
            span.advance(i + 1)
    rec.attempt_end("completed")
    rec.close(trace_dir=rec.directory / "trace")
    return done


def test_unwritable_folder_does_not_stop_training(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.warns(RecorderWarning):
        rec = Recorder(blocker / "run", "j", 0, progress_interval_s=0.0)
        assert _train(rec) == 50
    assert rec.errors > 0


def test_disk_errors_mid_run_do_not_stop_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder(tmp_path / "run", "j", 0, progress_interval_s=0.0)
    rec.attempt_start()

    def full_disk(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(recorder_mod.os, "write", full_disk)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _train(rec) == 50
    assert rec.errors >= 50
    assert sum(issubclass(w.category, RecorderWarning) for w in caught) == 1  # reported once


def test_a_broken_clock_and_bad_arguments_do_not_stop_training(tmp_path: Path) -> None:
    def broken() -> float:
        raise RuntimeError("clock gone")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecorderWarning)
        rec = Recorder(tmp_path / "run", "j", 0, clock=broken)
        assert _train(rec) == 50
        rec2 = Recorder(tmp_path / "run2", "j", 0)
        rec2.attempt_end("exploded")  # not an end reason
        rec2.job(gpus=object())  # not serialisable
    assert rec.errors > 0 and rec2.errors == 2


def test_warnings_as_errors_still_do_not_stop_training(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecorderWarning)
        rec = Recorder(tmp_path, "j", 0)
        assert rec._fd is not None
        ro = os.open(os.devnull, os.O_RDONLY)
        os.dup2(ro, rec._fd)  # the descriptor turns read-only under the recorder: every write now fails (EBADF)
        os.close(ro)
        assert _train(rec) == 50
    assert rec.errors > 0


def test_user_exceptions_inside_a_phase_propagate_and_the_span_is_kept(tmp_path: Path) -> None:
    clk = FakeClock()
    rec = Recorder(tmp_path, "j", 0, clock=clk)
    rec.attempt_start()
    with pytest.raises(ZeroDivisionError):
        with rec.phase("eval"):
            clk.t += 3
            1 / 0
    rec.attempt_end("failure")
    rec.close()
    spans = collect(tmp_path).spans
    assert spans["phase"].to_list() == ["eval"]


# ---------------------------------------------------------------- close -> Parquet, threads


def test_close_writes_a_parquet_trace_of_the_whole_run_folder(tmp_path: Path) -> None:
    from ettcore.trace import load_trace

    clk = FakeClock()
    sup = Recorder(tmp_path / "run", "j", 0, writer="supervisor", clock=clk)
    sup.job(model="m", gpus=4, variant="v1")
    sup.attempt_start()
    rec = Recorder(tmp_path / "run", "j", 0, writer="trainer", clock=clk)
    with rec.train_span(0) as span:
        clk.t += 10
        span.advance(10)
    sup.attempt_end("completed")
    sup.close()
    conv = rec.close(trace_dir=tmp_path / "trace")
    assert conv is not None and conv.problems == []
    assert sorted(p.name for p in (tmp_path / "trace").iterdir()) == [
        "attempts.parquet",
        "jobs.parquet",
        "spans.parquet",
        "trace.json",
    ]
    att = pl.read_parquet(tmp_path / "trace" / "attempts.parquet")
    assert att.schema["start"] == pl.Datetime("us", "UTC")
    assert pl.read_parquet(tmp_path / "trace" / "jobs.parquet").row(0, named=True) == {
        "job_id": "j",
        "model": "m",
        "gpus": 4,
        "variant": "v1",
    }
    load_trace(tmp_path / "trace")  # loads without error


def test_threads_write_whole_lines(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, "j", 0)
    rec.attempt_start()

    def work(name: str) -> None:
        for _ in range(200):
            with rec.phase("trainer_init", stage=name):
                pass

    threads = [threading.Thread(target=work, args=(f"stage{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec.attempt_end("completed")
    rec.close()
    conv = collect(tmp_path)
    assert conv.problems == []
    assert conv.spans.height == 800
    assert sorted(conv.spans["stage"].unique().to_list()) == [f"stage{i}" for i in range(4)]


# ---------------------------------------------------------------- overhead


def test_per_step_overhead_is_under_one_percent_of_a_10ms_step(tmp_path: Path) -> None:
    """advance() per call, with the default progress interval, against a 10 ms step (budget: 100 us).  The cost is
    this process's CPU time (user + system: the writes count), which other work on the machine does not inflate."""
    rec = Recorder(tmp_path, "j", 0)
    rec.attempt_start()
    n = 20_000
    per_call = []
    with rec.train_span(0) as span:
        for rep in range(5):
            t = time.process_time()
            for i in range(n):
                span.advance(rep * n + i)
            per_call.append((time.process_time() - t) / n)
    rec.close()
    best = min(per_call)
    assert best < 100e-6, f"advance() costs {best * 1e6:.2f} us per step, over 1% of a 10 ms step"
