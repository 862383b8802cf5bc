"""Hugging Face Trainer: ``Trainer(..., callbacks=[ETTCallback("runs/my-job")])`` records an ETT trace.

What each phase is made of (``phase`` / ``stage``):

=========================================  ===========================================================
process start -> ``ETTCallback(...)``       ``trainer_init`` / ``launch`` (interpreter, imports, the script
                                            building its model and data)
``ETTCallback(...)`` -> ``on_init_end``     ``trainer_init`` / ``trainer_setup`` (``Trainer.__init__``)
``on_init_end`` -> ``on_train_begin``       ``trainer_init`` / ``train_setup`` (data loader, optimizer,
                                            ``accelerate`` preparation, compiling the wrapper)
the model's ``load_state_dict``             ``checkpoint_load`` / ``model_state`` (``resume_from_checkpoint``;
                                            the weights are copied into the model here; reading the
                                            file and the optimizer's state stay in ``train_setup``)
``on_train_begin`` -> ``on_train_end``      ``train``, data cursor = ``state.global_step`` (steps redone
                                            after ``resume_from_checkpoint`` are replay)
last step end -> ``on_evaluate``            ``eval`` / ``evaluate``
last step end (or evaluation) -> ``on_save``  ``checkpoint_save``
TorchDynamo compile start -> end            ``pt2_compile`` (``torch_compile=True``: the first step)
end of training -> process exit             ``shutdown`` / ``teardown``
=========================================  ===========================================================

The Trainer has no hook before an evaluation or a save, so each is taken to
start at the end of the step that triggered it (the Trainer evaluates and
saves right after ``on_step_end``, after logging, which therefore counts with
them; milliseconds).  It has no hook for an exception either: the end reason
comes from how the process ends (see :mod:`ettcore.integrations.process`):
``on_train_end`` -> ``completed``; an uncaught exception -> ``failure``; a
``SIGTERM``/``SIGUSR1`` -> ``preemption`` (recorded, then the signal's default
action still ends the process).  Only the world's process zero records.  Needs
the ``hf`` extra.

Which rank held the job back (slow time, docs/metric.md): when training runs under DDP with more than one process
(``args.world_size > 1``), every rank keeps its work and wait per window in the run folder (``timing/*.jsonl``,
:mod:`ettcore.integrations.rank_timing`), with no change to the training script.  The Trainer has ``accelerate``
wrap the model in DDP after ``on_train_begin`` and hands callbacks only the unwrapped model, so the callback finds
the DDP model at the first forward pass inside it (a forward pre-hook on the model reads DDP's own record of the
module whose forward runs, the one TorchDynamo reads) and registers the timing hook there, around DDP's default
all-reduce.  DDP takes one communication hook and cannot replace it: if the prepared model already has one
(``accelerate``'s ``DistributedDataParallelKwargs(comm_hook=...)``), timing stays off with one warning line rather
than replacing it.  No DDP model by the end of the first step (FSDP, DeepSpeed): timing off.  A step is timed at
each optimizer step (``on_optimizer_step``); an evaluation or a save is not counted in the next step.
``rank_timing=False`` turns it off; a single-process run is never timed.
"""

from __future__ import annotations

import os
from typing import Any

from transformers import TrainerCallback

from ettcore.integrations.process import Attempt
from ettcore.integrations.rank_timing import RankTiming, attach

WRITER = "hf-trainer"


class ETTCallback(TrainerCallback):
    """Record this process's ``trainer.train()`` as one attempt of job ``job_id`` in ``run_dir``.

    Arguments as for :class:`ettcore.integrations.lightning.ETTCallback` (``rank_timing``: see the module's
    docstring).
    """

    def __init__(
        self,
        run_dir: str | os.PathLike | None = None,
        job_id: str | None = None,
        attempt: int | None = None,
        *,
        progress_interval_s: float = 1.0,
        fsync: bool = False,
        rank_timing: bool = True,
        **labels: Any,
    ) -> None:
        self.ett = Attempt(
            run_dir,
            job_id,
            attempt,
            writer=WRITER,
            framework="hf-trainer",
            progress_interval_s=progress_interval_s,
            fsync=fsync,
            labels=labels,
        )
        self._tl = self.ett.timeline
        self._load_hooks: list[Any] = []
        self.rank_timing = rank_timing
        self._rank = 0
        self._pending: RankTiming | None = None  # waiting for the DDP model
        self._finder: Any = None  # the forward pre-hook that finds it
        self._timing: RankTiming | None = None  # on the model: timing each step

    @property
    def errors(self) -> int:
        """Errors of the callback so far (each skipped; training was never stopped)."""
        return self.ett.errors

    # ------------------------------------------------------------------ model state loads

    def _watch_loads(self, model: Any) -> None:
        if model is None or not hasattr(model, "register_load_state_dict_post_hook"):
            return
        tl, ett = self._tl, self.ett

        def pre(*_: Any, **__: Any) -> None:
            ett.guard(tl.begin, "checkpoint_load", "model_state")

        def post(*_: Any, **__: Any) -> None:
            ett.guard(tl.end, "checkpoint_load")

        self._load_hooks = [
            model.register_load_state_dict_pre_hook(pre),
            model.register_load_state_dict_post_hook(post),
        ]

    def _unwatch_loads(self) -> None:
        for handle in self._load_hooks:
            handle.remove()
        self._load_hooks = []

    # ------------------------------------------------------------------ timing DDP's all-reduce

    def _timing_setup(self, args: Any, model: Any) -> None:
        if not self.rank_timing or int(getattr(args, "world_size", 1) or 1) <= 1:
            return
        if model is None or not hasattr(model, "register_forward_pre_hook"):
            return
        self._pending = self.ett.rank_timing(self._rank)
        self._finder = model.register_forward_pre_hook(self._find_ddp)

    def _find_ddp(self, module: Any, inputs: Any) -> None:
        try:
            from torch.nn.parallel import DistributedDataParallel

            ddp = DistributedDataParallel._get_active_ddp_module()
            if ddp is None or self._pending is None:
                return  # a forward outside DDP (an evaluation before training): wait for the next
            timing, self._pending = self._pending, None
            self._finder.remove()
            self._finder = None
            if attach(ddp, timing):
                self._timing = timing
                timing.begin()
            else:
                timing.close()
        except Exception as exc:  # noqa: BLE001 - never stop training
            self.ett.error(exc)
            self.ett.guard(self._timing_end)  # once: not again at every forward

    def _timing_end(self) -> None:
        if self._finder is not None:
            self._finder.remove()
            self._finder = None
        for timing in (self._pending, self._timing):
            if timing is not None:
                timing.close()
        self._pending = self._timing = None

    def _timing_pause(self) -> None:
        if self._timing is not None:
            self._timing.begin()  # the next step's time starts now

    # ------------------------------------------------------------------ hooks

    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        try:
            model = kwargs.get("model")
            name = getattr(getattr(model, "config", None), "model_type", None) or type(model).__name__
            rank = 0 if state.is_world_process_zero else max(1, int(getattr(args, "process_index", 1) or 1))
            self._rank = rank
            self.ett.start(rank=rank, model=name, gpus=getattr(args, "world_size", 1))  # each rank its own progress
            if self.ett.recorder is None:
                return
            self._tl.switch("trainer_init", "trainer_init", "train_setup")
            self._watch_loads(model)
        except Exception as exc:  # noqa: BLE001 - never stop training
            self.ett.error(exc)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.ett.guard(self._timing_setup, args, kwargs.get("model"))
        try:
            if self.ett.recorder is None:
                return
            self._unwatch_loads()
            t = self._tl.end("trainer_init")
            self._tl.train_begin(state.global_step, t)
            self.ett.watch_signals()
        except Exception as exc:  # noqa: BLE001
            self.ett.error(exc)

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._timing is not None:
            self.ett.guard(self._timing.step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        try:
            if self._pending is not None:  # a whole step and no DDP forward: not DDP (FSDP, DeepSpeed)
                self._timing_end()
            self._tl.step(state.global_step)
        except Exception as exc:  # noqa: BLE001
            self.ett.error(exc)

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.ett.guard(self._tl.retro, "eval", "evaluate")
        self.ett.guard(self._timing_pause)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.ett.guard(self._tl.retro, "checkpoint_save", None)
        self.ett.guard(self._timing_pause)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.ett.guard(self._timing_end)
        self.ett.guard(self.ett.training_completed)
