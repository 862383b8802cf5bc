"""Run conditions of the live job (no PyTorch): what a run does, and the paired experiment.

The pair follows the paper's benchmark design: the same model, the same steps
and the same induced failures, run once as a *baseline* (no compile cache,
synchronous checkpoints, sequential trainer init) and once *optimized*
(compile cache reused across restarts, asynchronous checkpoints, overlapped
trainer init).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class RunConditions:
    """Everything that decides what one run of the live job does.

    ``fail_at_steps``: the data cursor (steps done) after which attempt 0, 1, ...
    is killed with SIGKILL; attempts past the list run to ``steps``.
    ``requeue_s``: time the supervisor waits before restarting (a stand-in for
    the scheduler's re-queue delay).  ``negotiation_s``: the data pipeline's
    partition-negotiation wait during warm-up (a stand-in for a remote
    service's latency; it is a sleep).  ``compile_cache``: ``"none"`` (every
    attempt compiles from an empty cache) or ``"megacache"`` (after a cold
    compile the attempt saves PyTorch's portable compile-cache artifacts,
    Mega-Cache, plus the compiled C++ kernel files, and later attempts load
    them into their own empty cache folder).  ``compile_cache_path``: where that
    archive lives (default: the job's work folder; a fleet shares one across the
    jobs of one model).

    Under a scheduler (``python -m tools.campaigns.attempt --slurm``) the scheduler
    restarts attempts, so failures are given by step instead: ``crash_at_steps``,
    each a step at which the attempt exits with status ``crash_exit`` the first
    time any attempt of the job reaches it (a marker in the work folder
    remembers), abruptly (``os._exit``: no cleanup, no final records).
    """

    job_id: str
    variant: str
    steps: int = 1200
    checkpoint_every: int = 100
    fail_at_steps: tuple[int, ...] = (450, 850)
    compile_cache: str = "none"
    async_checkpoint: bool = False
    overlapped_init: bool = False
    requeue_s: float = 1.0
    negotiation_s: float = 1.5
    warmup_batches: int = 16
    tables: int = 8
    rows: int = 20_000
    dim: int = 16
    batch: int = 256
    threads: int = 1
    progress_interval_s: float = 0.25
    seed: int = 1234
    crash_at_steps: tuple[int, ...] = ()
    crash_exit: int = 42
    compile_cache_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.compile_cache not in ("none", "megacache"):
            raise ValueError("compile_cache must be 'none' or 'megacache'")
        if self.steps < 1 or self.checkpoint_every < 1:
            raise ValueError("steps and checkpoint_every must be >= 1")
        if list(self.fail_at_steps) != sorted(set(self.fail_at_steps)) or any(
            not 0 < s < self.steps for s in self.fail_at_steps
        ):
            raise ValueError("fail_at_steps must be increasing and inside (0, steps)")
        if list(self.crash_at_steps) != sorted(set(self.crash_at_steps)) or any(
            not 0 < s < self.steps for s in self.crash_at_steps
        ):
            raise ValueError("crash_at_steps must be increasing and inside (0, steps)")
        if not 1 <= self.crash_exit <= 255:
            raise ValueError("crash_exit must be an exit status 1..255")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fail_at_steps"] = list(self.fail_at_steps)
        d["crash_at_steps"] = list(self.crash_at_steps)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunConditions":
        d = dict(d)
        d["fail_at_steps"] = tuple(d.get("fail_at_steps", ()))
        d["crash_at_steps"] = tuple(d.get("crash_at_steps", ()))
        return cls(**d)


BASELINE = RunConditions(job_id="live-baseline", variant="baseline")
OPTIMIZED = RunConditions(
    job_id="live-optimized", variant="optimized", compile_cache="megacache", async_checkpoint=True, overlapped_init=True
)


def paired(**overrides: Any) -> tuple[RunConditions, RunConditions]:
    """The baseline and optimized conditions, with the same ``overrides`` (steps, failures, ...) applied to both."""
    return replace(BASELINE, **overrides), replace(OPTIMIZED, **overrides)
