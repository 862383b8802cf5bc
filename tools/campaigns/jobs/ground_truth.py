"""Ground truth for the framework runs, kept apart from the callbacks under test.

The test runs each try of a job as a process and notes, itself, when it
spawned it and when it reaped it.  The training script logs, with its own
code (a module hook, its own callback, an overridden save; never through
ettcore), one CSV line per event to ``events-t<try>.csv``:

    kind,try,step,start,end     kind: process | train_start | step | eval | save | save_inside | crash | exit

``process`` is the script's first moment (after the standard library's
imports) and ``exit`` its last (an ``atexit`` handler that runs after
ettcore's; none when a signal killed the process), ``train_start`` is the
framework's own train-start hook, ``step`` a training
step that completed (``step`` = the global step after it), ``eval`` and
``save`` an evaluation and a checkpoint save (the torchrun job also logs
``save_inside``, its instants just inside the recorded phase, where ``save``'s
are just outside it), ``crash`` the instant the
script raised its injected error or sent itself a signal (for the torchrun
job: when rank 0's loop failed on the dead peer; other kinds are ignored).

From these, by the trace spec's definitions:

- wall: last reap - first spawn (and the bounds that hold however slowly the
  machine ran the processes: see :func:`compare`);
- NoF: tries that stopped before the last step;
- a step's time is from the end of the previous step or logged phase of the
  same try (the first step of a try: from the train start) to its own end;
  a step past the high-water mark is productive, the others are replay;
  the unfinished step of a try that stopped (its previous event's end to the
  ``crash`` instant) is replay too;
- TTR per interruption: the end of the last productive step of the stopped
  try to the start of the first productive step of a later try.
"""

from __future__ import annotations

import argparse
import atexit
import csv
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import polars as pl

from tools.campaigns import checkout_on_path


class EventLog:
    """The training script's own log (one unbuffered ``os.write`` a line)."""

    def __init__(self, work: str | os.PathLike, try_no: int) -> None:
        self.try_no = try_no
        self.fd = os.open(Path(work) / f"events-t{try_no}.csv", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, kind: str, step: int, start: float, end: float) -> None:
        os.write(self.fd, f"{kind},{self.try_no},{step},{start:.6f},{end:.6f}\n".encode())

    def lifetime(self, first_t: float) -> None:
        """Log ``process`` at ``first_t`` now and ``exit`` at interpreter exit.  Call it before anything of ettcore
        registers its own ``atexit`` handler: handlers run last-registered first, so this one runs after them."""
        self.write("process", 0, first_t, first_t)

        def at_exit() -> None:
            t = time.time()
            self.write("exit", 0, t, t)

        atexit.register(at_exit)


@dataclass
class Event:
    kind: str
    try_no: int
    step: int
    start: float
    end: float


@dataclass
class Process:
    try_no: int
    spawn_t: float
    reap_t: float
    returncode: int
    output: str = ""


def read_events(work: Path) -> list[Event]:
    out: list[Event] = []
    for path in sorted(Path(work).glob("events-t*.csv")):
        with open(path, newline="") as fh:
            for r in csv.reader(fh):
                if len(r) == 5:
                    out.append(Event(r[0], int(r[1]), int(r[2]), float(r[3]), float(r[4])))
    return sorted(out, key=lambda e: (e.try_no, e.start, e.end))


def job_arguments(doc: str) -> argparse.Namespace:
    """The command line shared by the framework job scripts."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--run-dir", required=True, help="the ETT recorder folder")
    ap.add_argument("--work", required=True, type=Path, help="checkpoints and the ground-truth log")
    ap.add_argument("--try", dest="try_no", type=int, required=True, help="which try of the job this process is")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--crash-at", type=int, help="raise an error in the step after this global step")
    ap.add_argument("--sigterm-at", type=int, help="send this process SIGTERM in the step after this global step")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (backend aot_eager)")
    return ap.parse_args()


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a job's process: one thread, offline, unbuffered, this checkout importable."""
    env = checkout_on_path(dict(os.environ))
    env.update(
        {
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


def exit_watchers(run_dir: Path) -> list[int]:
    """PIDs of the exit watchers (``python -m ettcore.integrations.process --watch PID RUN_DIR ...``) of ``run_dir``."""
    want = os.path.realpath(run_dir)
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if argv[1:4] == ["-m", "ettcore.integrations.process", "--watch"] and len(argv) > 5:
                if os.path.realpath(os.path.join(os.readlink(proc / "cwd"), argv[5])) == want:
                    found.append(int(proc.name))
        except OSError:  # gone while we looked
            continue
    return found


def wait_for_exit_watchers(run_dir: Path, hang_s: float = 600.0) -> float:
    """Wait until no exit watcher of ``run_dir`` runs: every end it writes is then on disk.  Returns the time seen.

    A watcher writes its records (the ``interpreter_exit`` span, then the attempt's end: two writes) after the process
    it watches is gone, so the test waits for the watcher itself, not for a file or a fixed pause.  Each watcher was
    started by its job before training, so after the job's process was reaped none is still to come.  ``hang_s`` only
    stops a watcher that never exits (a bug) from hanging the suite.
    """
    t0 = time.monotonic()
    while pids := exit_watchers(run_dir):
        if time.monotonic() - t0 > hang_s:
            raise AssertionError(f"exit watchers {pids} of {run_dir} still running after {hang_s:.0f} s")
        time.sleep(0.02)
    return time.time()


def run_tries(
    command: Callable[[int], list[str]],
    tries: int,
    *,
    env: dict[str, str] | None = None,
    gap_s: float = 0.3,
    timeout_s: float = 300.0,
    run_dir: Path | None = None,
) -> list[Process]:
    """Run try 0, 1, ... as processes, one after the other, ``gap_s`` apart (a re-queue).  With ``run_dir``, each
    gap starts once the previous try's exit watcher has written its end (as a scheduler re-queues a job that ended),
    however long a busy machine takes to run the watcher."""
    procs: list[Process] = []
    for k in range(tries):
        if k:
            if run_dir is not None:
                wait_for_exit_watchers(run_dir)
            time.sleep(gap_s)
        spawn = time.time()
        p = subprocess.Popen(
            command(k), env=env or child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            out, _ = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        procs.append(Process(k, spawn, time.time(), p.returncode, out))
    return procs


@dataclass
class Truth:
    wall_s: float
    nof: int
    final_step: int
    productive_s: float
    replay_s: float
    replayed_steps: int
    ttr_total_s: float
    steps_per_try: dict[int, tuple[int, int]] = field(default_factory=dict)  # try -> (first step, last step)
    median_step_s: float = 0.0
    wall_bounds: tuple[float, float] | None = None  # what the trace's wall must lie in (see compare)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def wall_bounds(events: list[Event], spawn_t: float, seen_t: float) -> tuple[float, float]:
    """Bounds of the trace's wall that hold however slowly a loaded machine ran the processes and their exit watchers.

    The trace's wall is the last attempt's end minus the first one's start.  The first start is the kernel's start of
    the first process: after ``spawn_t`` (less one 10 ms kernel tick and the millisecond the trace keeps) and before
    that process's first logged moment.  The last end is written by its exit watcher once the process is gone: after
    the process's last logged moment (its ``exit`` record, or whatever it logged last when a signal killed it) and
    before ``seen_t``, when the test saw every watcher gone.
    """
    first, last = min(e.try_no for e in events), max(e.try_no for e in events)
    start_hi = min(e.start for e in events if e.try_no == first)
    end_lo = max(e.end for e in events if e.try_no == last)
    return end_lo - start_hi - 0.001, seen_t - spawn_t + 0.011


def ground_truth(
    events: list[Event], final_step: int, spawn_t: float, reap_t: float, seen_t: float | None = None
) -> Truth:
    """The quantities of the module docstring; ``spawn_t``/``reap_t``: the job's first spawn and last reap; ``seen_t``:
    when the exit watchers were seen gone (:func:`wait_for_exit_watchers`), for the wall's bounds."""
    hwm = 0
    productive = replay = 0.0
    replayed = 0
    steps_per_try: dict[int, tuple[int, int]] = {}
    last_new_end: dict[int, float] = {}
    first_new_start: list[tuple[float, int]] = []
    durations: list[float] = []
    tries = sorted({e.try_no for e in events})
    for k in tries:
        prev_end: float | None = None
        for e in (e for e in events if e.try_no == k):
            if e.kind == "step":
                begin = e.start if prev_end is None else prev_end
                durations.append(e.end - begin)
                lo, _ = steps_per_try.get(k, (e.step, e.step))
                steps_per_try[k] = (lo, e.step)
                if e.step > hwm:
                    productive += e.end - begin
                    hwm = e.step
                    last_new_end[k] = e.end
                    first_new_start.append((begin, k))
                else:
                    replay += e.end - begin
                    replayed += 1
                prev_end = e.end
            elif e.kind == "train_start":
                prev_end = e.end
            elif e.kind == "crash":
                if prev_end is not None and e.start > prev_end:
                    replay += e.start - prev_end
            elif e.kind in ("eval", "save") and prev_end is not None:  # after training started
                prev_end = max(prev_end, e.end)
    interrupted = [k for k in tries if steps_per_try.get(k, (0, 0))[1] < final_step]
    ttr = 0.0
    for k in interrupted:
        resume = next((t for t, tr in first_new_start if tr > k), reap_t)
        ttr += resume - last_new_end.get(k, spawn_t)
    durations.sort()
    return Truth(
        wall_s=reap_t - spawn_t,
        nof=len(interrupted),
        final_step=hwm,
        productive_s=productive,
        replay_s=replay,
        replayed_steps=replayed,
        ttr_total_s=ttr,
        steps_per_try=steps_per_try,
        median_step_s=durations[len(durations) // 2] if durations else 0.0,
        wall_bounds=None if seen_t is None else wall_bounds(events, spawn_t, seen_t),
    )


def trace_measures(trace_dir: Path) -> dict[str, Any]:
    """The same quantities read from the trace, through ettcore (the metric is what is being checked)."""
    from ettcore import metric
    from ettcore.trace import load_trace

    row = metric.job_summary(load_trace(trace_dir)).row(0, named=True)
    spans = pl.read_parquet(trace_dir / "spans.parquet").with_columns(
        s=(pl.col("end") - pl.col("start")).dt.total_microseconds() / 1e6
    )
    attempts = pl.read_parquet(trace_dir / "attempts.parquet").sort("attempt")
    train = spans.filter(pl.col("phase") == "train")
    resumed = (
        train.group_by("attempt")
        .agg(pl.col("cursor_start").min().alias("c0"), pl.col("cursor_end").max().alias("c1"))
        .sort("attempt")
    )
    hwm, replayed = 0.0, 0.0
    for _, c0, c1 in resumed.iter_rows():
        replayed += max(0.0, min(hwm, c1) - c0)
        hwm = max(hwm, c1)
    first_train = train.group_by("attempt").agg(pl.col("start").min().alias("t_train"))
    in_training = spans.join(first_train, on="attempt").filter(pl.col("start") >= pl.col("t_train"))
    return {
        "row": row,
        "spans": spans,
        "attempts": attempts,
        "train_busy_s": float(train["s"].sum()),
        "phase_s_in_training": {
            p: float(v) for p, v in in_training.group_by("phase").agg(pl.col("s").sum()).iter_rows()
        },
        "replay_s": float(train["s"].sum()) - row["productive_s"],
        "final_cursor": train["cursor_end"].max(),
        "replayed_steps": replayed,
        "phase_s": {p: float(v) for p, v in spans.group_by("phase").agg(pl.col("s").sum()).iter_rows()},
    }


def compare(
    truth: Truth, trace_dir: Path, *, reasons: list[str], saves_evals: tuple[float, ...] | None = None
) -> list[dict[str, Any]]:
    """The trace against the ground truth: one row per quantity (truth, trace, tolerance, ok).

    Tolerances, and why:

    - wall: the trace's start is the kernel's process start (10 ms ticks), its
      end the instant the exit watcher saw the process gone; the test's clock
      just before spawning and just after reaping is close to them on an idle
      machine, but on a busy one the watcher may run long after the test
      reaped.  So the check is :func:`wall_bounds` (``ok``), and the tolerance
      shown is the largest distance from the test's own reading inside them;
    - NoF, end reasons, final cursor, replayed steps: exact;
    - productive, replay and TTR: 2% of the train time + 10 ms a try +
      NoF x 2 median steps.  Both sides time the same train intervals; what
      differs is where, inside one written train piece, the cursor crosses the
      high-water mark: the trace takes progress as linear within a piece, and
      the first steps after a restart (batch fast-forward, warm-up) are
      slower than the rest;
    - checkpoint-save and eval time once training started (the trace's busy
      time against the script's own timing around them): 2% + 5 ms each.
    """
    m = trace_measures(trace_dir)
    row = m["row"]
    tries = len(truth.steps_per_try)
    train = truth.productive_s + truth.replay_s
    soft = 0.02 * train + 0.01 * tries + 2 * truth.nof * truth.median_step_s
    if truth.wall_bounds is None:
        raise ValueError("the ground truth has no wall bounds: pass seen_t to ground_truth()")
    lo, hi = truth.wall_bounds
    out = [
        ("wall_s", truth.wall_s, row["wall_s"], (lo, hi)),
        ("NoF", truth.nof, row["nof"], 0),
        ("end reasons", reasons, m["attempts"]["end_reason"].to_list(), 0),
        ("final cursor (step)", truth.final_step, m["final_cursor"], 0),
        ("replayed steps", truth.replayed_steps, m["replayed_steps"], 0),
        ("productive_s", truth.productive_s, row["productive_s"], soft),
        ("replay_s", truth.replay_s, m["replay_s"], soft),
        ("ttr_total_s", truth.ttr_total_s, row["ttr_total_s"], soft),
    ]
    if saves_evals is not None:
        for name, phase, value, count in (
            ("checkpoint_save_s", "checkpoint_save", saves_evals[0], saves_evals[2]),
            ("eval_s", "eval", saves_evals[1], saves_evals[3]),
        ):
            out.append((name, value, m["phase_s_in_training"].get(phase, 0.0), 0.02 * value + 0.005 * count))
    rows = []
    for name, want, got, tol in out:
        if isinstance(tol, tuple):  # bounds: the row's tolerance is how far from the truth they reach
            ok, tol = tol[0] <= float(got) <= tol[1], max(want - tol[0], tol[1] - want)
        else:
            ok = want == got if tol == 0 else abs(float(got) - float(want)) <= tol
        rows.append({"quantity": name, "truth": want, "trace": got, "tolerance": tol, "ok": ok})
    return rows


def phase_truth(events: list[Event], kinds: tuple[str, ...] = ("save", "eval")) -> tuple[float, ...]:
    """Total seconds and counts of the logged saves and evaluations made while training (after a train start)."""
    started: set[int] = set()
    total = {k: 0.0 for k in kinds}
    count = {k: 0 for k in kinds}
    for e in events:
        if e.kind == "train_start":
            started.add(e.try_no)
        elif e.kind in kinds and e.try_no in started:
            total[e.kind] += e.end - e.start
            count[e.kind] += 1
    return (*[total[k] for k in kinds], *[count[k] for k in kinds])


def table(rows: list[dict[str, Any]]) -> str:
    """The comparison as a Markdown table."""

    def fmt(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| quantity | ground truth | trace | tolerance | ok |", "|---|---|---|---|---|"]
    for r in rows:
        tol = "exact" if r["tolerance"] == 0 else fmt(r["tolerance"])
        lines.append(
            f"| {r['quantity']} | {fmt(r['truth'])} | {fmt(r['trace'])} | {tol} | {'yes' if r['ok'] else 'NO'} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- what the framework tests share


@dataclass
class RestartRun:
    """A job run as tries (processes), its trace and its ground truth, compared."""

    procs: list[Process]
    conv: Any
    events: list[Event]
    truth: Truth
    rows: list[dict[str, Any]]
    spans: pl.DataFrame
    stages: dict[tuple[int, str], list[str]]  # (attempt, phase) -> the stages seen


def job_command(script: Path, run: Path, work: Path, extra: dict[int, list[str]]) -> Callable[[int], list[str]]:
    return lambda k: (
        [sys.executable, str(script), "--run-dir", str(run), "--work", str(work), "--try", str(k)] + extra.get(k, [])
    )


def stages_by_attempt(spans: pl.DataFrame) -> dict[tuple[int, str], list[str]]:
    st = spans.group_by("attempt", "phase").agg(pl.col("stage").unique().sort())
    return {(a, p): [s for s in stages if s is not None] for a, p, stages in st.iter_rows()}


def restart_run(
    script: Path, tmp_path: Path, plan: dict[int, list[str]], *, reasons: list[str], final_step: int = 60
) -> RestartRun:
    """Run the tries of ``plan`` one after the other, convert the run folder, compare with the ground truth."""
    from ettcore.importers.recorder import convert

    run, work = tmp_path / "run", tmp_path / "work"
    work.mkdir()
    procs = run_tries(job_command(script, run, work, plan), len(plan), run_dir=run)
    seen = wait_for_exit_watchers(run)  # the last exit watcher writes its end after the process is gone
    conv = convert(run, tmp_path / "trace")
    events = read_events(work)
    truth = ground_truth(events, final_step, procs[0].spawn_t, procs[-1].reap_t, seen)
    rows = compare(truth, tmp_path / "trace", reasons=reasons, saves_evals=phase_truth(events))
    spans = trace_measures(tmp_path / "trace")["spans"]
    return RestartRun(procs, conv, events, truth, rows, spans, stages_by_attempt(spans))


def check_compiled_first_step(spans: pl.DataFrame, events: list[Event]) -> float:
    """``pt2_compile`` spans inside the first step are most of its extra time, and no train span covers them.

    The script's own timing of the steps is the ground truth: the first step's
    extra time over a steady step is the compilations plus the first run of
    the compiled graphs.  Returns the seconds compiled inside the first step.
    """
    compile_s = spans.filter(pl.col("phase") == "pt2_compile")
    assert "dynamo" in set(compile_s["stage"])
    steps = [e for e in events if e.kind == "step"]
    durations = sorted(e.end - e.start for e in steps[1:])
    first, median = steps[0].end - steps[0].start, durations[len(durations) // 2]
    t0, t1 = pl.col("start").dt.epoch("us") / 1e6, pl.col("end").dt.epoch("us") / 1e6
    in_first = float(compile_s.filter((t0 >= steps[0].start) & (t1 <= steps[0].end))["s"].sum())
    assert 0 < in_first <= first
    assert in_first >= 0.5 * (first - median), (in_first, first, median)
    train = spans.filter(pl.col("phase") == "train")
    for s0, e0 in compile_s.select("start", "end").iter_rows():
        assert train.filter((pl.col("start") < e0) & (pl.col("end") > s0)).height == 0
    return in_first
