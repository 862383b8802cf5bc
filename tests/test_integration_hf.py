"""Hugging Face Trainer: real training with ``ETTCallback`` against ground truth kept apart from the callback.

The job (``tests/jobs/hf_job.py``: a config-built one-layer GPT-2, no
downloaded weights, offline) runs as three processes: try 0 crashes (an
error at the start of the step after step 25), try 1 resumes from the last
checkpoint (step 20) and is preempted (SIGTERM at the start of the step after
step 45: the Trainer has no handler, the process dies by the signal), try 2
resumes from step 40 and completes 60 steps.  Ground truth: the test's own
clock around each process, and the script's own log of steps, saves and
evaluations (``tests/jobs/ground_truth.py`` states the definitions and the
tolerances).

Also: ``torch_compile=True`` makes the first step ``pt2_compile``, measured
from TorchDynamo's own compile events, and an error inside the callback
never stops training.  Needs the ``hf`` extra (skipped without it).
"""

from __future__ import annotations

import os
import signal
import sys
import time
import warnings
from pathlib import Path

import polars as pl
import pytest

pytestmark = [pytest.mark.torch, pytest.mark.slow]
pytest.importorskip("transformers", reason="needs the hf extra: pip install -e '.[hf]' (package transformers)")
pytest.importorskip("accelerate", reason="needs the hf extra: pip install -e '.[hf]' (package accelerate)")

JOBS = Path(__file__).resolve().parent / "jobs"
sys.path.insert(0, str(JOBS))

from ground_truth import compare, ground_truth, phase_truth, read_events, run_tries, table, trace_measures  # noqa: E402

from ettcore.recorder import RecorderWarning, convert  # noqa: E402

PLAN = {0: ["--crash-at", "25"], 1: ["--sigterm-at", "45"], 2: []}


def _job(run: Path, work: Path, extra: dict[int, list[str]]):
    return lambda k: [sys.executable, str(JOBS / "hf_job.py"), "--run-dir", str(run), "--work", str(work),
                      "--try", str(k)] + extra.get(k, [])


def test_crash_preemption_and_resume_agree_with_ground_truth(tmp_path: Path) -> None:
    run, work = tmp_path / "run", tmp_path / "work"
    work.mkdir()
    procs = run_tries(_job(run, work, PLAN), 3)
    assert [p.returncode for p in procs] == [1, -signal.SIGTERM, 0], [p.output[-2000:] for p in procs]
    assert "ett callback errors: 0" in procs[2].output
    time.sleep(0.2)
    conv = convert(run, tmp_path / "trace")
    assert conv.problems == []  # every span closed, every attempt ended by its process
    events = read_events(work)
    truth = ground_truth(events, 60, procs[0].spawn_t, procs[-1].reap_t)
    assert truth.steps_per_try == {0: (1, 25), 1: (21, 45), 2: (41, 60)}  # the plan happened
    rows = compare(truth, tmp_path / "trace", reasons=["failure", "preemption", "completed"],
                   saves_evals=phase_truth(events))
    print("\nHugging Face Trainer run against ground truth\n" + table(rows))
    assert all(r["ok"] for r in rows), table(rows)

    spans = trace_measures(tmp_path / "trace")["spans"]
    stages = spans.group_by("attempt", "phase").agg(pl.col("stage").unique().sort()).sort("attempt", "phase")
    by = {(a, p): [s for s in st if s is not None] for a, p, st in stages.iter_rows()}
    for a in (0, 1, 2):
        assert by[(a, "trainer_init")] == ["launch", "train_setup", "trainer_setup"]
        assert by[(a, "eval")] == ["evaluate"]
        assert (a, "checkpoint_save") in by
        assert (a, "pt2_compile") not in by  # not compiled: no compile span is invented
    assert "interpreter_exit" in by[(0, "shutdown")] and "interpreter_exit" in by[(2, "shutdown")]
    assert (0, "checkpoint_load") not in by
    assert by[(1, "checkpoint_load")] == by[(2, "checkpoint_load")] == ["model_state"]
    jobs = conv.jobs.row(0, named=True)
    assert (jobs["model"], jobs["framework"], jobs["model_family"], jobs["gpus"]) == ("gpt2", "hf-trainer", "gpt2", 1)


def test_torch_compile_makes_the_first_step_pt2_compile(tmp_path: Path) -> None:
    run, work = tmp_path / "run", tmp_path / "work"
    work.mkdir()
    procs = run_tries(_job(run, work, {0: ["--compile", "--steps", "12"]}), 1)
    assert procs[0].returncode == 0, procs[0].output[-3000:]
    time.sleep(0.2)
    convert(run, tmp_path / "trace")
    spans = trace_measures(tmp_path / "trace")["spans"]
    compile_s = spans.filter(pl.col("phase") == "pt2_compile")
    assert "dynamo" in set(compile_s["stage"])
    steps = [e for e in read_events(work) if e.kind == "step"]
    durations = sorted(e.end - e.start for e in steps[1:])
    first, median = steps[0].end - steps[0].start, durations[len(durations) // 2]
    t0 = pl.col("start").dt.epoch("us") / 1e6
    t1 = pl.col("end").dt.epoch("us") / 1e6
    in_first = float(compile_s.filter((t0 >= steps[0].start) & (t1 <= steps[0].end))["s"].sum())
    assert 0 < in_first <= first
    assert in_first >= 0.5 * (first - median), (in_first, first, median)
    train = spans.filter(pl.col("phase") == "train")
    for s0, e0 in compile_s.select("start", "end").iter_rows():
        assert train.filter((pl.col("start") < e0) & (pl.col("end") > s0)).height == 0


def test_an_error_inside_the_callback_never_stops_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from hf_job import Tokens, tiny_gpt2
    from transformers import Trainer, TrainingArguments

    from ettcore.integrations.huggingface import ETTCallback
    from ettcore.integrations.timeline import Timeline
    from ettcore.recorder import Recorder

    calls = {"n": 0}
    real_emit = Recorder._emit

    def flaky_emit(self, record):  # the disk fails after a few records
        calls["n"] += 1
        if calls["n"] > 6:
            raise OSError(28, "No space left on device")
        return real_emit(self, record)

    def broken_step(self, cursor):
        raise RuntimeError("a bug in the callback")

    monkeypatch.setattr(Recorder, "_emit", flaky_emit)
    monkeypatch.setattr(Timeline, "step", broken_step)
    torch.set_num_threads(1)
    cb = ETTCallback(tmp_path / "run", job_id="broken")
    model = tiny_gpt2()
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=12, per_device_train_batch_size=8,
                             save_strategy="no", eval_strategy="no", logging_strategy="no", report_to="none",
                             disable_tqdm=True, use_cpu=True, dataloader_num_workers=0)
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(256), callbacks=[cb])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()
        cb.ett.finish()
    assert trainer.state.global_step == 12  # training went on to the end
    assert cb.errors >= 12  # every broken step counted (and the failed writes)
    ours = [w for w in caught if issubclass(w.category, RecorderWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]  # warned once
