"""Hugging Face Trainer: real training with ``ETTCallback`` against ground truth kept apart from the callback.

The job (``tools/campaigns/jobs/hf_job.py``: a config-built one-layer GPT-2, no
downloaded weights, offline) runs as three processes: try 0 crashes (an
error at the start of the step after step 25), try 1 resumes from the last
checkpoint (step 20) and is preempted (SIGTERM at the start of the step after
step 45: the Trainer has no handler, the process dies by the signal), try 2
resumes from step 40 and completes 60 steps.  Ground truth: the test's own
clock around each process, and the script's own log of steps, saves and
evaluations (``tools/campaigns/jobs/ground_truth.py`` states the definitions and the
tolerances).

Also: ``torch_compile=True`` makes the first step ``pt2_compile``, measured
from TorchDynamo's own compile events, an error inside the callback never
stops training, and a two-rank DDP run (gloo, CPU) keeps every rank's work
and wait (``tests/ddp_timing.py``).  Needs the ``hf`` extra (skipped without it).
"""

from __future__ import annotations

import os
import signal
import warnings
from pathlib import Path

import pytest
from callback_faults import break_the_callback, recorder_warnings
from conftest import needs  # tests/conftest.py
from ddp_timing import STEPS, ddp_timing_run

from tools.campaigns.jobs import JOBS_DIR as JOBS
from tools.campaigns.jobs.ground_truth import check_compiled_first_step, restart_run, table

pytestmark = [pytest.mark.torch, pytest.mark.slow, needs("transformers", "accelerate", extra="hf")]

SCRIPT = JOBS / "hf_job.py"
PLAN = {0: ["--crash-at", "25"], 1: ["--sigterm-at", "45"], 2: []}


def test_crash_preemption_and_resume_agree_with_ground_truth(tmp_path: Path) -> None:
    r = restart_run(SCRIPT, tmp_path, PLAN, reasons=["failure", "preemption", "completed"])
    # the cause of each end, from what the callback recorded: the injected RuntimeError, the SIGTERM
    assert r.conv.attempts["cause"].to_list() == ["user_error", "preemption", None]
    assert [p.returncode for p in r.procs] == [1, -signal.SIGTERM, 0], [p.output[-2000:] for p in r.procs]
    assert "ett callback errors: 0" in r.procs[2].output
    assert r.conv.problems == []  # every span closed, every attempt ended by its process
    assert r.truth.steps_per_try == {0: (1, 25), 1: (21, 45), 2: (41, 60)}  # the plan happened
    print("\nHugging Face Trainer run against ground truth\n" + table(r.rows))
    assert all(row["ok"] for row in r.rows), table(r.rows)
    by = r.stages
    for a in (0, 1, 2):
        assert by[(a, "trainer_init")] == ["launch", "train_setup", "trainer_setup"]
        assert by[(a, "eval")] == ["evaluate"]
        assert (a, "checkpoint_save") in by
        assert (a, "pt2_compile") not in by  # not compiled: no compile span is invented
    assert "interpreter_exit" in by[(0, "shutdown")] and "interpreter_exit" in by[(2, "shutdown")]
    assert (0, "checkpoint_load") not in by
    assert by[(1, "checkpoint_load")] == by[(2, "checkpoint_load")] == ["model_state"]
    jobs = r.conv.jobs.row(0, named=True)
    assert (jobs["model"], jobs["framework"], jobs["model_family"], jobs["gpus"]) == ("gpt2", "hf-trainer", "gpt2", 1)


def test_torch_compile_makes_the_first_step_pt2_compile(tmp_path: Path) -> None:
    r = restart_run(SCRIPT, tmp_path, {0: ["--compile", "--steps", "12"]}, reasons=["completed"], final_step=12)
    assert r.procs[0].returncode == 0, r.procs[0].output[-3000:]
    check_compiled_first_step(r.spans, r.events)


def test_an_error_inside_the_callback_never_stops_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import Trainer

    from ettcore.integrations.huggingface import ETTCallback
    from tools.campaigns.jobs.hf_job import Tokens, quiet_args, tiny_gpt2

    break_the_callback(monkeypatch)
    torch.set_num_threads(1)
    cb = ETTCallback(tmp_path / "run", job_id="broken")
    args = quiet_args(tmp_path / "out", 12)
    trainer = Trainer(model=tiny_gpt2(), args=args, train_dataset=Tokens(256), callbacks=[cb])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()
        cb.ett.finish()
    assert trainer.state.global_step == 12  # training went on to the end
    assert cb.errors >= 12  # every broken step counted (and the failed writes)
    assert len(recorder_warnings(caught)) == 1  # warned once


def test_ddp_ranks_keep_their_work_and_wait(tmp_path: Path) -> None:
    per_rank, _, files = ddp_timing_run(tmp_path, "hf")
    assert [f.name for f in files] == ["hf-rank-00000.jsonl", "hf-rank-00001.jsonl"]
    assert [(r["rank"], r["steps"]) for r in per_rank] == [(0, STEPS), (1, STEPS)]  # every optimizer step, each rank
    assert all(r["work_s"] > 0 and r["wait_s"] > 0 for r in per_rank)  # the all-reduce was timed


def test_no_ddp_forward_in_the_first_step_leaves_timing_off_and_rank_timing_false_never_looks(tmp_path: Path) -> None:
    """A model that no DDP wraps (FSDP, DeepSpeed): the forward pre-hook that looks for DDP is gone after the first
    step and no window is written; ``rank_timing=False`` puts no hook on the model."""
    from types import SimpleNamespace

    import torch

    from ettcore.integrations.huggingface import ETTCallback

    for on in (True, False):
        model = torch.nn.Linear(4, 1)
        cb = ETTCallback(tmp_path / "run", job_id="j", rank_timing=on)
        args, state = SimpleNamespace(world_size=2), SimpleNamespace(global_step=0)
        cb.on_train_begin(args, state, None, model=model)
        assert len(model._forward_pre_hooks) == (1 if on else 0)
        model(torch.ones(2, 4)).sum().backward()  # a step's forward, outside any DDP
        state.global_step = 1
        cb.on_optimizer_step(args, state, None)
        cb.on_step_end(args, state, None)
        assert len(model._forward_pre_hooks) == 0 and cb.errors == 0
        cb.on_train_end(args, state, None)
    assert not (tmp_path / "run" / "timing").exists()


def test_an_error_finding_the_ddp_model_is_counted_once_and_timing_stays_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    import torch
    from torch.nn.parallel import DistributedDataParallel

    from ettcore.integrations.huggingface import ETTCallback

    def broken() -> None:
        raise RuntimeError("DDP's record of its active module is gone")

    monkeypatch.setattr(DistributedDataParallel, "_get_active_ddp_module", broken)
    model = torch.nn.Linear(4, 1)
    cb = ETTCallback(tmp_path / "run", job_id="j")
    cb.on_train_begin(SimpleNamespace(world_size=2), SimpleNamespace(global_step=0), None, model=model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            model(torch.ones(2, 4))  # training goes on
    assert cb.errors == 1 and len(model._forward_pre_hooks) == 0 and len(recorder_warnings(caught)) == 1
