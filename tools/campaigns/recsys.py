"""A small recommendation model and its synthetic click data (needs PyTorch).

Model (DLRM-like): a bottom MLP over ``n_dense`` dense features, one
``EmbeddingBag`` (sum pooling) per sparse feature, the pooled vectors and the
bottom output concatenated into a top MLP that predicts a click logit.

Data: *synthetic* click examples, a pure function of the batch index (seeded
generator), so a restarted attempt replays exactly the batches it lost.  The
label depends on the features (a fixed random "true" model), so the loss falls
as the model learns.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class ModelShape:
    tables: int = 8
    rows: int = 20_000
    dim: int = 32
    bag: int = 4
    n_dense: int = 13
    batch: int = 512


class ClickModel(nn.Module):
    """Bottom MLP + embedding bags + top MLP -> click logit."""

    def __init__(self, shape: ModelShape):
        super().__init__()
        self.shape = shape
        self.embs = nn.ModuleList(nn.EmbeddingBag(shape.rows, shape.dim, mode="sum") for _ in range(shape.tables))
        self.bottom = nn.Sequential(nn.Linear(shape.n_dense, 64), nn.ReLU(), nn.Linear(64, shape.dim), nn.ReLU())
        self.top = nn.Sequential(
            nn.Linear(shape.dim * (shape.tables + 1), 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1)
        )

    def forward(self, dense: torch.Tensor, idx: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        pooled = [self.bottom(dense)] + [emb(idx[i], offsets) for i, emb in enumerate(self.embs)]
        return self.top(torch.cat(pooled, dim=1)).squeeze(1)


class ClickData:
    """Synthetic click batches; batch ``i`` is always the same tensors."""

    def __init__(self, shape: ModelShape, seed: int = 1234):
        self.shape = shape
        self.seed = seed
        g = torch.Generator().manual_seed(seed)
        self.true_dense = torch.randn(shape.n_dense, generator=g)
        self.true_rows = torch.randn(shape.tables, shape.rows, generator=g) * 0.5
        self.offsets = torch.arange(0, shape.batch * shape.bag, shape.bag)

    def schema(self) -> dict[str, object]:
        s = self.shape
        return {"dense": ("float32", s.n_dense), "sparse": ("int64", s.tables, s.bag), "label": ("float32",)}

    def batch(self, i: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        s = self.shape
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        dense = torch.randn(s.batch, s.n_dense, generator=g)
        idx = torch.randint(0, s.rows, (s.tables, s.batch * s.bag), generator=g)
        score = dense @ self.true_dense
        score = score + self.true_rows.gather(1, idx).view(s.tables, s.batch, s.bag).sum(dim=(0, 2)) * 0.25
        label = (torch.rand(s.batch, generator=g) < torch.sigmoid(score)).float()
        return dense, idx, self.offsets, label

    @staticmethod
    def fast_batch_of(s: ModelShape) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """A synthetic batch of the right shapes (no data pipeline needed) for compiling ahead of the data."""
        return (
            torch.zeros(s.batch, s.n_dense),
            torch.zeros(s.tables, s.batch * s.bag, dtype=torch.int64),
            torch.arange(0, s.batch * s.bag, s.bag),
            torch.zeros(s.batch),
        )
