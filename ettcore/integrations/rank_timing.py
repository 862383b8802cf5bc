"""Each rank's work and wait per window: which rank held a synchronous job back (slow time, docs/metric.md).

In a synchronous data-parallel job every rank's step takes as long as the slowest rank's: the others wait for it at
the synchronization.  Each rank keeps, per window of about ``interval_s`` (1 s) of its steps, how many steps it
ended, how long it **waited** and how long it **worked** (the rest of its steps' time), and appends one JSON line a
window to ``timing/<job>-rank-NNNNN.jsonl`` in the run folder::

    {"job_id": "j", "attempt": 0, "rank": 1, "node": "host-b", "start": 1769900000.0, "end": 1769900001.02,
     "steps": 8, "work_s": 0.97, "wait_s": 0.05}

**What is measured.** The wait of a step is the time from the first call of DDP's communication hook in that step
(the first gradient bucket ready) to the completion of the last bucket's all-reduce (:meth:`RankTiming.comm_hook`
wraps the job's own hook, or DDP's default all-reduce, and notes when each future completes).  A rank that arrives
last at the all-reduce waits only for the transfer; the others wait for it.  The work is the step's time (from the
previous :meth:`RankTiming.step`, or :meth:`RankTiming.begin`, to this one) minus its wait.  **Limits:** only the
gradient all-reduce is timed: a wait in another collective (a barrier, the data loader's, an optimizer's sharded
gather) counts as work; communication that overlaps the backward pass counts as wait from the first bucket ready
even while the rank still computes later buckets, so a rank's wait is an upper bound (its work a lower bound) and the
ranks are compared with each other, not read as absolute times.

**Off the hot path.** The hook adds a clock read and a future callback a bucket; :meth:`RankTiming.step` a clock
read, a few additions and an uncontended lock.  A daemon thread closes the window every ``interval_s`` and appends
its line (``benchmarks/rank_timing_overhead.py`` measures the cost per step).  Errors are counted, never raised into
training.

**What the user gives.** The Lightning and Hugging Face callbacks (:mod:`ettcore.integrations.lightning`,
:mod:`ettcore.integrations.huggingface`) hold the model and register the hook themselves when training runs under
DDP with more than one process, through :func:`attach`: DDP takes one communication hook and refuses a second, so
the job's own hook is wrapped when the framework still has it to register (Lightning's ``DDPStrategy(ddp_comm_hook=
...)``), DDP's default all-reduce is wrapped when the model has no hook, and a hook already registered on the model
(it cannot be wrapped without replacing it) leaves timing off with one warning line.  A plain ``torchrun`` loop
gives the recorder no model, so the loop registers it and calls :meth:`RankTiming.step` after each optimizer step::

    timing = RankTiming(run_dir, job_id, attempt, rank)
    ddp.register_comm_hook(None, timing.comm_hook())      # or timing.comm_hook(my_hook) around the job's own
    timing.begin()
    for batch in data:
        ...
        timing.step()
    timing.close()
"""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable

from ettcore.importers.recorder import RANK_TIMING_DIR, rank_timing_name
from ettcore.integrations.rank_progress import rank_head
from ettcore.integrations.recorder import RecorderWarning


class RankTiming:
    """One rank's steps, work and wait per window, appended by a daemon thread every ``interval_s`` seconds."""

    def __init__(
        self,
        run_dir: str | os.PathLike,
        job_id: str,
        attempt: int,
        rank: int,
        *,
        node: str | None = None,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.time,
        start_thread: bool = True,
    ) -> None:
        self.path = Path(run_dir) / RANK_TIMING_DIR / rank_timing_name(job_id, rank)
        self.head = rank_head(job_id, attempt, rank, node)
        self.interval_s = float(interval_s)
        self.clock = clock
        self.errors = 0
        self._lock = threading.Lock()
        self._last: float | None = None  # end of the previous step (or begin)
        self._first_call: float | None = None  # this step's first hook call
        self._last_done: float | None = None  # this step's latest all-reduce completion
        self._window: list[Any] = [None, None, 0, 0.0, 0.0]  # start, end, steps, work_s, wait_s
        self._stop = threading.Event()
        self._thread = None
        if start_thread:
            self._thread = threading.Thread(target=self._run, name=f"ett-rank-timing-{rank}", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------------ the hot path

    def begin(self, t: float | None = None) -> None:
        """Training starts (or resumes after a pause that is not a step): the next step's time is counted from now."""
        self._last = self.clock() if t is None else t
        self._first_call = self._last_done = None

    def comm_hook(self, inner: Callable | None = None) -> Callable:
        """A DDP communication hook that runs ``inner`` (the job's own hook; default DDP's all-reduce) and notes when
        it was called and when its future completed."""
        if inner is None:
            from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

            inner = allreduce_hook

        def done(fut):
            self._last_done = self.clock()
            return fut.value()

        # no annotations: DDP refuses a hook whose annotations are not its own types (here they would be strings)
        def hook(state, bucket):
            if self._first_call is None:
                self._first_call = self.clock()
            return inner(state, bucket).then(done)

        return hook

    def step(self, t: float | None = None) -> None:
        """A step ended (after the optimizer step, when its all-reduce has completed)."""
        now = self.clock() if t is None else t
        last, first, done = self._last, self._first_call, self._last_done
        self._last, self._first_call, self._last_done = now, None, None
        if last is None:
            return
        wait = max(0.0, min(done, now) - first) if first is not None and done is not None else 0.0
        total = max(0.0, now - last)
        wait = min(wait, total)
        with self._lock:
            w = self._window
            if w[0] is None:
                w[0] = last
            w[1] = now
            w[2] += 1
            w[3] += total - wait
            w[4] += wait

    # ------------------------------------------------------------------ the writer

    def flush(self) -> None:
        """Append the current window's line if it has steps, and start a new window (never raises)."""
        with self._lock:
            w, self._window = self._window, [None, None, 0, 0.0, 0.0]
        if not w[2]:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            doc = {**self.head, "start": w[0], "end": w[1], "steps": w[2], "work_s": w[3], "wait_s": w[4]}
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(doc) + "\n")
        except Exception:  # noqa: BLE001 - never stop training
            self.errors += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.flush()

    def close(self) -> None:
        """Stop the thread and write the last window."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.flush()


def attach(ddp: Any, timing: RankTiming, given: Callable | None = None) -> bool:
    """Time ``ddp``'s all-reduce with ``timing`` (a ``DistributedDataParallel`` model); whether timing is on.

    ``given``: the hook (``timing.comm_hook(the job's own)``) already handed to the framework to register; if the
    model holds it, timing is on.  Otherwise, if the model has no communication hook, :meth:`RankTiming.comm_hook`
    around DDP's default all-reduce is registered (what DDP runs without a hook: the training is unchanged).  A hook
    already registered (DDP takes one and cannot replace it) leaves timing off, with one warning line; so does a
    failed registration (a built-in C++ hook is not visible from Python until DDP refuses a second).  Never raises.
    """
    registered = list(getattr(ddp, "_comm_hooks", None) or [])
    if given is not None and any(hook is given for hook, _ in registered):
        return True
    if registered:
        name = getattr(registered[0][0], "__qualname__", type(registered[0][0]).__name__)
        return _off(f"the model's DDP already has the communication hook {name}, which cannot be wrapped")
    try:
        ddp.register_comm_hook(None, timing.comm_hook())
    except Exception as exc:  # noqa: BLE001 - never stop training
        first = (str(exc).splitlines() or [""])[0]
        return _off(f"DDP refused the timing hook ({type(exc).__name__}: {first})")
    return True


def _off(why: str) -> bool:
    try:
        warnings.warn(f"ettcore rank timing off (training continues): {why}", RecorderWarning, stacklevel=3)
    except Exception:  # noqa: BLE001 - warnings turned into errors
        pass
    return False
