"""The model the ``torchrun`` demo jobs train: a process group (gloo, CPU) and a linear model in DDP.

Shared by ``elastic_job.py`` and ``slow_job.py``; each times the setup as its recorder's ``trainer_init`` phases.
Import it after ``torch.set_num_threads(1)``.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.distributed as dist


def setup(tl: Any, rank: int) -> tuple[torch.nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Tensor]:
    """Join the process group and build the model (seed 0 on every rank), its SGD optimizer and 256 examples of this
    rank's own data (seed ``rank``), timed as ``tl``'s ``trainer_init`` phases ``process_group_init`` and
    ``model_setup``: ``(model, optimizer, x, y)``."""
    with tl.phase("trainer_init", "process_group_init"):
        dist.init_process_group("gloo")
    with tl.phase("trainer_init", "model_setup"):
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(rank)
        x, y = torch.randn(256, 16, generator=g), torch.randn(256, 1, generator=g)
    return model, opt, x, y


def train_step(
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    step: int,
    before_backward: Callable[[], None] | None = None,
) -> None:
    """One step on the 8 examples from ``8 x step`` (mod 256): forward, zero the gradients, ``before_backward`` (a
    job's injected delay), backward (DDP's all-reduce: the ranks meet there) and the optimizer's step."""
    i = (step * 8) % 256
    loss = torch.nn.functional.mse_loss(model(x[i : i + 8]), y[i : i + 8])
    opt.zero_grad()
    if before_backward is not None:
        before_backward()
    loss.backward()
    opt.step()
