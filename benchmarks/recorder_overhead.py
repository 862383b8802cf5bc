"""Recorder overhead per training step, against a 10 ms step (target: under 1%).

Run:  .venv/bin/python benchmarks/recorder_overhead.py [--steps 300] [--repeats 5]

Two measurements, both printed as a ratio to the step time:

1. per call (the precise one): the cost of ``TrainSpan.advance`` per step,
   timed over many calls, with the default progress interval (1 s: a progress
   line every second) and with interval 0 (a line written every step, the
   worst case); also one ``phase()`` enter/exit (two lines written).
2. end to end: a loop of simulated 10 ms steps (a busy wait, so the step
   costs CPU like a real one) run alternately with and without the
   recorder; the ratio of median loop times.  On a shared machine this one
   is noisy at the 1% level, which is why (1) is the number to quote.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ettcore.integrations.recorder import Recorder  # noqa: E402

STEP_S = 0.010


def per_call_advance(directory: Path, interval: float, calls: int = 50_000, repeats: int = 5) -> float:
    """Best-of-``repeats`` seconds per ``advance()`` call."""
    rec = Recorder(directory, "bench", 0, writer=f"advance-{interval}", progress_interval_s=interval)
    best = float("inf")
    with rec.train_span(0) as span:
        for r in range(repeats):
            t = time.perf_counter()
            for i in range(calls):
                span.advance(r * calls + i)
            best = min(best, (time.perf_counter() - t) / calls)
    rec.close()
    return best


def per_call_phase(directory: Path, calls: int = 5_000, repeats: int = 5) -> float:
    """Best-of-``repeats`` seconds per ``with rec.phase(...)`` (enter and exit)."""
    rec = Recorder(directory, "bench", 0, writer="phase")
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            with rec.phase("checkpoint_save", stage="sync"):
                pass
        best = min(best, (time.perf_counter() - t) / calls)
    rec.close()
    return best


def busy_step() -> None:
    end = time.perf_counter() + STEP_S
    while time.perf_counter() < end:
        pass


def loop(steps: int, rec: Recorder | None) -> float:
    t = time.perf_counter()
    if rec is None:
        for _ in range(steps):
            busy_step()
    else:
        with rec.train_span(0) as span:
            for i in range(steps):
                busy_step()
                span.advance(i + 1)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ett-recorder-bench-") as tmp:
        d = Path(tmp)
        a_default = per_call_advance(d, 1.0)
        a_every = per_call_advance(d, 0.0)
        ph = per_call_phase(d)
        print(
            f"advance(), progress line every 1 s : {a_default * 1e6:8.3f} us/step = {100 * a_default / STEP_S:.4f}% of "
            "a 10 ms step"
        )
        print(
            f"advance(), progress line every step: {a_every * 1e6:8.3f} us/step = {100 * a_every / STEP_S:.4f}% of a "
            "10 ms step"
        )
        print(
            f"phase() enter+exit (two lines)     : {ph * 1e6:8.3f} us/span = {100 * ph / STEP_S:.4f}% of a 10 ms step"
        )
        base, rec_t = [], []
        for r in range(args.repeats):
            base.append(loop(args.steps, None))
            rec = Recorder(d, "bench", r + 1, writer="loop")
            rec_t.append(loop(args.steps, rec))
            rec.close()
        b, w = statistics.median(base), statistics.median(rec_t)
        print(
            f"end to end, {args.steps} x 10 ms steps, median of {args.repeats}: without {b:.4f} s, with {w:.4f} s, "
            f"ratio {w / b:.4f} ({100 * (w / b - 1):+.3f}%; noise on a shared machine is of this order)"
        )
        ok = a_default < 0.01 * STEP_S
        print("PASS: under 1% of a 10 ms step" if ok else "FAIL: over 1% of a 10 ms step")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
