"""A short two-rank DDP fit with the ETT callback of Lightning or Hugging Face, on CPU (gloo), run by ``torchrun``.

    python -m ettcore.integrations.torchrun --run-dir R --job-id J -- --standalone --nproc-per-node 2 \\
        tools/campaigns/jobs/ddp_timing_job.py --framework lightning|hf --work W [--steps 12] [--user-hook]

The training script does nothing for rank timing: the callback is built as a user builds it (no timing argument),
and each rank's work and wait per window must still reach the run folder (``timing/*.jsonl``).  Lightning fits a
small MLP, Hugging Face trains a one-layer GPT-2 built from its config (``tools.campaigns.jobs.hf_job``); a step is
padded to about 20 ms with a sleep so the shared cores stay free.

``--user-hook`` (Lightning): the job's own DDP communication hook, ``DDPStrategy(ddp_comm_hook=counting_hook)``, a
hook that runs DDP's all-reduce and counts its calls; each rank writes its count to ``W/hook-calls-rank-N.txt`` at
the end (the ground truth that the job's hook still ran: wrapped, not replaced).  Lightning registers a strategy's
hook on CUDA only (``DDPStrategy._register_ddp_hooks``); :class:`HookOnCpuStrategy` registers it on CPU as Lightning
does on CUDA, so the path a GPU job takes runs here.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

torch.set_num_threads(1)

STEP_PAD_S = 0.02
CALLS = 0  # this rank's calls of counting_hook


def counting_hook(state, bucket):  # no annotations: DDP checks a hook's annotations against its own types
    """The job's own communication hook: DDP's all-reduce, counted."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    global CALLS
    CALLS += 1
    return allreduce_hook(state, bucket)


def lightning_fit(steps: int, user_hook: bool, work: Path) -> int:
    """Fit on two CPU ranks with the Lightning callback; the callback's error count."""
    import lightning as L
    from lightning.pytorch.overrides.distributed import _register_ddp_comm_hook
    from lightning.pytorch.strategies import DDPStrategy
    from torch.utils.data import DataLoader, TensorDataset

    from ettcore.integrations.lightning import ETTCallback
    from tools.campaigns.jobs.lightning_job import quiet_trainer

    class HookOnCpuStrategy(DDPStrategy):
        """Registers the strategy's hook on CPU too, the way ``DDPStrategy`` does on CUDA."""

        def _register_ddp_hooks(self) -> None:
            _register_ddp_comm_hook(
                model=self.model,
                ddp_comm_state=self._ddp_comm_state,
                ddp_comm_hook=self._ddp_comm_hook,
                ddp_comm_wrapper=self._ddp_comm_wrapper,
            )

    class Regressor(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))

        def training_step(self, batch, batch_idx):
            x, y = batch
            time.sleep(STEP_PAD_S)
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 16, generator=g)
    y = x[:, :1] * 0.5
    strategy = HookOnCpuStrategy(ddp_comm_hook=counting_hook) if user_hook else DDPStrategy()
    callback = ETTCallback(job_id=os.environ.get("ETT_JOB_ID"), model_family="mlp")
    trainer = quiet_trainer(steps, work, callbacks=[callback], devices=2, strategy=strategy)
    trainer.fit(Regressor(), DataLoader(TensorDataset(x, y), batch_size=8))
    return callback.errors


def hf_train(steps: int, work: Path) -> int:
    """Train on two CPU ranks with the Hugging Face callback; the callback's error count."""
    from transformers import Trainer, TrainerCallback

    from ettcore.integrations.huggingface import ETTCallback
    from tools.campaigns.jobs.hf_job import Tokens, quiet_args, tiny_gpt2

    class Pad(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            time.sleep(STEP_PAD_S)

    torch.manual_seed(0)
    callback = ETTCallback(job_id=os.environ.get("ETT_JOB_ID"), model_family="gpt2")
    args = quiet_args(work / "hf-output", steps, seed=0)
    trainer = Trainer(model=tiny_gpt2(), args=args, train_dataset=Tokens(512), callbacks=[Pad(), callback])
    trainer.train()
    return callback.errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--framework", choices=["lightning", "hf"], required=True)
    ap.add_argument("--work", required=True, type=Path, help="where each rank writes its hook calls")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--user-hook", action="store_true", help="Lightning: the job's own (counting) comm hook")
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    if a.framework == "lightning":
        errors = lightning_fit(a.steps, a.user_hook, a.work)
    else:
        errors = hf_train(a.steps, a.work)
    rank = int(os.environ.get("RANK", "0"))
    (a.work / f"hook-calls-rank-{rank}.txt").write_text(str(CALLS))
    print(f"rank {rank}: ett callback errors: {errors}")


if __name__ == "__main__":
    main()
