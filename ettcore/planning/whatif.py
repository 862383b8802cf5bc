"""What-if projection: apply start-up, recovery, checkpoint, shutdown and NoF cuts to measured jobs.

Input: a frame shaped like ``ettcore.metric.job_summary`` (one row a job, in
seconds): ``job_id, gpus, wall_s, productive_s, tts_s, nof, ttr_total_s,
in_training_loss_s, shutdown_tail_s`` and optionally ``blocking_s`` (checkpoint
save blocking inside the in-training loss; :func:`blocking_from_l2` derives it
from ``metric.l2_matrix``).

A :class:`Cut` reduces one target by an amount (seconds; failures for NoF)
or by a fraction of the job's *measured* value.  Cuts compose by the rules of
the cascade analysis (paper V-C), which make the result independent of the
order they are listed in:

* cuts on the same target add (they compound, they do not multiply): two 10 %
  cuts of TTS remove 20 % of the measured TTS; the total is capped at the
  measured value;
* a TTS cut on work every restart repeats (``repeated=True``, the default) also
  shortens every recovery by the same seconds, so it is paid back
  ``(1 + NoF)`` times; a TTR cut is paid back ``NoF`` times;
* a NoF cut removes whole recoveries at the *projected* per-failure TTR::

      ttr'       = max(0, ttr_total / nof - ttr_cuts - repeated_tts_cuts)
      nof'       = max(0, nof - nof_cuts)
      ttr_total' = nof' x ttr'
      tts'       = max(0, tts - tts_cuts)
      in_training_loss' = in_training_loss - min(blocking_cuts, blocking pool)
      shutdown_tail'    = max(0, shutdown_tail - shutdown_cuts)
      wall'      = wall - (sum of the reductions);  ETT%' = 100 x productive / wall'

Assumptions: productive time is unchanged (the same data is trained); cuts do
not change when failures happen; a NoF cut is an expected value and may leave a
fractional NoF; without a ``blocking_s`` column the whole in-training loss is the
pool a blocking cut may draw from (an upper bound).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

__all__ = ["Cut", "TARGETS", "project", "Projection", "blocking_from_l2", "REQUIRED_COLUMNS"]

TARGETS: tuple[str, ...] = ("tts", "ttr", "blocking", "shutdown", "nof")
REQUIRED_COLUMNS: tuple[str, ...] = (
    "job_id",
    "gpus",
    "wall_s",
    "productive_s",
    "tts_s",
    "nof",
    "ttr_total_s",
    "in_training_loss_s",
    "shutdown_tail_s",
)


@dataclass(frozen=True)
class Cut:
    """One technique's effect: ``target`` reduced by ``amount`` or by ``fraction`` of its measured value.

    Units of ``amount`` by target: seconds per job start for ``tts``, per
    failure for ``ttr``, per job for ``blocking`` and ``shutdown``; a number of
    failures per job for ``nof``.
    ``repeated`` (TTS only) says whether every restart repeats the cut work.
    """

    target: str
    amount: float = 0.0
    fraction: float = 0.0
    repeated: bool = True
    name: str = ""

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(
                f"cut {self.name or self.target!r}: unknown target {self.target!r}; expected one of {TARGETS}"
            )
        if self.amount < 0 or not 0 <= self.fraction <= 1:
            raise ValueError(f"cut {self.name or self.target!r}: amount must be >= 0 and fraction in [0, 1]")
        if self.amount and self.fraction:
            raise ValueError(f"cut {self.name or self.target!r}: give amount or fraction, not both")


@dataclass(frozen=True)
class Projection:
    """Per-job and fleet results of :func:`project`."""

    jobs: (
        pl.DataFrame
    )  # job_id, gpus, ett_pct, projected_ett_pct, wall_s, projected_wall_s, saved_s, gpu_h_released, ...
    fleet: dict[str, float]  # ett_pct, projected_ett_pct (GPU-time weighted), gpu_h_released, jobs


def blocking_from_l2(l2: pl.DataFrame, phase: str = "checkpoint_save") -> pl.DataFrame:
    """Per job, seconds of ``phase`` inside the in-training loss of ``metric.l2_matrix``.

    Returns ``job_id, blocking_s`` (0 for jobs without such time), to join onto
    a job summary before :func:`project`.
    """
    need = {"job_id", "bucket", "phase", "seconds"}
    if not need <= set(l2.columns):
        raise ValueError(f"l2 matrix lacks column(s) {sorted(need - set(l2.columns))}")
    hit = (pl.col("phase") == phase) & (pl.col("bucket") == "in_training_loss")
    return l2.group_by("job_id").agg(pl.col("seconds").filter(hit).sum().alias("blocking_s")).sort("job_id")


def _sum_cut(cuts: Sequence[Cut], target: str, measured: pl.Expr, only_repeated: bool = False) -> pl.Expr:
    total = pl.lit(0.0)
    for c in cuts:
        if c.target != target or (only_repeated and not c.repeated):
            continue
        total = total + (pl.lit(float(c.amount)) if c.amount else measured * float(c.fraction))
    return total


def project(summary: pl.DataFrame, cuts: Sequence[Cut]) -> Projection:
    """Project ETT% per job and for the fleet after applying ``cuts`` (rules in the module docstring).

    Fleet ETT% is GPU-time weighted, ``sum(gpus x productive) / sum(gpus x wall)``;
    GPU-hours released = ``gpus x (wall - wall') / 3600`` per job, summed.
    Raises ``ValueError`` on missing columns or null/negative measurements.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in summary.columns]
    if missing:
        raise ValueError(f"job summary lacks column(s) {missing}")
    for c in REQUIRED_COLUMNS[1:]:
        bad = summary.filter(pl.col(c).is_null() | (pl.col(c) < 0))
        if bad.height:
            raise ValueError(f"job summary: {c} is null or negative for job {bad['job_id'][0]!r}")
    if summary.filter(pl.col("wall_s") <= 0).height:
        raise ValueError("job summary: wall_s must be > 0")
    has_blocking = "blocking_s" in summary.columns
    df = summary.with_columns(
        (pl.col("blocking_s") if has_blocking else pl.col("in_training_loss_s")).fill_null(0.0).alias("_pool"),
        pl.when(pl.col("nof") > 0).then(pl.col("ttr_total_s") / pl.col("nof")).otherwise(0.0).alias("_ttr"),
    )
    tts_cut = pl.min_horizontal(_sum_cut(cuts, "tts", pl.col("tts_s")), pl.col("tts_s"))
    rep_cut = _sum_cut(cuts, "tts", pl.col("tts_s"), only_repeated=True)
    ttr_new = pl.max_horizontal(pl.col("_ttr") - _sum_cut(cuts, "ttr", pl.col("_ttr")) - rep_cut, pl.lit(0.0))
    nof_new = pl.max_horizontal(pl.col("nof") - _sum_cut(cuts, "nof", pl.col("nof").cast(pl.Float64)), pl.lit(0.0))
    blk_cut = pl.min_horizontal(
        _sum_cut(cuts, "blocking", pl.col("_pool")), pl.col("_pool"), pl.col("in_training_loss_s")
    )
    sht_cut = pl.min_horizontal(_sum_cut(cuts, "shutdown", pl.col("shutdown_tail_s")), pl.col("shutdown_tail_s"))
    df = df.with_columns(
        (pl.col("tts_s") - tts_cut).alias("projected_tts_s"),
        nof_new.alias("projected_nof"),
        (nof_new * ttr_new).alias("projected_ttr_total_s"),
        (pl.col("in_training_loss_s") - blk_cut).alias("projected_in_training_loss_s"),
        (pl.col("shutdown_tail_s") - sht_cut).alias("projected_shutdown_tail_s"),
    )
    df = df.with_columns(
        (
            (pl.col("tts_s") - pl.col("projected_tts_s"))
            + (pl.col("ttr_total_s") - pl.col("projected_ttr_total_s"))
            + (pl.col("in_training_loss_s") - pl.col("projected_in_training_loss_s"))
            + (pl.col("shutdown_tail_s") - pl.col("projected_shutdown_tail_s"))
        ).alias("saved_s")
    )
    df = df.with_columns((pl.col("wall_s") - pl.col("saved_s")).alias("projected_wall_s"))
    df = df.with_columns(
        (100.0 * pl.col("productive_s") / pl.col("wall_s")).alias("ett_pct"),
        pl.when(pl.col("projected_wall_s") > 0)
        .then(100.0 * pl.col("productive_s") / pl.col("projected_wall_s"))
        .otherwise(None)
        .alias("projected_ett_pct"),
        (pl.col("gpus") * pl.col("saved_s") / 3600.0).alias("gpu_h_released"),
    )
    jobs = df.select(
        "job_id",
        "gpus",
        "ett_pct",
        "projected_ett_pct",
        "wall_s",
        "projected_wall_s",
        "saved_s",
        "gpu_h_released",
        "tts_s",
        "projected_tts_s",
        "nof",
        "projected_nof",
        "ttr_total_s",
        "projected_ttr_total_s",
        "in_training_loss_s",
        "projected_in_training_loss_s",
        "shutdown_tail_s",
        "projected_shutdown_tail_s",
    )
    gw = float((df["gpus"] * df["wall_s"]).sum())
    gp = float((df["gpus"] * df["productive_s"]).sum())
    gw2 = float((df["gpus"] * df["projected_wall_s"]).sum())
    fleet = {
        "jobs": float(df.height),
        "ett_pct": 100.0 * gp / gw if gw else float("nan"),
        "projected_ett_pct": 100.0 * gp / gw2 if gw2 else float("nan"),
        "gpu_h_released": float(df["gpu_h_released"].sum()),
    }
    return Projection(jobs, fleet)
