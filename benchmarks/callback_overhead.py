"""Framework callbacks' overhead per training step, against a 10 ms step (target: under 1%).

Run:  .venv/bin/python benchmarks/callback_overhead.py [--steps 300] [--repeats 3] [--calls 20000]

Needs the extras it measures (``.[lightning]``, ``.[hf]``); a framework that
is not installed is skipped with a line naming it.  For each framework, as
ratios to the step time, in one run:

1. per step, through the framework's own dispatch (the number to quote): the
   time the framework takes to deliver one step's hook to its callbacks with
   ``ETTCallback`` among them, minus the same without it, averaged over many
   calls on a real trainer mid-training (Lightning: ``on_train_batch_end``
   through ``lightning.pytorch.trainer.call._call_callback_hooks``; Hugging
   Face: ``on_step_end`` through the Trainer's ``CallbackHandler``).  With the
   default progress interval (a train span written once a second) and with
   interval 0 (one written every step, the worst case);
2. end to end: a real fit of 10 ms steps (a busy wait, so the step costs CPU
   like a real one), alternately with and without the callback; the ratio of
   the median times of the training loops (train start to train end, timed
   by a separate callback, so the one-time start-up below is not in it).  On
   a shared machine this one is noisy at the 1% level, which is why (1) is
   the number to quote;
3. once per attempt: the callback's start (opening its recorder file,
   starting the exit watcher process), median of 5; off the per-step path.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from recorder_overhead import STEP_S, busy_step  # noqa: E402  (the same 10 ms busy step)


def per_call(fn: Callable[[], Any], calls: int, repeats: int = 5) -> float:
    """Best-of-``repeats`` seconds per call of ``fn``."""
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t) / calls)
    return best


INTERVALS = ((1.0, "progress interval 1 s"), (0.0, "progress interval 0 (a span every step)"))


def added_cost(without: Callable[[], Any], with_callback: Callable[[], Any], calls: int) -> float:
    """Seconds a hook delivery costs more with the callback among the framework's callbacks than without."""
    return max(per_call(with_callback, calls) - per_call(without, calls), 0.0)


def end_to_end(fit: Callable[[list], float], callback: Callable[[int], Any], repeats: int) -> float:
    """Median training-loop time with the callback over the median without, fits alternated.

    ``fit(callbacks)`` runs one fit with those callbacks and returns its
    training loop's seconds; ``callback(r)`` makes a fresh ETT callback.
    """
    times: dict[bool, list[float]] = {False: [], True: []}
    for r in range(repeats):
        for use in (False, True):
            cbs = [callback(r)] if use else []
            times[use].append(fit(cbs))
            for c in cbs:
                c.ett.finish()
    return statistics.median(times[True]) / statistics.median(times[False])


def line(label: str, seconds: float) -> str:
    return f"  {label:<58s}: {seconds * 1e6:8.3f} us/step = {100 * seconds / STEP_S:.4f}% of a 10 ms step"


# --------------------------------------------------------------------------- Lightning


def lightning(tmp: Path, steps: int, repeats: int, calls: int) -> list[tuple[str, float]]:
    import lightning as L
    import torch
    from lightning.pytorch.trainer import call
    from torch.utils.data import DataLoader, TensorDataset

    from ettcore.integrations.lightning import ETTCallback
    from tools.campaigns.jobs.lightning_job import quiet_trainer

    class Busy(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            busy_step()
            return self.w(batch[0]).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.0)

    data = DataLoader(TensorDataset(torch.zeros(steps, 2)), batch_size=1)

    def trainer(callbacks: list) -> L.Trainer:
        return quiet_trainer(steps, tmp, callbacks=callbacks)

    out = []
    for interval, label in INTERVALS:
        module = Busy()
        tr = trainer([])
        tr.fit(module, data)  # a real trainer, its loops and state as after training
        cb = ETTCallback(tmp / f"pl-{interval}", job_id="bench", progress_interval_s=interval)
        cb.setup(tr, module, "fit")
        cb.on_train_start(tr, module)
        others = [c for c in tr.callbacks if c is not cb]

        def hook(callbacks: list) -> None:
            tr.callbacks = callbacks
            call._call_callback_hooks(tr, "on_train_batch_end", None, None, 0)

        cost = added_cost(lambda: hook(others), lambda: hook(others + [cb]), calls)
        out.append((f"on_train_batch_end dispatch, {label}", cost))
        cb.ett.finish()

    class LoopTimer(L.Callback):
        def on_train_start(self, trainer, pl_module):
            self.t = time.perf_counter()

        def on_train_end(self, trainer, pl_module):
            self.seconds = time.perf_counter() - self.t

    def fit(callbacks: list) -> float:
        timer = LoopTimer()
        trainer(callbacks + [timer]).fit(Busy(), data)
        return timer.seconds

    out.append(
        ("end-to-end ratio", end_to_end(fit, lambda r: ETTCallback(tmp / f"pl-fit-{r}", job_id=f"b{r}"), repeats))
    )
    return out


# --------------------------------------------------------------------------- Hugging Face


def huggingface(tmp: Path, steps: int, repeats: int, calls: int) -> list[tuple[str, float]]:
    import torch
    from transformers import Trainer, TrainerCallback, TrainerControl, TrainerState, TrainingArguments
    from transformers.trainer_callback import CallbackHandler, DefaultFlowCallback

    from ettcore.integrations.huggingface import ETTCallback
    from tools.campaigns.jobs.hf_job import quiet_args

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Linear(2, 1)

        def forward(self, x, labels=None):
            return {"loss": self.w(x).sum()}

    class BusyTrainer(Trainer):
        def training_step(self, *args, **kwargs):
            busy_step()
            return super().training_step(*args, **kwargs)

    class Rows(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return steps

        def __getitem__(self, i: int) -> dict:
            return {"x": torch.zeros(2), "labels": torch.zeros(1)}

    def args(out: Path) -> TrainingArguments:
        return quiet_args(out, steps, per_device_train_batch_size=1, learning_rate=0.0)

    out = []
    a = args(tmp / "hf-args")
    model = Tiny()
    for interval, label in INTERVALS:
        state, control = TrainerState(), TrainerControl()
        cb = ETTCallback(tmp / f"hf-{interval}", job_id="bench", progress_interval_s=interval)
        cb.on_init_end(a, state, control, model=model)
        cb.on_train_begin(a, state, control, model=model)
        base = CallbackHandler([DefaultFlowCallback], model, None, None, None)
        mine = CallbackHandler([DefaultFlowCallback, cb], model, None, None, None)

        def hook(h: CallbackHandler = base) -> None:
            state.global_step += 1
            h.on_step_end(a, state, control)

        out.append((f"on_step_end dispatch, {label}", added_cost(hook, lambda: hook(mine), calls)))
        cb.ett.finish()

    class LoopTimer(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.t = time.perf_counter()

        def on_train_end(self, args, state, control, **kwargs):
            self.seconds = time.perf_counter() - self.t

    def fit(callbacks: list) -> float:
        timer = LoopTimer()
        BusyTrainer(
            model=Tiny(), args=args(tmp / "hf-out"), train_dataset=Rows(), callbacks=callbacks + [timer]
        ).train()
        return timer.seconds

    out.append(
        ("end-to-end ratio", end_to_end(fit, lambda r: ETTCallback(tmp / f"hf-fit-{r}", job_id=f"b{r}"), repeats))
    )
    return out


def start_up(tmp: Path) -> float:
    """Median seconds of one attempt's start (recorder file, exit watcher process), 5 tries."""
    from ettcore.integrations.process import Attempt

    times = []
    for k in range(5):
        a = Attempt(tmp / "start-up", "bench", k, writer="start", framework="bench")
        t = time.perf_counter()
        a.start(rank=0)
        times.append(time.perf_counter() - t)
        a.finish()
    return statistics.median(times)


FRAMEWORKS = {"lightning": ("lightning", lightning), "hf": ("transformers", huggingface)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300, help="steps of each end-to-end fit (10 ms each)")
    ap.add_argument("--repeats", type=int, default=3, help="end-to-end fits with and without the callback")
    ap.add_argument("--calls", type=int, default=20_000, help="hook deliveries timed per measurement")
    ap.add_argument("--only", choices=sorted(FRAMEWORKS), action="append", help="measure only this framework")
    args = ap.parse_args(argv)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        print("skipped: torch is not installed (pip install -e '.[lightning,hf]')")
        return 0
    worst = 0.0
    measured = 0
    with tempfile.TemporaryDirectory(prefix="ett-callback-bench-") as tmp:
        for name in args.only or sorted(FRAMEWORKS):
            package, fn = FRAMEWORKS[name]
            try:
                __import__(package)
            except ImportError:
                print(f"{name}: skipped, package {package} is not installed (pip install -e '.[{name}]')")
                continue
            print(f"{name}:")
            for label, value in fn(Path(tmp) / name, args.steps, args.repeats, args.calls):
                if label == "end-to-end ratio":
                    print(
                        f"  end to end, {args.steps} x 10 ms steps, median of {args.repeats}: ratio {value:.4f} "
                        f"({100 * (value - 1):+.3f}%; noise on a shared machine is of this order)"
                    )
                else:
                    print(line(label, value))
                    worst = max(worst, value) if "interval 1 s" in label else worst
            measured += 1
        if measured:
            print(
                "once per attempt: the callback's start (recorder file, exit watcher): "
                f"{1e3 * start_up(Path(tmp)):.1f} ms"
            )
    if not measured:
        return 0
    ok = worst < 0.01 * STEP_S
    print("PASS: under 1% of a 10 ms step" if ok else "FAIL: over 1% of a 10 ms step")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
