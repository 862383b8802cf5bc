"""PyTorch Lightning: ``Trainer(callbacks=[ETTCallback("runs/my-job")])`` records an ETT trace of the fit.

What each phase is made of (``phase`` / ``stage``):

=========================================  ===========================================================
process start -> ``ETTCallback(...)``       ``trainer_init`` / ``launch`` (interpreter, imports, the script
                                            building its model and data)
``ETTCallback(...)`` -> ``setup``           ``trainer_init`` / ``trainer_setup`` (Trainer construction,
                                            the strategy's environment, e.g. the process group)
``setup`` -> ``on_train_start``             ``trainer_init`` / ``model_setup`` (configure_model, the
                                            strategy's set-up, optimizers, data loaders)
``strategy.load_checkpoint`` and the        ``checkpoint_load`` / ``read``, ``model_state``,
strategy's ``load_model_state_dict`` and    ``optimizer_state`` (a resumed fit, ``ckpt_path=...``)
``load_optimizer_state_dict``
``on_sanity_check_start`` -> ``_end``       ``eval`` / ``sanity_check``
``on_train_start`` -> ``on_train_end``      ``train``, data cursor = ``trainer.global_step`` (steps redone
                                            after a restore are replay)
``on_validation_start`` -> ``_end``         ``eval`` / ``validation``
``trainer.save_checkpoint`` (every caller:  ``checkpoint_save`` (the blocking part; an asynchronous
ModelCheckpoint, SLURM's requeue, yours)    checkpoint plugin's background writes are not)
TorchDynamo compile start -> end            ``pt2_compile`` / ``dynamo``, ``lazy_backward`` (a compiled
                                            module's first step, recompilations)
end of training -> process exit             ``shutdown`` / ``teardown``
=========================================  ===========================================================

The attempt is the process (see :mod:`ettcore.integrations.process`); its end
reason comes from how the fit ended: ``completed``; an exception -> ``failure``;
Lightning's ``SIGTERMException`` or a ``SIGTERM``/``SIGUSR1`` seen during the fit
-> ``preemption``; ``KeyboardInterrupt`` -> ``cancelled``.  Only global rank 0
records.  Only ``fit`` is recorded (``validate``/``test``/``predict`` alone are not
training).  Needs the ``lightning`` extra.

Which rank held the job back (slow time, docs/metric.md): when the fit runs under ``DDPStrategy`` with more than
one process, every rank keeps its work and wait per window in the run folder (``timing/*.jsonl``,
:mod:`ettcore.integrations.rank_timing`), with no change to the training script.  DDP takes one communication
hook, so the callback wraps the strategy's own: in ``setup`` (before the strategy wraps the model) it hands the
strategy :meth:`~ettcore.integrations.rank_timing.RankTiming.comm_hook` around the configured
``ddp_comm_hook`` (with its ``ddp_comm_wrapper`` applied inside, its ``ddp_comm_state`` kept).  Lightning registers
the strategy's hook on CUDA only; where it registered none (CPU, or no hook configured) the callback registers the
timing hook around DDP's default all-reduce, which is what DDP runs then.  A hook registered on the model some other
way cannot be wrapped: timing stays off, with one warning line.  A step is timed at each optimizer step
(``trainer.global_step`` advanced at the end of a batch); validation is not counted in the next step, a checkpoint
saved at the end of a step is (``ModelCheckpoint`` runs after this callback).
``rank_timing=False`` turns it off; a single-process fit is never timed.
"""

from __future__ import annotations

import os
from typing import Any

from lightning.pytorch.callbacks import Callback

from ettcore.integrations.process import Attempt
from ettcore.integrations.rank_timing import RankTiming, attach

WRITER = "lightning"


class ETTCallback(Callback):
    """Record this process's fit as one attempt of job ``job_id`` in ``run_dir`` (recorder JSONL).

    ``run_dir``, ``job_id``, ``attempt``: see :mod:`ettcore.integrations.process`
    for the defaults (environment, then the run folder).  ``progress_interval_s``:
    how often the train span is written (bounds what a ``SIGKILL`` loses).
    ``labels``: extra ``jobs`` columns (team, variant ...); ``model=`` and ``gpus=`` set those
    columns (default: the module's class name and the trainer's world size).  ``rank_timing``: under DDP with
    more than one process, time each rank's work and wait (see the module's docstring).
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
            framework="lightning",
            progress_interval_s=progress_interval_s,
            fsync=fsync,
            labels=labels,
        )
        self._tl = self.ett.timeline
        self._patched: list[tuple[Any, str]] = []
        self.rank_timing = rank_timing
        self._pending: RankTiming | None = None  # set up, not yet on the model
        self._timing: RankTiming | None = None  # on the model: timing each step
        self._given: Any = None  # the timing hook handed to the strategy
        self._strategy_hook: tuple[Any, Any, Any] | None = None  # strategy, its hook, its wrapper (restored)
        self._timed_step = -1

    @property
    def errors(self) -> int:
        """Errors of the callback so far (each skipped; training was never stopped)."""
        return self.ett.errors

    # ------------------------------------------------------------------ wrapping the checkpoint calls

    def _wrap(self, obj: Any, name: str, phase: str, stage: str | None) -> None:
        original = getattr(obj, name, None)
        if original is None or name in vars(obj):
            return
        tl, ett = self._tl, self.ett

        def timed(*args: Any, **kwargs: Any) -> Any:
            ett.guard(tl.begin, phase, stage)
            try:
                return original(*args, **kwargs)
            finally:
                ett.guard(tl.end, phase)

        timed.__wrapped__ = original  # type: ignore[attr-defined]
        setattr(obj, name, timed)
        self._patched.append((obj, name))

    def _unwrap(self) -> None:
        for obj, name in self._patched:
            vars(obj).pop(name, None)
        self._patched.clear()

    # ------------------------------------------------------------------ timing DDP's all-reduce

    def _timing_setup(self, trainer: Any) -> None:
        strategy = trainer.strategy
        if not self.rank_timing or trainer.world_size <= 1 or not hasattr(strategy, "_ddp_comm_hook"):
            return
        self._pending = self.ett.rank_timing(trainer.global_rank)
        hook, wrapper = strategy._ddp_comm_hook, getattr(strategy, "_ddp_comm_wrapper", None)
        if hook is None:
            return  # the strategy registers nothing: the hook goes on the model in on_train_start
        self._strategy_hook = (strategy, hook, wrapper)
        self._given = self._pending.comm_hook(wrapper(hook) if wrapper is not None else hook)
        strategy._ddp_comm_hook, strategy._ddp_comm_wrapper = self._given, None

    def _timing_start(self, trainer: Any) -> None:
        timing, self._pending = self._pending, None
        if timing is None:
            return
        from torch.nn.parallel import DistributedDataParallel

        model = trainer.strategy.model
        if isinstance(model, DistributedDataParallel) and attach(model, timing, self._given):
            self._timing = timing
            self._timed_step = trainer.global_step
            timing.begin()
        else:
            timing.close()

    def _timing_end(self) -> None:
        for timing in (self._pending, self._timing):
            if timing is not None:
                timing.close()
        self._pending = self._timing = None
        if self._strategy_hook is not None:
            strategy, hook, wrapper = self._strategy_hook
            strategy._ddp_comm_hook, strategy._ddp_comm_wrapper = hook, wrapper
            self._strategy_hook = None

    # ------------------------------------------------------------------ hooks

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage != "fit":
            return
        try:
            self.ett.start(rank=trainer.global_rank, model=type(pl_module).__name__, gpus=trainer.world_size)
            self.ett.guard(self._timing_setup, trainer)
            if self.ett.recorder is None:
                return
            self._tl.switch("trainer_init", "trainer_init", "model_setup")
            self._wrap(trainer, "save_checkpoint", "checkpoint_save", None)
            strategy = trainer.strategy
            self._wrap(strategy, "load_checkpoint", "checkpoint_load", "read")
            self._wrap(strategy, "load_model_state_dict", "checkpoint_load", "model_state")
            self._wrap(strategy, "load_optimizer_state_dict", "checkpoint_load", "optimizer_state")
        except Exception as exc:  # noqa: BLE001 - never stop training
            self.ett.error(exc)

    def on_sanity_check_start(self, trainer: Any, pl_module: Any) -> None:
        self.ett.guard(self._tl.begin, "eval", "sanity_check")

    def on_sanity_check_end(self, trainer: Any, pl_module: Any) -> None:
        self.ett.guard(self._tl.end, "eval")

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.ett.guard(self._timing_start, trainer)
        try:
            if self.ett.recorder is None:
                return
            t = self._tl.end("trainer_init")
            self._tl.train_begin(trainer.global_step, t)
            self.ett.watch_signals()  # after Lightning registered its own handlers, so they are chained
        except Exception as exc:  # noqa: BLE001
            self.ett.error(exc)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        try:
            if self._timing is not None and trainer.global_step != self._timed_step:  # after an optimizer step
                self._timed_step = trainer.global_step
                self._timing.step()
            self._tl.step(trainer.global_step)
        except Exception as exc:  # noqa: BLE001
            self.ett.error(exc)

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if not trainer.sanity_checking:
            self.ett.guard(self._tl.begin, "eval", "validation")

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if not trainer.sanity_checking:
            self.ett.guard(self._tl.end, "eval")
            if self._timing is not None:
                self.ett.guard(self._timing.begin)  # the next step's time starts after validation

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.ett.guard(self._timing_end)
        self.ett.guard(self.ett.training_completed)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.ett.guard(self._timing_end)
        try:
            reason = None
            if type(exception).__name__ == "SIGTERMException" or getattr(trainer, "received_sigterm", False):
                reason = "preemption"
            self.ett.ended(reason, exception)
        except Exception as exc:  # noqa: BLE001
            self.ett.error(exc)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            self.ett.guard(self._unwrap)
            self.ett.guard(self._timing_end)
