"""The paired live-job experiment and its bundled results (no PyTorch needed to read them).

Run (needs the ``torch`` extra; a few minutes on a 2-core CPU machine)::

    .venv/bin/python -m tools.campaigns.live_job          # or: ett live-job

It runs the baseline and the optimized job (:mod:`tools.campaigns.conditions`)
side by side (so both see the same load on a shared machine; ``--sequential``
for one after the other) through :mod:`tools.campaigns.supervisor`, converts the
recorder files of both into one trace, and replaces the bundled results in
``data/live-job``:

- ``trace/``     the measured trace (both jobs; ``jobs.variant`` tells them apart);
- ``recorder/``  the raw recorder JSONL the trace was converted from;
- ``runs.json``  per run: conditions, supervisor ground truth; the machine;
  the recorder's conversion notes; and :func:`measurements` of the trace.

:func:`ettcore.bundled.live_job` reads the results back without PyTorch.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import polars as pl

from ettcore.atomic import atomic_path, write_text
from ettcore.bundled import LIVE_JOB
from ettcore.importers.recorder import convert
from tools.campaigns.conditions import RunConditions, paired

COMMAND = ".venv/bin/python -m tools.campaigns.live_job"


def _machine() -> dict[str, Any]:
    try:
        torch_version = importlib_metadata.version("torch")
    except importlib_metadata.PackageNotFoundError:
        torch_version = None
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch_version,
        "device": "cpu",
        "load_average_at_end": load,
    }


def measurements(trace_dir: str | Path) -> dict[str, Any]:
    """The headline numbers of each run, read from the trace (spans and :func:`ettcore.metric.job_summary`).

    Per variant: wall, productive, ETT%, TTS, NoF, TTR (mean and total); per
    attempt the ``pt2_compile``/``compile`` stage seconds (attempt 0 is cold;
    later attempts are warm when the run uses the compile cache) and the
    ``cache_load``/``cache_save`` seconds; ``checkpoint_save`` blocking
    seconds (mean, median, max, count).  Across variants: ETT% gain (points)
    and the TTS and TTR reductions and their ratio (TTR reduction / TTS
    reduction, the paper's "1.8-8.6x").
    """
    from ettcore import metric
    from ettcore.trace.load import load_trace

    trace_dir = Path(trace_dir)
    summary = metric.job_summary(load_trace(trace_dir))
    spans = pl.read_parquet(trace_dir / "spans.parquet").with_columns(
        seconds=(pl.col("end") - pl.col("start")).dt.total_microseconds() / 1e6
    )
    out: dict[str, Any] = {}
    for row in summary.iter_rows(named=True):
        job = row["job_id"]
        js = spans.filter(pl.col("job_id") == job)
        stage = lambda ph, st: js.filter((pl.col("phase") == ph) & (pl.col("stage") == st))  # noqa: E731
        compile_by_attempt = {
            int(a): float(s) for a, s in stage("pt2_compile", "compile").select("attempt", "seconds").iter_rows()
        }
        saves = js.filter(pl.col("phase") == "checkpoint_save")["seconds"]
        out[row["variant"]] = {
            "job_id": job,
            "wall_s": row["wall_s"],
            "productive_s": row["productive_s"],
            "ett_pct": row["ett_pct"],
            "tts_s": row["tts_s"],
            "nof": row["nof"],
            "ttr_mean_s": row["ttr_mean_s"],
            "ttr_total_s": row["ttr_total_s"],
            "in_training_loss_s": row["in_training_loss_s"],
            "shutdown_tail_s": row["shutdown_tail_s"],
            "components_s": {
                c: row[f"{c}_s"]
                for c in (
                    "scheduling",
                    "hardware_setup",
                    "trainer_init",
                    "pt2_compile",
                    "wasted_training",
                    "shutdown",
                    "unattributed",
                )
            },
            "compile_s_by_attempt": compile_by_attempt,
            "cache_load_s": stage("pt2_compile", "cache_load")["seconds"].to_list(),
            "cache_save_s": stage("pt2_compile", "cache_save")["seconds"].to_list(),
            "checkpoint_save_blocking_s": {
                "stage": js.filter(pl.col("phase") == "checkpoint_save")["stage"].unique().to_list(),
                "count": saves.len(),
                "mean": saves.mean(),
                "median": saves.median(),
                "max": saves.max(),
            },
        }
    if "baseline" in out and "optimized" in out:
        b, o = out["baseline"], out["optimized"]
        d_tts = b["tts_s"] - o["tts_s"]
        d_ttr = (
            b["ttr_mean_s"] - o["ttr_mean_s"] if b["ttr_mean_s"] is not None and o["ttr_mean_s"] is not None else None
        )
        out["pair"] = {
            "ett_gain_pct_points": o["ett_pct"] - b["ett_pct"],
            "tts_reduction_s": d_tts,
            "ttr_reduction_s": d_ttr,
            "ttr_over_tts_reduction": d_ttr / d_tts if d_ttr is not None and d_tts > 0 else None,
            "compile_cold_s": b["compile_s_by_attempt"].get(0),
            "compile_warm_s": [v for k, v in sorted(o["compile_s_by_attempt"].items()) if k > 0],
            "compile_cold_no_cache_restarts_s": [v for k, v in sorted(b["compile_s_by_attempt"].items()) if k > 0],
            "save_blocking_sync_mean_s": b["checkpoint_save_blocking_s"]["mean"],
            "save_blocking_async_mean_s": o["checkpoint_save_blocking_s"]["mean"],
        }
    return out


def run_pair(
    out_dir: str | Path = LIVE_JOB,
    *,
    work: str | Path | None = None,
    keep_work: bool = False,
    variants: tuple[str, ...] = ("baseline", "optimized"),
    parallel: bool = True,
    **overrides: Any,
) -> dict[str, Any]:
    """Run the paired experiment and replace ``out_dir``'s ``trace/``, ``recorder/`` and ``runs.json``.

    ``parallel`` (default): the two runs go side by side, each with one
    intra-op thread, so both see the same machine load from other work (on a
    shared machine, load changes by a factor of several within minutes and
    would otherwise decide the comparison).  When the baseline's longer run
    outlasts the optimized one it has the machine to itself, which favours the
    baseline.
    """
    from tools.campaigns.supervisor import run_job

    out_dir = Path(out_dir)
    work_root = Path(work) if work else Path(tempfile.mkdtemp(prefix="ett-live-job-"))
    work_root.mkdir(parents=True, exist_ok=True)
    rec_dir = work_root / "recorder"
    if rec_dir.exists():
        shutil.rmtree(rec_dir)
    started = datetime.now(timezone.utc)
    t0 = time.time()
    runs: dict[str, Any] = {}

    def one(cond: RunConditions) -> None:
        print(f"[live-job] running {cond.variant} ({cond.job_id}) ...", flush=True)
        t = time.time()
        gt = run_job(cond, work_root / cond.variant, rec_dir)
        print(f"[live-job] {cond.variant} done in {time.time() - t:.1f} s", flush=True)
        runs[cond.variant] = {"conditions": cond.as_dict(), "ground_truth": gt}

    try:
        todo = [c for c in paired(**overrides) if c.variant in variants]
        if parallel:
            with ThreadPoolExecutor(max_workers=len(todo)) as pool:
                for fut in [pool.submit(one, c) for c in todo]:
                    fut.result()
        else:
            for cond in todo:
                one(cond)
        meta = {
            "synthetic": False,
            "measured": True,
            "training_data": "synthetic click data (generated)",
            "source": f"tools.campaigns.live_job, measured on this machine ({COMMAND})",
            "machine": _machine(),
            "started_utc": started.isoformat(),
        }
        with atomic_path(out_dir / "recorder", directory=True) as tmp:
            for p in sorted(rec_dir.glob("*.jsonl")):
                shutil.copy2(p, tmp / p.name)
        conv = convert(out_dir / "recorder", out_dir / "trace", metadata=meta, notes_relative_to=out_dir)
        result = {
            "generated_by": COMMAND,
            "parallel": parallel,
            "started_utc": started.isoformat(),
            "elapsed_s": time.time() - t0,
            "machine": meta["machine"],
            "note": "measured on the project's 2-core CPU development machine; the training data is synthetic, "
            "the timings are real",
            "recorder_notes": conv.note_lines(out_dir),
            "runs": runs,
            "measurements": measurements(out_dir / "trace"),
        }
        write_text(out_dir / "runs.json", json.dumps(result, indent=2, sort_keys=True) + "\n")
        return result
    finally:
        if not keep_work and work is None:
            shutil.rmtree(work_root, ignore_errors=True)


def rebuild(out_dir: str | Path = LIVE_JOB) -> dict[str, Any]:
    """Re-convert the bundled recorder files into ``trace/`` and recompute the measurements (no PyTorch, no rerun).

    For when the conversion changes; the runs' conditions and ground truth are kept as measured.
    """
    out_dir = Path(out_dir)
    result = json.loads((out_dir / "runs.json").read_text(encoding="utf-8"))
    old_meta = json.loads((out_dir / "trace" / "trace.json").read_text(encoding="utf-8"))
    meta = {k: v for k, v in old_meta.items() if k != "recorder_notes"}
    conv = convert(out_dir / "recorder", out_dir / "trace", metadata=meta, notes_relative_to=out_dir)
    result["recorder_notes"] = conv.note_lines(out_dir)
    result["measurements"] = measurements(out_dir / "trace")
    write_text(out_dir / "runs.json", json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result


def _cli(args: argparse.Namespace) -> int:
    if args.rebuild:
        rebuild(args.out)
        print(f"re-converted {args.out / 'recorder'} into {args.out / 'trace'}; measurements updated")
        return 0
    try:
        import torch  # noqa: F401
    except ImportError:
        print("the live job needs PyTorch: .venv/bin/pip install 'ettcore[torch]'", file=sys.stderr)
        return 2
    overrides: dict[str, Any] = {}
    if args.steps is not None:
        overrides["steps"] = args.steps
    if args.checkpoint_every is not None:
        overrides["checkpoint_every"] = args.checkpoint_every
    if args.fail_at is not None:
        overrides["fail_at_steps"] = tuple(args.fail_at)
    result = run_pair(args.out, work=args.work, keep_work=args.keep_work, parallel=not args.sequential, **overrides)
    m = result["measurements"]
    for v in ("baseline", "optimized"):
        r = m[v]
        print(
            f"{v:9s} wall {r['wall_s']:.1f} s  ETT% {r['ett_pct']:.1f}  TTS {r['tts_s']:.1f} s  NoF {r['nof']}  "
            f"TTR {r['ttr_mean_s']:.1f} s  compile/attempt {r['compile_s_by_attempt']}  "
            f"save blocking mean {r['checkpoint_save_blocking_s']['mean']:.3f} s"
        )
    print(json.dumps(m.get("pair"), indent=2))
    print(f"wrote {args.out} in {result['elapsed_s']:.0f} s")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--out", type=Path, default=LIVE_JOB, help="results folder (default: data/live-job)")
    p.add_argument(
        "--work", type=Path, default=None, help="work folder for checkpoints and caches (default: a temporary one)"
    )
    p.add_argument("--keep-work", action="store_true", help="keep the work folder")
    p.add_argument(
        "--rebuild", action="store_true", help="only re-convert the bundled recorder files (no PyTorch, no run)"
    )
    p.add_argument("--sequential", action="store_true", help="run baseline then optimized (default: side by side)")
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--checkpoint-every", type=int, default=None)
    p.add_argument(
        "--fail-at", type=int, nargs="*", default=None, help="steps after which attempts 0, 1, ... are killed"
    )
    p.set_defaults(func=_cli)
    return p


def main(argv: list[str] | None = None) -> int:
    # run by `ett live-job`, its usage says so ($ETT_PROG); run as a script, its own name
    parser = argparse.ArgumentParser(prog=os.environ.get("ETT_PROG"), description="Run the paired live-job experiment.")
    args = add_arguments(parser).parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
