"""Per-step cost of keeping each rank's last progress (for live hang detection), in CPU time, against a 10 ms step.

Run:  .venv/bin/python benchmarks/rank_progress_overhead.py [--calls 200000] [--repeats 5]

1. The hot path: :meth:`ettcore.integrations.phase_clock.PhaseClock.step` inside an open train span of a real
   recorder (one train span written a second), with and without a
   :class:`~ettcore.integrations.rank_progress.RankProgress` attached; CPU time (``time.process_time``, all threads
   of the process, so the writer thread's own work is in it) per call, median of ``--repeats``; the difference is
   the added cost per step.
2. The writer thread: CPU time of one write of the file (``RankProgress.flush`` after a change), median of 200; it
   runs at most once a second, so per second of training that is its whole cost.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ettcore.integrations.phase_clock import PhaseClock  # noqa: E402
from ettcore.integrations.rank_progress import RankProgress  # noqa: E402
from ettcore.integrations.recorder import Recorder  # noqa: E402

STEP_S = 0.010


def per_step(run: Path, calls: int, with_ranks: bool) -> float:
    rec = Recorder(run, "bench", 0)
    clock = PhaseClock(rec)
    if with_ranks:
        clock.ranks = RankProgress(run, "bench", 0, 0)
    clock.train_begin(0)
    t = time.process_time()
    for i in range(1, calls + 1):
        clock.step(i)
    spent = (time.process_time() - t) / calls
    clock.train_end()
    if clock.ranks is not None:
        clock.ranks.close()
    rec.close()
    return spent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ett-rank-bench-") as tmp:
        base, ranks = [], []
        for i in range(a.repeats):  # alternated, so a drift of the machine's speed hits both alike
            base.append(per_step(Path(tmp) / f"b{i}", a.calls, False))
            ranks.append(per_step(Path(tmp) / f"r{i}", a.calls, True))
        p = RankProgress(Path(tmp) / "w", "bench", 0, 0, interval_s=3600)
        writes = []
        for i in range(200):
            p.step(i + 1)
            t = time.process_time()
            p.flush()
            writes.append(time.process_time() - t)
        p.close()
    b, r, w = statistics.median(base), statistics.median(ranks), statistics.median(writes)
    print(f"PhaseClock.step without rank progress: {b * 1e9:8.0f} ns CPU a step")
    print(f"PhaseClock.step with rank progress:    {r * 1e9:8.0f} ns CPU a step")
    print(
        f"added per step:                        {(r - b) * 1e9:8.0f} ns = {100 * (r - b) / STEP_S:.5f}% of a 10 ms "
        "step"
    )
    print(f"one file write (at most once a second): {w * 1e6:7.1f} us CPU = {100 * w:.4f}% of a second")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
