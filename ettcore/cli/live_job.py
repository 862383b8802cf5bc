"""``ett live-job``: run the paired live PyTorch experiment and regenerate data/live-job (needs PyTorch)."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    """``ett live-job``: run the paired live experiment and regenerate data/live-job (needs PyTorch)."""
    from ettcore.demo.live_job import add_arguments  # the demo imports PyTorch only when it runs

    add_arguments(
        subparsers.add_parser("live-job", help="run the paired live PyTorch job and regenerate data/live-job")
    )
