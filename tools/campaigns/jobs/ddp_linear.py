"""The model the ``torchrun`` demo jobs train: a process group (gloo, CPU) and a linear model in DDP.

Shared by ``elastic_job.py`` and ``slow_job.py``; each times the setup as its recorder's ``trainer_init`` phases.
Import it after ``torch.set_num_threads(1)``.
"""

from __future__ import annotations

from typing import Any

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
