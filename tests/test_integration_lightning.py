"""PyTorch Lightning: real fits with ``ETTCallback`` against ground truth kept apart from the callback.

The job (``tests/jobs/lightning_job.py``) runs as three processes, like a job
a scheduler restarts: try 0 crashes (an error in the step after step 25),
try 1 resumes from the last checkpoint (step 20) and is preempted (SIGTERM in
the step after step 45; Lightning stops after that step), try 2 resumes from
step 40 and completes 60 steps.  Ground truth: the test's own clock around
each process, and the script's own log of steps, saves and evaluations
(``tests/jobs/ground_truth.py`` states the definitions and the tolerances).

Also: a compiled module's first step is ``pt2_compile`` measured from
TorchDynamo's own compile events, and an error inside the callback never
stops training.  Needs the ``lightning`` extra (skipped without it).
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import polars as pl
import pytest

pytestmark = [pytest.mark.torch, pytest.mark.slow]
pytest.importorskip("lightning", reason="needs the lightning extra: pip install -e '.[lightning]' (package lightning)")

JOBS = Path(__file__).resolve().parent / "jobs"
sys.path.insert(0, str(JOBS))

from ground_truth import compare, ground_truth, phase_truth, read_events, run_tries, table, trace_measures  # noqa: E402

from ettcore.recorder import RecorderWarning, convert  # noqa: E402

PLAN = {0: ["--crash-at", "25"], 1: ["--sigterm-at", "45"], 2: []}


def _job(run: Path, work: Path, extra: dict[int, list[str]]):
    return lambda k: [sys.executable, str(JOBS / "lightning_job.py"), "--run-dir", str(run), "--work", str(work),
                      "--try", str(k)] + extra.get(k, [])


def test_crash_preemption_and_resume_agree_with_ground_truth(tmp_path: Path) -> None:
    run, work = tmp_path / "run", tmp_path / "work"
    work.mkdir()
    procs = run_tries(_job(run, work, PLAN), 3)
    assert [p.returncode for p in procs] == [1, 0, 0], [p.output[-2000:] for p in procs]  # SIGTERMException exits 0
    assert "ett callback errors: 0" in procs[2].output  # the one try that reaches the end of its script
    time.sleep(0.2)
    conv = convert(run, tmp_path / "trace")
    assert conv.problems == []  # every span closed, every attempt ended by its process
    events = read_events(work)
    truth = ground_truth(events, 60, procs[0].spawn_t, procs[-1].reap_t)
    assert truth.steps_per_try == {0: (1, 25), 1: (21, 46), 2: (41, 60)}  # the plan happened
    rows = compare(truth, tmp_path / "trace", reasons=["failure", "preemption", "completed"],
                   saves_evals=phase_truth(events))
    print("\nLightning run against ground truth\n" + table(rows))
    assert all(r["ok"] for r in rows), table(rows)

    spans = trace_measures(tmp_path / "trace")["spans"]
    stages = spans.group_by("attempt", "phase").agg(pl.col("stage").unique().sort()).sort("attempt", "phase")
    by = {(a, p): [s for s in st if s is not None] for a, p, st in stages.iter_rows()}
    for a in (0, 1, 2):
        assert by[(a, "trainer_init")] == ["launch", "model_setup", "trainer_setup"]
        assert "validation" in by[(a, "eval")]  # at steps 20, 40, 60
        assert "interpreter_exit" in by[(a, "shutdown")] and "teardown" in by[(a, "shutdown")]
        assert (a, "pt2_compile") not in by  # not compiled: no compile span is invented
    assert "sanity_check" in by[(0, "eval")]  # Lightning runs it before a fresh fit (not on a resumed one)
    assert (0, "checkpoint_load") not in by
    assert by[(1, "checkpoint_load")] == by[(2, "checkpoint_load")] == ["model_state", "optimizer_state", "read"]
    jobs = conv.jobs.row(0, named=True)
    assert (jobs["model"], jobs["framework"], jobs["model_family"], jobs["gpus"]) == ("Regressor", "lightning", "mlp", 1)


def test_a_compiled_modules_first_step_is_measured_as_pt2_compile(tmp_path: Path) -> None:
    run, work = tmp_path / "run", tmp_path / "work"
    work.mkdir()
    procs = run_tries(_job(run, work, {0: ["--compile", "--steps", "12"]}), 1)
    assert procs[0].returncode == 0, procs[0].output[-3000:]
    time.sleep(0.2)
    convert(run, tmp_path / "trace")
    spans = trace_measures(tmp_path / "trace")["spans"]
    compile_s = spans.filter(pl.col("phase") == "pt2_compile")
    assert set(compile_s["stage"]) >= {"dynamo"}
    steps = [e for e in read_events(work) if e.kind == "step"]
    durations = sorted(e.end - e.start for e in steps[1:])
    first, median = steps[0].end - steps[0].start, durations[len(durations) // 2]
    t0 = pl.col("start").dt.epoch("us") / 1e6
    t1 = pl.col("end").dt.epoch("us") / 1e6
    # the training step's graphs compiled inside the first step (the script's own timing of it) ...
    in_first = float(compile_s.filter((t0 >= steps[0].start) & (t1 <= steps[0].end))["s"].sum())
    assert 0 < in_first <= first
    # ... and they are most of that step's extra time over a steady step (the rest: their first run)
    assert in_first >= 0.5 * (first - median), (in_first, first, median)
    # the validation step's graph compiled in the sanity check, inside the eval phase, which it interrupts
    in_sanity = compile_s.filter(t1 <= steps[0].start)
    assert in_sanity.height >= 1
    assert spans.filter((pl.col("phase") == "eval") & (pl.col("stage") == "sanity_check")).height == 2
    # and the train span does not count them
    train = spans.filter(pl.col("phase") == "train")
    for s0, e0 in compile_s.select("start", "end").iter_rows():
        assert train.filter((pl.col("start") < e0) & (pl.col("end") > s0)).height == 0


def test_an_error_inside_the_callback_never_stops_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lightning as L
    import torch
    from lightning_job import EventLog, Regressor
    from torch.utils.data import DataLoader, TensorDataset

    from ettcore.integrations.lightning import ETTCallback
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
    cb = ETTCallback(tmp_path / "run", job_id="broken")
    x, y = torch.randn(64, 16), torch.randn(64, 1)
    model = Regressor(EventLog(tmp_path, 0), None, None)
    trainer = L.Trainer(max_steps=12, callbacks=[cb], logger=False, enable_progress_bar=False, enable_model_summary=False,
                        accelerator="cpu", devices=1, enable_checkpointing=False, num_sanity_val_steps=0,
                        limit_val_batches=0, default_root_dir=str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=4))
        cb.ett.finish()
    assert trainer.global_step == 12 and trainer.state.finished  # training went on to the end
    assert cb.errors >= 12  # every broken step counted (and the failed writes)
    ours = [w for w in caught if issubclass(w.category, RecorderWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]  # warned once
