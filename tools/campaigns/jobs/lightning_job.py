"""A tiny PyTorch Lightning job with the ETT callback: one try of it per process (run by the tests).

    python tools/campaigns/jobs/lightning_job.py --run-dir R --work W --try N \\
        [--crash-at S] [--sigterm-at S] [--compile]

A small MLP on generated regression data, a step padded to about 20 ms with a
sleep (so that a step is long against the framework's own per-step work and
the shared cores stay free), a checkpoint every 10 steps (``last.ckpt``),
validation every 20 steps and a sanity check, and ``ckpt_path="last"`` so a
new try resumes from the newest checkpoint.  ``--crash-at S`` raises an error
inside the step after global step S; ``--sigterm-at S`` sends the process
SIGTERM during the step after S (Lightning stops after that step).  The
ground-truth log (:class:`ground_truth.EventLog`) is written by this script's
own callback (first in the list) and checkpoint class, never through ettcore.
"""

from __future__ import annotations

import os
import signal
import time

FIRST_T = time.time()  # ground truth: this process was running by now (only the standard library imported)

import torch  # noqa: E402

torch.set_num_threads(1)

import lightning as L  # noqa: E402
from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from ettcore.integrations.lightning import ETTCallback  # noqa: E402
from tools.campaigns.jobs.ground_truth import EventLog, job_arguments  # noqa: E402

STEP_PAD_S = 0.02


class Regressor(L.LightningModule):
    def __init__(self, log: EventLog, crash_at: int | None, sigterm_at: int | None) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
        self.log_ = log
        self.crash_at, self.sigterm_at = crash_at, sigterm_at

    def training_step(self, batch, batch_idx):
        if self.crash_at is not None and self.global_step == self.crash_at:
            now = time.time()
            self.log_.write("crash", self.global_step, now, now)
            raise RuntimeError(f"injected failure after step {self.global_step}")
        if self.sigterm_at is not None and self.global_step == self.sigterm_at:
            now = time.time()
            self.log_.write("crash", self.global_step, now, now)
            os.kill(os.getpid(), signal.SIGTERM)
        x, y = batch
        time.sleep(STEP_PAD_S)
        return torch.nn.functional.mse_loss(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def quiet_trainer(steps: int, root, **more) -> L.Trainer:
    """A Trainer of a short CPU fit with no logger, progress bar, summary, checkpoints or validation (``more`` adds
    or overrides)."""
    base = dict(
        max_steps=steps,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
        default_root_dir=str(root),
    )
    return L.Trainer(**{**base, **more})


class StepLogger(L.Callback):
    """Ground truth: this script's own callback, ahead of every other (ModelCheckpoint saves after it)."""

    def __init__(self, log: EventLog) -> None:
        self.log_ = log
        self.t: dict[str, float] = {}

    def on_train_start(self, trainer, pl_module):
        now = time.time()
        self.log_.write("train_start", trainer.global_step, now, now)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.t["step"] = time.time()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.log_.write("step", trainer.global_step, self.t["step"], time.time())

    def on_validation_start(self, trainer, pl_module):
        self.t["eval"] = time.time()

    def on_validation_end(self, trainer, pl_module):
        self.log_.write("eval", trainer.global_step, self.t["eval"], time.time())


class LoggedCheckpoint(ModelCheckpoint):
    """ModelCheckpoint that logs each save it makes (ground truth)."""

    def __init__(self, log: EventLog, **kwargs) -> None:
        super().__init__(**kwargs)
        self.log_ = log

    def _save_checkpoint(self, trainer, filepath):
        t = time.time()
        try:
            super()._save_checkpoint(trainer, filepath)
        finally:
            self.log_.write("save", trainer.global_step, t, time.time())


def main() -> None:
    a = job_arguments(__doc__)
    log = EventLog(a.work, a.try_no)
    log.lifetime(FIRST_T)  # before the callback: its exit record is then written after ettcore's atexit
    callback = ETTCallback(a.run_dir, job_id="lightning-tiny", model_family="mlp")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1024, 16, generator=g)
    y = x[:, :1] * 0.5 + 0.1 * torch.randn(1024, 1, generator=g)
    train = DataLoader(TensorDataset(x, y), batch_size=8)  # 128 batches an epoch
    val = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=32)
    model = Regressor(log, a.crash_at, a.sigterm_at)
    if a.compile:
        model = torch.compile(model, backend="aot_eager")
    ckpt = LoggedCheckpoint(
        log, dirpath=str(a.work / "checkpoints"), every_n_train_steps=10, save_top_k=1, save_last=True
    )
    trainer = L.Trainer(
        max_steps=a.steps,
        callbacks=[StepLogger(log), callback, ckpt],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
        val_check_interval=20,
        limit_val_batches=2,
        num_sanity_val_steps=1,
    )
    trainer.fit(model, train, val, ckpt_path="last")
    print(f"ett callback errors: {callback.errors}")


if __name__ == "__main__":
    main()
