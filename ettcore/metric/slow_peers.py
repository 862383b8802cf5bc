"""Slowness as the peers measure it, beside this project's slow time, on the same recorded ranks' windows.

Two published measures of slow training, computed from the trace's ``rank_timing`` table (each rank's steps, work and
wait per window, docs/trace-format.md) and set beside :mod:`ettcore.metric.slow`'s slow seconds and GPU-hours and the
rank and node :func:`ettcore.metric.slow.holders` names:

- **Google's step-time deviation** (ml-goodput-measurement, ``GoodputCalculator.get_step_deviation``), computed by
  its own package: rank 0's step start times are written through its ``GoodputRecorder.record_step_start_time`` into
  an in-memory stand-in for Cloud Logging (:class:`ettcore.importers.goodput.MemoryLogger`: the only part replaced;
  its cache goes to a temporary folder, nothing reaches Google Cloud), and its calculator returns each step's
  deviation, ``|step time - ideal step time|`` (s). A window of ``n`` steps gives ``n`` step starts evenly spaced in
  it (the windows keep no per-step time, so a window holding a slowed and a normal step shares its time between
  them). The package computes its ideal step time only from steps of 1 s or more (these are about 0.25 s), so it is
  given one, ``configured_ideal_step_time``, by the package's own rule less that floor: the mean of the steps that
  are not anomalous, anomalous being longer than the median plus 3 median absolute deviations
  (``goodput_utils.get_anomalous_and_normal_step_times``). Per job: the largest deviation, the anomalous steps and
  their extra time over the normal steps' mean (``goodput_utils.get_extra_time_from_anomalous_steps``), Google's
  nearest figure to slow seconds.
- **NVIDIA's relative straggler score** (nvidia-resiliency-ext, ``straggler.reporting.ReportGenerator``), by its
  published definition, since its code times sections through CUPTI on a GPU: per report interval and per rank, the
  median time of a timed section over the interval, and the rank's score is the smallest median of any rank divided
  by its own (1 for the fastest rank, 0.5 for a rank twice as slow); a rank scoring below 0.75 is a straggler (the
  threshold of ``Report.identify_stragglers``). The section here is each rank's own work per step, ``work_s /
  steps`` of a window (its time outside the wait in DDP's all-reduce: timing the whole step would give every rank of a
  synchronous job the same time), a window's steps counting each with its mean; a window belongs to the report
  interval its end falls in, intervals of ``report_s`` seconds from the job's first window (NVIDIA leaves
  ``report_time_interval`` to the user). Per job: the lowest score of any rank in any report, its rank and node,
  the reports with a straggler, and the score of one report over the whole run.

The windows are the trace's, all of them, of every job that has them (a job without windows has no peer figures; the
analysis window and exclusion windows apply to the slow time only); the slow time is the metric's, at
``tolerance``. What each measure says is compared in ``docs/metric.md``, "The peers' measures".
"""

from __future__ import annotations

import datetime
import statistics
import tempfile
from typing import Any

import polars as pl

from ettcore.errors import InputError, Problem
from ettcore.importers.goodput import MemoryLogger
from ettcore.metric import slow
from ettcore.order import in_natural_order
from ettcore.trace.load import Trace
from ettcore.trace.queries import sql

NVIDIA_THRESHOLD = 0.75  # nvidia-resiliency-ext's Report.identify_stragglers default: below it, a straggler
DEFAULT_REPORT_S = 10.0  # seconds a straggler report covers here (the user's report_time_interval in NVIDIA's code)

COLUMNS = {
    "job_id": pl.Utf8,
    "nodes": pl.Utf8,
    "ranks": pl.Int64,
    "steps": pl.Int64,
    "google_ideal_step_s": pl.Float64,
    "google_max_deviation_s": pl.Float64,
    "google_anomalous_steps": pl.Int64,
    "google_extra_s": pl.Float64,
    "nvidia_min_score": pl.Float64,
    "nvidia_rank": pl.Int64,
    "nvidia_node": pl.Utf8,
    "nvidia_straggler_reports": pl.Int64,
    "nvidia_reports": pl.Int64,
    "nvidia_run_score": pl.Float64,
    "slow_s": pl.Float64,
    "slow_gpu_h": pl.Float64,
    "holder_rank": pl.Int64,
    "holder_node": pl.Utf8,
}


def _goodput() -> tuple[Any, Any]:
    """ml-goodput-measurement's ``goodput`` and ``goodput_utils`` modules, imported here (they take seconds), or one
    line saying how to install it."""
    try:
        from ml_goodput_measurement.src import goodput, goodput_utils
    except ImportError:
        raise InputError(
            Problem(
                "ml-goodput-measurement",
                None,
                None,
                "Google's step deviation needs the ml-goodput-measurement package (pip install ml-goodput-measurement)",
            )
        ) from None
    return goodput, goodput_utils


def step_starts(windows: list[dict]) -> list[tuple[int, float]]:
    """``(step, start in epoch seconds)`` of each step of one rank's windows (in start order), the ``n`` steps of a
    window evenly spaced in it, and one more start at the last window's end (the next step's, so the last step has a
    time); the first step is 1."""
    out: list[tuple[int, float]] = []
    step = 0
    for w in windows:
        start, end, n = w["start_ms"] / 1000.0, w["end_ms"] / 1000.0, int(w["steps"])
        for k in range(n):
            step += 1
            out.append((step, start + k * (end - start) / n))
    if windows:
        out.append((step + 1, windows[-1]["end_ms"] / 1000.0))
    return out


def google_deviation(job_id: str, windows: list[dict]) -> dict:
    """Google's step-time deviation of one job from rank 0's windows, through ml-goodput-measurement's recorder and
    calculator (module doc): ``google_ideal_step_s``, ``google_max_deviation_s``, ``google_anomalous_steps``,
    ``google_extra_s`` (None each where rank 0 has fewer than 2 steps).  ``windows``: one attempt's (a restart is
    a new run of the steps)."""
    goodput, goodput_utils = _goodput()
    starts = step_starts(windows)
    times = [b - a for (_, a), (_, b) in zip(starts, starts[1:])]
    if len(times) < 2:
        return dict.fromkeys(
            ("google_ideal_step_s", "google_max_deviation_s", "google_anomalous_steps", "google_extra_s")
        )
    anomalous, normal = goodput_utils.get_anomalous_and_normal_step_times(times)
    ideal = statistics.fmean(normal)
    log = MemoryLogger()
    recorder = goodput.GoodputRecorder(job_id, "ett-slow-peers", logging_enabled=True, cloud_logger=log)
    for step, at in starts:
        recorder.record_step_start_time(step, datetime.datetime.fromtimestamp(at, datetime.timezone.utc))
    with tempfile.TemporaryDirectory(prefix="ett-goodput-") as cache:
        calculator = goodput.GoodputCalculator(job_id, "ett-slow-peers", cloud_logger=log, cache_dir=cache)
        deviations = calculator.get_step_deviation(configured_ideal_step_time=ideal)
    return {
        "google_ideal_step_s": ideal,
        "google_max_deviation_s": max(deviations.values()),
        "google_anomalous_steps": len(anomalous),
        "google_extra_s": float(goodput_utils.get_extra_time_from_anomalous_steps(times)),
    }


def _google_over_attempts(job_id: str, rank0: list[dict]) -> dict:
    """:func:`google_deviation` of each attempt's rank 0 windows, put together: the largest deviation, the anomalous
    steps and extra time summed, the ideal step time of the attempt with the most steps."""
    runs = [
        (sum(int(w["steps"]) for w in ws), google_deviation(job_id, ws))
        for a in sorted({w["attempt"] for w in rank0})
        for ws in [[w for w in rank0 if w["attempt"] == a]]
    ]
    runs = [(n, g) for n, g in runs if g["google_ideal_step_s"] is not None]
    if not runs:
        return google_deviation(job_id, [])
    return {
        "google_ideal_step_s": max(runs, key=lambda r: r[0])[1]["google_ideal_step_s"],
        "google_max_deviation_s": max(g["google_max_deviation_s"] for _, g in runs),
        "google_anomalous_steps": sum(g["google_anomalous_steps"] for _, g in runs),
        "google_extra_s": sum(g["google_extra_s"] for _, g in runs),
    }


def _median_step_work(windows: list[dict]) -> float:
    """The median of a rank's work per step over its windows, each window's steps counting each with its mean."""
    return statistics.median(w["work_s"] / w["steps"] for w in windows for _ in range(int(w["steps"])))


def relative_scores(by_rank: dict[int, list[dict]]) -> dict[int, float]:
    """NVIDIA's relative score of each rank over one report: the smallest median work per step of any rank divided by
    the rank's own (a rank whose median is 0 scores 1)."""
    medians = {r: _median_step_work(ws) for r, ws in by_rank.items() if ws}
    best = min(medians.values())
    return {r: (best / m if m > 0 else 1.0) for r, m in medians.items()}


def nvidia_scores(windows: list[dict], report_s: float = DEFAULT_REPORT_S) -> dict:
    """NVIDIA's relative straggler scores of one job's ranks (module doc): ``nvidia_min_score`` and its
    ``nvidia_rank`` and ``nvidia_node``, ``nvidia_straggler_reports`` (reports with a rank below
    :data:`NVIDIA_THRESHOLD`) of ``nvidia_reports``, and ``nvidia_run_score`` (the lowest score of one report over
    the whole run)."""
    first = {}
    for w in windows:
        first[w["attempt"]] = min(first.get(w["attempt"], w["start_ms"]), w["start_ms"])
    reports: dict[tuple[int, int], dict[int, list[dict]]] = {}
    whole: dict[int, list[dict]] = {}
    nodes: dict[int, str] = {}
    for w in windows:
        k = (w["attempt"], int((w["end_ms"] - first[w["attempt"]]) // (report_s * 1000)))
        reports.setdefault(k, {}).setdefault(w["rank"], []).append(w)
        whole.setdefault(w["rank"], []).append(w)
        nodes.setdefault(w["rank"], w["node"])
    lowest = (2.0, -1)
    stragglers = 0
    for k in sorted(reports):
        scores = relative_scores(reports[k])
        stragglers += any(s < NVIDIA_THRESHOLD for s in scores.values())
        lowest = min(lowest, *((s, r) for r, s in scores.items()))
    return {
        "nvidia_min_score": lowest[0],
        "nvidia_rank": lowest[1],
        "nvidia_node": nodes[lowest[1]],
        "nvidia_straggler_reports": stragglers,
        "nvidia_reports": len(reports),
        "nvidia_run_score": min(relative_scores(whole).values()),
    }


def peer_table(trace: Trace, tolerance: float | str | None = None, report_s: float = DEFAULT_REPORT_S) -> pl.DataFrame:
    """One row a job with rank timing windows, in natural job order: its ``nodes``, ``ranks`` and ``steps`` (rank
    0's), Google's step deviation, NVIDIA's relative scores (module doc) and the project's ``slow_s``, ``slow_gpu_h``
    and the rank and node that held the job back longest in its slow spans (``holder_rank``, ``holder_node``; None
    where it has none)."""
    if not report_s > 0:
        raise InputError(Problem("report_s", None, "report_s", f"a report interval must be over 0 s: {report_s!r}"))
    windows = trace.sql(sql("metric/rank_windows")).to_dicts() if slow.has_rank_timing(trace) else []
    per_job: dict[str, list[dict]] = {}
    for w in windows:
        per_job.setdefault(w["job_id"], []).append(w)
    measured = {r["job_id"]: r for r in slow.job_slow(trace, tolerance).iter_rows(named=True)}
    held = (
        slow.holders(trace, tolerance=tolerance)
        .filter(pl.col("rank").is_not_null())
        .group_by("job_id", "rank", "node")
        .agg(pl.col("slow_s").sum())
        .sort(["job_id", "slow_s", "rank"], descending=[False, True, False])
        .unique("job_id", keep="first", maintain_order=True)
    )
    holder = {r["job_id"]: r for r in held.iter_rows(named=True)}
    rows = []
    for job_id, ws in per_job.items():
        rank0 = [w for w in ws if w["rank"] == 0]
        job = measured.get(job_id, {})
        h = holder.get(job_id, {})
        rows.append(
            {
                "job_id": job_id,
                "nodes": ",".join(sorted({w["node"] for w in ws if w["node"]})),
                "ranks": len({w["rank"] for w in ws}),
                "steps": sum(int(w["steps"]) for w in rank0),
                **_google_over_attempts(job_id, rank0),
                **nvidia_scores(ws, report_s),
                "slow_s": job.get("slow_s"),
                "slow_gpu_h": job.get("slow_gpu_h"),
                "holder_rank": h.get("rank"),
                "holder_node": h.get("node"),
            }
        )
    return in_natural_order(pl.DataFrame(rows, schema=COLUMNS, orient="row"))
