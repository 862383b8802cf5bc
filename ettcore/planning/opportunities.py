"""Ranked opportunities: where cutting an owner's component returns the most GPU-hours a day.

Input (documented so the ranking is testable without a trace): a long *lost
time* frame, one row per job and component, every job having a row for every
component (0 where it lost nothing)::

    job_id, group, gpus, nof, component, owner, seconds

``seconds`` is the job's non-productive time given to the component, over all
L1 buckets (TTS, recovery, in-training loss, shutdown tail); ``group`` says which
jobs are comparable (by default the model).  :func:`lost_by_component` builds it
from ``metric.job_summary`` and ``metric.l2_matrix``.

For each job and component (formulas; all per job, then summed)::

    k       = 1 + NoF  for components every restart repeats (REPEATED), else 1
    level   = seconds / k                  # per occurrence
    target  = level x (1 - cut)            # a percentage cut, or
            = 10th percentile of level over the comparable jobs (best decile)
    saved_s = k x max(0, level - target)   # (1 + NoF) counted for repeated phases
    gpu_h_per_day = gpus x saved_s / 3600 / window_days

Assumptions: every occurrence of a repeated component costs the same (the
measured recoveries may be cheaper, e.g. a warm compile cache: ``level`` is then
their average); the observation window's rate of jobs continues; the best
decile uses linear interpolation, and a group of one job has no better peer
(its target is its own level).
"""

from __future__ import annotations

import polars as pl

from ettcore.phases import PhaseMap, default_phase_map

__all__ = [
    "REPEATED",
    "repeated_components",
    "LOST_COLUMNS",
    "lost_by_component",
    "window_days",
    "rank_opportunities",
]

REPEATED: frozenset[str] = frozenset({"scheduling", "hardware_setup", "trainer_init", "pt2_compile"})
"""Components whose phases every restart repeats (re-queue, setup, initialisation, compilation)."""


def repeated_components(phase_map: PhaseMap) -> frozenset[str]:
    """The components of ``phase_map`` that every restart repeats: those of :data:`REPEATED`, and a mapping file's own
    component when each of its phases is one of theirs (``data_warmup`` moved into ``data_loading`` still repeats at
    every start).  A phase the defaults do not know repeats when it is mapped to a component of :data:`REPEATED`."""
    default = default_phase_map()

    def repeats(phase: str) -> bool:
        c = default.component_of.get(phase, phase_map.component_of[phase])
        return c in REPEATED

    own = [c for c in phase_map.components if c not in default.components]
    phases_of = {c: [p for p in phase_map.phases if phase_map.component_of[p] == c] for c in own}
    return REPEATED | frozenset(c for c in own if phases_of[c] and all(repeats(p) for p in phases_of[c]))


LOST_COLUMNS: tuple[str, ...] = ("job_id", "group", "gpus", "nof", "component", "owner", "seconds")
BY_CHOICES: tuple[str, ...] = ("component", "owner")


def lost_by_component(summary: pl.DataFrame, l2: pl.DataFrame, comparable: str = "model") -> pl.DataFrame:
    """The lost-time frame (module docstring) from ``metric.job_summary`` and ``metric.l2_matrix``.

    Sums ``l2`` seconds per job and component over every bucket except
    ``productive``; fills 0 for components a job never lost time to (every
    component that appears anywhere in ``l2`` gets a row for every job), so the
    best decile counts jobs that already reach zero.  ``comparable`` names the
    summary column that groups comparable jobs.
    """
    need = {"job_id", "gpus", "nof", comparable}
    if not need <= set(summary.columns):
        raise ValueError(f"job summary lacks column(s) {sorted(need - set(summary.columns))}")
    need_l2 = {"job_id", "bucket", "component", "owner", "seconds"}
    if not need_l2 <= set(l2.columns):
        raise ValueError(f"l2 matrix lacks column(s) {sorted(need_l2 - set(l2.columns))}")
    lost = l2.filter(pl.col("bucket") != "productive")
    owners = lost.group_by("component").agg(pl.col("owner").first()).sort("component")
    per = lost.group_by("job_id", "component").agg(pl.col("seconds").sum())
    jobs = summary.select(
        "job_id",
        pl.col(comparable).cast(pl.String).alias("group"),
        pl.col("gpus").cast(pl.Float64),
        pl.col("nof").cast(pl.Float64),
    )
    return (
        jobs.join(owners, how="cross")
        .join(per, on=["job_id", "component"], how="left")
        .with_columns(pl.col("seconds").fill_null(0.0))
        .select(LOST_COLUMNS)
        .sort("job_id", "component")
    )


def window_days(summary: pl.DataFrame) -> float:
    """Observation window in days: from the earliest ``t0`` to the latest ``t1`` of the jobs."""
    t0, t1 = summary["t0"].min(), summary["t1"].max()
    if t0 is None or t1 is None:
        raise ValueError("job summary has no t0/t1 to measure the observation window")
    days = (t1 - t0).total_seconds() / 86400.0
    if days <= 0:
        raise ValueError("observation window is empty (latest t1 <= earliest t0)")
    return days


def rank_opportunities(
    lost: pl.DataFrame,
    *,
    window_days: float,
    cut: float | None = None,
    by: str = "component",
    repeated: frozenset[str] = REPEATED,
) -> pl.DataFrame:
    """Rank owners' components by GPU-hours a day returned at a target (formulas in the module docstring).

    ``cut`` is a fraction in (0, 1] (a percentage cut); ``None`` means the best
    decile of comparable jobs.  ``by="component"`` gives one row per (owner,
    component); ``by="owner"`` sums each owner's components.  Columns:
    ``rank``, ``owner`` [, ``component``], ``jobs`` (jobs with something to
    gain), ``lost_gpu_h_per_day``, ``returned_gpu_h_per_day``,
    ``returned_share_pct`` (of all returned), sorted best first (ties by name).  With a ``price_per_gpu_h`` column
    in ``lost`` (money: each job's price a GPU-hour, 0 for components that hold no GPU) the rows also carry
    ``lost_cost_per_day`` and ``returned_cost_per_day`` and are ranked by money first.
    """
    missing = [c for c in LOST_COLUMNS if c not in lost.columns]
    if missing:
        raise ValueError(f"lost-time frame lacks column(s) {missing}")
    if by not in BY_CHOICES:
        raise ValueError(f"by must be one of {BY_CHOICES}, got {by!r}")
    if not window_days > 0:
        raise ValueError("window_days must be > 0")
    if cut is not None and not 0 < cut <= 1:
        raise ValueError("cut must be a fraction in (0, 1]")
    for c in ("seconds", "nof", "gpus"):
        bad = lost.filter(pl.col(c).is_null() | (pl.col(c) < 0))
        if bad.height:
            raise ValueError(f"lost-time frame: {c} is null or negative for job {bad['job_id'][0]!r}")
    priced = "price_per_gpu_h" in lost.columns  # money: the frame's per-job price (0 for unbilled components)
    k = pl.when(pl.col("component").is_in(list(repeated))).then(1.0 + pl.col("nof")).otherwise(1.0)
    df = lost.with_columns(k.alias("k")).with_columns((pl.col("seconds") / pl.col("k")).alias("level"))
    if cut is None:
        target = pl.col("level").quantile(0.1, interpolation="linear").over("group", "component")
    else:
        target = pl.col("level") * (1.0 - cut)
    df = df.with_columns(target.alias("target"))
    df = df.with_columns((pl.col("k") * (pl.col("level") - pl.col("target")).clip(lower_bound=0.0)).alias("saved_s"))
    per_day = 3600.0 * window_days
    keys = ["owner", "component"] if by == "component" else ["owner"]
    # sums of floats in one fixed order (rows sorted, groups in key order), so the last digits are the same each run
    order = [*keys, *(c for c in ("component", "job_id") if c in df.columns and c not in keys)]
    out = (
        df.sort(order)
        .group_by(keys, maintain_order=True)
        .agg(
            (pl.col("saved_s") > 0).sum().alias("jobs"),
            (pl.col("gpus") * pl.col("seconds")).sum().truediv(per_day).alias("lost_gpu_h_per_day"),
            (pl.col("gpus") * pl.col("saved_s")).sum().truediv(per_day).alias("returned_gpu_h_per_day"),
            *(
                [
                    (pl.col("gpus") * pl.col("seconds") * pl.col("price_per_gpu_h"))
                    .sum()
                    .truediv(per_day)
                    .alias("lost_cost_per_day"),
                    (pl.col("gpus") * pl.col("saved_s") * pl.col("price_per_gpu_h"))
                    .sum()
                    .truediv(per_day)
                    .alias("returned_cost_per_day"),
                ]
                if priced
                else []
            ),
        )
    )
    total = sum(out["returned_gpu_h_per_day"].to_list())  # in key order, one addition at a time
    out = out.with_columns(
        (100.0 * pl.col("returned_gpu_h_per_day") / total if total > 0 else pl.lit(0.0)).alias("returned_share_pct")
    )
    first = ["returned_cost_per_day", "returned_gpu_h_per_day"] if priced else ["returned_gpu_h_per_day"]
    out = out.sort([*first, *keys], descending=[True] * len(first) + [False] * len(keys))
    return out.with_row_index("rank", offset=1).with_columns(pl.col("rank").cast(pl.Int64))
