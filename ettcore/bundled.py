"""The data bundled with the project (``data/``), read without the campaigns that recorded it.

Each data set is a folder of ``data/``; its ``README.md`` says what it is and how it was made.  The campaigns that
recorded the measured ones are scripts outside the package (``tools/campaigns/``): they write these folders, and
everything else (notebooks, tests, the campaigns themselves when they rebuild) reads them through this module.
Nothing here needs PyTorch or Slurm.

- :data:`SAMPLE`           the SYNTHETIC sample trace (four jobs, the trace spec's worked example among them)
- :data:`SLURM_FLEET`      46 real PyTorch training jobs through a real Slurm cluster: ``campaign.json``
  (:func:`slurm_campaign`), ``sacct.txt`` and ``sacct.json``, ``recorder/``, ``trace/``
- :data:`SLURM_MULTINODE`  seven ``sleep`` jobs on three Slurm node daemons, one node failing: ``campaign.json``
  (:func:`slurm_campaign`), ``sacct.txt`` and ``sacct.json``, ``trace/``
- :data:`SLURM_RESTARTS`   a crash loop, a job that fails but advances and a storm of node failures on Slurm:
  ``campaign.json``, ``sacct.txt`` and ``sacct.json``, ``recorder/``, ``trace/``
- :data:`SLURM_SLOW`       2-rank DDP training jobs on three Slurm nodes, every job on node2 slowed: ``campaign.json``,
  ``sacct.txt`` and ``sacct.json``, ``recorder/`` (with the ranks' ``timing/``), ``truth/``, ``trace/``
- :data:`LIVE_JOB`         a measured baseline/optimized pair of PyTorch runs: ``runs.json`` (:func:`live_job`),
  ``recorder/``, ``trace/``
- :data:`FRAMEWORK_RUN`    a Lightning job measured by its callback alone: ``runs.json`` (:func:`framework_run`),
  ``events.csv`` (the job's own log, :func:`framework_run_events`), ``recorder/``, ``trace/``; and
  :func:`framework_run_comparison`, its ground truth beside what the trace says now

Times in the metadata are seconds (``*_s``) or epoch seconds; instants as text are ISO-8601 UTC.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ettcore import metric
from ettcore.config import DATA_DIR, SAMPLE_TRACE
from ettcore.trace.load import load_trace

SAMPLE = SAMPLE_TRACE
SLURM_FLEET = DATA_DIR / "slurm-fleet"
SLURM_MULTINODE = DATA_DIR / "slurm-multinode"
SLURM_RESTARTS = DATA_DIR / "slurm-restarts"
SLURM_SLOW = DATA_DIR / "slurm-slow"
LIVE_JOB = DATA_DIR / "live-job"
FRAMEWORK_RUN = DATA_DIR / "framework-run"


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------------------------- Slurm campaigns


@dataclass(frozen=True)
class SlurmCampaign:
    """A Slurm campaign's ``campaign.json``: what was run and injected, on which cluster and machine.

    ``plan``: one dict a planned job; ``events``: every submission and injected event with its time;
    ``ground_truth``: the training loop's own step log per run (``None`` where the jobs did not train).
    """

    trace_dir: Path
    sacct: Path
    slurm_version: str
    started_utc: str
    elapsed_s: float
    machine: dict[str, Any]
    plan: list[dict[str, Any]]
    events: list[dict[str, Any]]
    slurm_config: dict[str, str]
    ground_truth: dict[str, Any] | None


def slurm_campaign(directory: str | Path = SLURM_FLEET) -> SlurmCampaign:
    """Read a bundled Slurm campaign (:data:`SLURM_FLEET` or :data:`SLURM_MULTINODE`)."""
    directory = Path(directory)
    c = _json(directory / "campaign.json")
    return SlurmCampaign(
        trace_dir=directory / "trace",
        sacct=directory / "sacct.txt",
        slurm_version=c["slurm_version"],
        started_utc=c["started_utc"],
        elapsed_s=c["elapsed_s"],
        machine=c["machine"],
        plan=c["plan"],
        events=c["events"],
        slurm_config=c["slurm_config"],
        ground_truth=c.get("ground_truth"),
    )


# ------------------------------------------------------------------------------------------------------ live job


@dataclass(frozen=True)
class LiveJob:
    """The live job's ``runs.json``: per variant (``baseline``, ``optimized``) the run conditions as recorded and the
    supervisor's ground truth; the measurements read from the trace when it was made; the machine."""

    trace_dir: Path
    conditions: dict[str, dict[str, Any]]
    ground_truth: dict[str, dict[str, Any]]
    measurements: dict[str, Any]
    machine: dict[str, Any]
    recorder_notes: list[str]
    generated_by: str


def live_job(directory: str | Path = LIVE_JOB) -> LiveJob:
    """Read the bundled live-job pair (no PyTorch)."""
    directory = Path(directory)
    data = _json(directory / "runs.json")
    return LiveJob(
        trace_dir=directory / "trace",
        conditions={v: r["conditions"] for v, r in data["runs"].items()},
        ground_truth={v: r["ground_truth"] for v, r in data["runs"].items()},
        measurements=data["measurements"],
        machine=data["machine"],
        recorder_notes=data["recorder_notes"],
        generated_by=data["generated_by"],
    )


# ------------------------------------------------------------------------------------------------- framework run


@dataclass(frozen=True)
class FrameworkRun:
    """The framework run's ``runs.json``: its trace, its ground truth, its processes (the harness's own clock:
    ``spawn_t``, ``reap_t`` in epoch seconds, ``returncode``), and how the two compared when it was made
    (``comparison``: quantity, truth, trace, tolerance, ok)."""

    trace_dir: Path
    ground_truth: dict[str, Any]
    steps_per_try: dict[str, list[int]]
    processes: list[dict[str, Any]]
    comparison: list[dict[str, Any]]
    versions: dict[str, str]
    machine: dict[str, Any]
    generated_by: str


def framework_run(directory: str | Path = FRAMEWORK_RUN) -> FrameworkRun:
    """Read the bundled framework run (no PyTorch)."""
    directory = Path(directory)
    data = _json(directory / "runs.json")
    return FrameworkRun(
        trace_dir=directory / "trace",
        ground_truth=data["ground_truth"],
        steps_per_try=data["steps_per_try"],
        processes=data["processes"],
        comparison=data["comparison"],
        versions=data["versions"],
        machine=data["machine"],
        generated_by=data["generated_by"],
    )


def framework_run_events(directory: str | Path = FRAMEWORK_RUN) -> list[dict[str, Any]]:
    """``events.csv``, the job script's own log (the ground truth kept apart from the callback), one dict a line:
    ``kind`` (process, train_start, step, eval, save, crash, exit), ``try``, ``step``, ``start`` and ``end`` (epoch
    seconds)."""
    with open(Path(directory) / "events.csv", newline="", encoding="utf-8") as fh:
        return [
            {
                "kind": r["kind"],
                "try": int(r["try"]),
                "step": int(r["step"]),
                "start": float(r["start"]),
                "end": float(r["end"]),
            }
            for r in csv.DictReader(fh)
        ]


def framework_run_values(trace_dir: str | Path) -> dict[str, Any]:
    """What the framework run's trace says, through :func:`ettcore.metric.job_summary` and its spans (the
    comparison's trace side): wall, NoF, end reasons, final cursor, productive, replay and TTR seconds."""
    trace_dir = Path(trace_dir)
    row = metric.job_summary(load_trace(trace_dir)).row(0, named=True)
    spans = pl.read_parquet(trace_dir / "spans.parquet").with_columns(
        s=(pl.col("end") - pl.col("start")).dt.total_microseconds() / 1e6
    )
    train = spans.filter(pl.col("phase") == "train")
    attempts = pl.read_parquet(trace_dir / "attempts.parquet").sort("attempt")
    return {
        "wall_s": row["wall_s"],
        "NoF": row["nof"],
        "end reasons": attempts["end_reason"].to_list(),
        "final cursor (step)": train["cursor_end"].max(),
        "productive_s": row["productive_s"],
        "replay_s": float(train["s"].sum()) - row["productive_s"],
        "ttr_total_s": row["ttr_total_s"],
    }


def framework_run_comparison(directory: str | Path = FRAMEWORK_RUN) -> pl.DataFrame:
    """Ground truth against the trace, one row a quantity: the trace side recomputed now from the bundled trace."""
    fr = framework_run(directory)
    now = framework_run_values(fr.trace_dir)

    def fmt(v: Any, exact: bool) -> str:
        return f"{float(v):.0f}" if exact else f"{float(v):.3f}"

    rows = []
    for c in fr.comparison:
        if c["quantity"] not in now:
            continue
        truth, trace = c["truth"], now[c["quantity"]]
        numeric = isinstance(truth, (int, float)) and not isinstance(truth, bool)
        exact = c["tolerance"] == 0
        rows.append(
            {
                "quantity": c["quantity"],
                "ground truth": fmt(truth, exact) if numeric else ", ".join(truth),
                "trace": fmt(trace, exact) if numeric else ", ".join(trace),
                "difference": f"{float(trace) - float(truth):+.3f}" if numeric and not exact else "",
                "tolerance": "exact" if c["tolerance"] == 0 else f"{c['tolerance']:.3f}",
                "within": (truth == trace)
                if c["tolerance"] == 0
                else abs(float(trace) - float(truth)) <= c["tolerance"],
            }
        )
    return pl.DataFrame(rows)
