"""PyTorch Lightning: real fits with ``ETTCallback`` against ground truth kept apart from the callback.

The job (``tools/campaigns/jobs/lightning_job.py``) runs as three processes, like a job
a scheduler restarts: try 0 crashes (an error in the step after step 25),
try 1 resumes from the last checkpoint (step 20) and is preempted (SIGTERM in
the step after step 45; Lightning stops after that step), try 2 resumes from
step 40 and completes 60 steps.  Ground truth: the test's own clock around
each process, and the script's own log of steps, saves and evaluations
(``tools/campaigns/jobs/ground_truth.py`` states the definitions and the tolerances).

Also: a compiled module's first step is ``pt2_compile`` measured from
TorchDynamo's own compile events, an error inside the callback never
stops training, and a two-rank DDP fit (gloo, CPU) keeps every rank's work
and wait with the job's own communication hook wrapped, not replaced
(``tests/ddp_timing.py``).  Needs the ``lightning`` extra (skipped without it).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from callback_faults import break_the_callback, recorder_warnings
from conftest import needs  # tests/conftest.py
from ddp_timing import STEPS, ddp_timing_run, one_process_group

from tools.campaigns.jobs import JOBS_DIR as JOBS
from tools.campaigns.jobs.ground_truth import check_compiled_first_step, restart_run, table

pytestmark = [pytest.mark.torch, pytest.mark.slow, needs("lightning", extra="lightning")]

SCRIPT = JOBS / "lightning_job.py"
PLAN = {0: ["--crash-at", "25"], 1: ["--sigterm-at", "45"], 2: []}


def test_crash_preemption_and_resume_agree_with_ground_truth(tmp_path: Path) -> None:
    r = restart_run(SCRIPT, tmp_path, PLAN, reasons=["failure", "preemption", "completed"])
    # the cause of each end, from what the callback recorded: the injected RuntimeError, the SIGTERM
    assert r.conv.attempts["cause"].to_list() == ["user_error", "preemption", None]
    assert [p.returncode for p in r.procs] == [1, 0, 0], [p.output[-2000:] for p in r.procs]  # SIGTERMException exits 0
    assert "ett callback errors: 0" in r.procs[2].output  # the one try that reaches the end of its script
    assert r.conv.problems == []  # every span closed, every attempt ended by its process
    assert r.truth.steps_per_try == {0: (1, 25), 1: (21, 46), 2: (41, 60)}  # the plan happened
    print("\nLightning run against ground truth\n" + table(r.rows))
    assert all(row["ok"] for row in r.rows), table(r.rows)
    by = r.stages
    for a in (0, 1, 2):
        assert by[(a, "trainer_init")] == ["launch", "model_setup", "trainer_setup"]
        assert "validation" in by[(a, "eval")]  # at steps 20, 40, 60
        assert "interpreter_exit" in by[(a, "shutdown")] and "teardown" in by[(a, "shutdown")]
        assert (a, "pt2_compile") not in by  # not compiled: no compile span is invented
    assert "sanity_check" in by[(0, "eval")]  # Lightning runs it before a fresh fit (not on a resumed one)
    assert (0, "checkpoint_load") not in by
    assert by[(1, "checkpoint_load")] == by[(2, "checkpoint_load")] == ["model_state", "optimizer_state", "read"]
    jobs = r.conv.jobs.row(0, named=True)
    assert (jobs["model"], jobs["framework"], jobs["model_family"], jobs["gpus"]) == (
        "Regressor",
        "lightning",
        "mlp",
        1,
    )


def test_a_compiled_modules_first_step_is_measured_as_pt2_compile(tmp_path: Path) -> None:
    r = restart_run(SCRIPT, tmp_path, {0: ["--compile", "--steps", "12"]}, reasons=["completed"], final_step=12)
    assert r.procs[0].returncode == 0, r.procs[0].output[-3000:]
    check_compiled_first_step(r.spans, r.events)
    # the validation step's graph compiled in the sanity check, inside the eval phase, which it interrupts
    sanity = r.spans.filter((r.spans["phase"] == "eval") & (r.spans["stage"] == "sanity_check"))
    assert sanity.height == 2 and "dynamo" in r.stages[(0, "pt2_compile")]


def test_an_error_inside_the_callback_never_stops_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from ettcore.integrations.lightning import ETTCallback
    from tools.campaigns.jobs.lightning_job import EventLog, Regressor, quiet_trainer

    break_the_callback(monkeypatch)
    cb = ETTCallback(tmp_path / "run", job_id="broken")
    x, y = torch.randn(64, 16), torch.randn(64, 1)
    model = Regressor(EventLog(tmp_path, 0), None, None)
    trainer = quiet_trainer(12, tmp_path, callbacks=[cb])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=4))
        cb.ett.finish()
    assert trainer.global_step == 12 and trainer.state.finished  # training went on to the end
    assert cb.errors >= 12  # every broken step counted (and the failed writes)
    assert len(recorder_warnings(caught)) == 1  # warned once


def test_ddp_ranks_keep_their_work_and_wait_around_the_jobs_own_comm_hook(tmp_path: Path) -> None:
    per_rank, calls, files = ddp_timing_run(tmp_path, "lightning", "--user-hook")
    assert [f.name for f in files] == ["lightning-rank-00000.jsonl", "lightning-rank-00001.jsonl"]
    assert [(r["rank"], r["steps"]) for r in per_rank] == [(0, STEPS), (1, STEPS)]  # every optimizer step, each rank
    assert all(r["work_s"] > 0 and r["wait_s"] > 0 for r in per_rank)  # the all-reduce was timed
    # the job's own hook still ran on every rank, once a step (one gradient bucket: a 577-parameter MLP)
    assert calls == {0: STEPS, 1: STEPS}


def test_the_strategys_own_hook_is_handed_back_wrapped_and_restored_and_rank_timing_false_leaves_it(
    tmp_path: Path,
) -> None:
    from types import SimpleNamespace

    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook, fp16_compress_wrapper

    from ettcore.integrations.lightning import ETTCallback

    for on in (True, False):
        strategy = SimpleNamespace(_ddp_comm_hook=allreduce_hook, _ddp_comm_wrapper=fp16_compress_wrapper)
        trainer = SimpleNamespace(strategy=strategy, world_size=2, global_rank=1)
        cb = ETTCallback(tmp_path / "run", job_id="j", rank_timing=on)
        cb._timing_setup(trainer)
        handed = (strategy._ddp_comm_hook, strategy._ddp_comm_wrapper)
        cb._timing_end()
        # on: the timing hook, with the strategy's wrapper applied inside it; off: the strategy as configured
        assert (handed[0] is not allreduce_hook, handed[1]) == ((True, None) if on else (False, fp16_compress_wrapper))
        assert (strategy._ddp_comm_hook, strategy._ddp_comm_wrapper) == (allreduce_hook, fp16_compress_wrapper)


def test_where_lightning_registered_no_hook_ddps_default_all_reduce_is_timed_and_the_unregistered_hook_stays_unrun(
    tmp_path: Path,
) -> None:
    """Lightning registers a strategy's hook on CUDA only: on CPU the configured hook never runs, with or without the
    callback, and the timing hook goes on the model around DDP's default all-reduce (a real DDP model here)."""
    import json
    from types import SimpleNamespace

    import torch
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    from torch.nn.parallel import DistributedDataParallel as DDP

    from ettcore.integrations.lightning import ETTCallback

    calls = []

    def own(state, bucket):
        calls.append(1)
        return allreduce_hook(state, bucket)

    with one_process_group(tmp_path):
        strategy = SimpleNamespace(_ddp_comm_hook=own, _ddp_comm_wrapper=None, model=None)
        trainer = SimpleNamespace(strategy=strategy, world_size=2, global_rank=1, global_step=0)
        cb = ETTCallback(tmp_path / "run", job_id="j")
        cb._timing_setup(trainer)
        strategy.model = DDP(torch.nn.Linear(4, 1))  # the strategy wrapped the model and registered nothing (CPU)
        cb._timing_start(trainer)
        strategy.model(torch.ones(2, 4)).sum().backward()
        trainer.global_step = 1
        cb.on_train_batch_end(trainer, None, None, None, 0)
        cb._timing_end()
        registered = strategy.model._comm_hooks
    assert calls == [] and len(registered) == 1 and registered[0][0] is not own
    (window,) = [json.loads(x) for x in (tmp_path / "run" / "timing" / "j-rank-00001.jsonl").read_text().splitlines()]
    assert window["steps"] == 1 and window["wait_s"] > 0  # the all-reduce was timed
    assert strategy._ddp_comm_hook is own and cb.errors == 0  # handed back
