"""Per-step cost of keeping each rank's work and wait per window (who held a slow job back), in CPU time.

Run:  .venv/bin/python benchmarks/rank_timing_overhead.py [--calls 50000] [--repeats 5] [--buckets 1]

1. The hot path, once a step: ``--buckets`` calls of the communication hook (:meth:`RankTiming.comm_hook` around an
   inner hook that returns a ``torch.futures.Future``), each future completed (as gloo's work completes DDP's
   all-reduce, running the hook's completion callback), then :meth:`RankTiming.step`; against the same with the
   inner hook alone and no step call.  CPU time (``time.process_time``, all threads of the process, so the writer
   thread's own work is in it) per step, median of ``--repeats`` (alternated, so a drift of the machine's speed hits
   both alike); the difference is the added cost per step.
2. The writer thread: CPU time of one appended window line (``RankTiming.flush`` after a step), median of 200; it
   runs at most once a second, so per second of training that is its whole cost.

Needs the ``torch`` extra (the futures are torch's).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from ettcore.integrations.rank_timing import RankTiming  # noqa: E402

STEP_S = 0.010
PENDING: list = []
VALUE = [torch.zeros(1)]


def inner(state, bucket):
    """The job's own hook: a future that the benchmark completes, as gloo's work would."""
    fut = torch.futures.Future()
    PENDING.append(fut)
    return fut


def per_step(run: Path, calls: int, buckets: int, timed: bool) -> float:
    """CPU seconds a step: ``buckets`` hook calls whose futures complete, then (``timed``) ``RankTiming.step``."""
    rt = RankTiming(run, "bench", 0, 0)
    hook = rt.comm_hook(inner) if timed else inner
    rt.begin()
    t = time.process_time()
    for _ in range(calls):
        for _ in range(buckets):
            hook(None, None)
        for fut in PENDING:
            fut.set_result(VALUE)
        PENDING.clear()
        if timed:
            rt.step()
    spent = (time.process_time() - t) / calls
    rt.close()
    return spent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--buckets", type=int, default=1)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ett-timing-bench-") as tmp:
        base, timed = [], []
        for i in range(a.repeats):
            base.append(per_step(Path(tmp) / f"b{i}", a.calls, a.buckets, False))
            timed.append(per_step(Path(tmp) / f"t{i}", a.calls, a.buckets, True))
        rt = RankTiming(Path(tmp) / "w", "bench", 0, 0, start_thread=False)
        rt.begin()
        writes = []
        for _ in range(200):
            rt.step()
            t = time.process_time()
            rt.flush()
            writes.append(time.process_time() - t)
    b, r, w = statistics.median(base), statistics.median(timed), statistics.median(writes)
    print(
        f"{a.buckets} bucket(s) a step, {a.calls} steps, median of {a.repeats} runs; "
        f"added per step in the fastest runs: {(min(timed) - min(base)) * 1e9:.0f} ns"
    )
    print(f"hook(s) alone, no rank timing:      {b * 1e9:8.0f} ns CPU a step")
    print(f"with rank timing (hook + step):     {r * 1e9:8.0f} ns CPU a step")
    print(
        f"added per step:                     {(r - b) * 1e9:8.0f} ns = {100 * (r - b) / STEP_S:.5f}% of a 10 ms step"
    )
    print(f"one window line (at most once a second): {w * 1e6:7.1f} us CPU = {100 * w:.4f}% of a second")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
