"""What interval each model should checkpoint at, from its own measured failures and save blocking.

For each model and job size (``gpus``) of a trace, ``ettcore/sql/metric/model_checkpointing.sql`` measures, to the
as-of time: the GPU-hours its attempts held, its interruptions (every interrupting end reason: each one loses the
progress since the last save), its checkpoint saves (spans of phase :data:`SAVE_PHASE`) with their mean length, the
**save blocking**, and the mean gap between consecutive saves of one attempt, **today's interval**.

Its failure rate per GPU-hour is its interruptions over its GPU-hours.  A model with no interruption yet takes the
fleet's rate at its size (every model's jobs of the same ``gpus``: ``rate_from = "fleet at its size"``), and where
those had none either, the whole fleet's (``"fleet"``); ``"own"`` otherwise.  The planning model
(:mod:`ettcore.planning.expected`) then gives the interval that maximizes its expected ETT% and the expected ETT% at
today's interval (:func:`ettcore.planning.expected.best_interval`, with Young's optimum as the first-order check), for
a job of ``work_h`` hours of training on its ``gpus`` GPUs with ``ttr_s`` of restart overhead a failure (the
parameters' defaults are ``ett nodes``'s: they are not measured here).  A model without a measured save has no
blocking to trade against and gets no advice (``advice = "no checkpoint save measured"``); one without two saves in an
attempt has no today's interval (its ``today_*`` columns are empty).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ettcore import metric
from ettcore.planning.expected import DAY_S, JobPlan, best_interval

__all__ = ["SAVE_PHASE", "WORK_H", "TTR_S", "measured_checkpointing", "checkpoint_advice"]

SAVE_PHASE = "checkpoint_save"  # the phase of a checkpoint save (ettcore/defaults/phases.yaml)
WORK_H = 24.0  # hours of training of the job the advice plans (ett nodes' --work-h default)
TTR_S = 600.0  # restart overhead a failure, seconds (ett nodes' --ttr-s default)


def measured_checkpointing(trace: Any) -> pl.DataFrame:
    """``model_checkpointing.sql``'s rows: ``model, gpus, jobs, held_gpu_h, interruptions, saves, blocking_s,
    intervals, interval_s`` (module doc)."""
    e = metric.engine_of(trace)
    e.prepare()
    return e.run("metric/model_checkpointing", {"save_phase": SAVE_PHASE})


def _rate(interruptions: float, gpu_h: float) -> float | None:
    return interruptions / gpu_h if gpu_h > 0 else None


def checkpoint_advice(trace: Any, work_h: float = WORK_H, ttr_s: float = TTR_S) -> pl.DataFrame:
    """One row a model and job size: :func:`measured_checkpointing`'s columns, then ``rate_per_gpu_h`` (the rate the
    advice uses), ``rate_from`` (``own``, ``fleet at its size`` or ``fleet``), ``best_interval_s``,
    ``best_ett_pct``, ``today_ett_pct`` (at ``interval_s``), ``gain_pct_points``, ``young_s`` and ``advice``
    (None, or why there is none)."""
    got = measured_checkpointing(trace)
    fleet = _rate(float(got["interruptions"].sum()), float(got["held_gpu_h"].sum()))
    size = got.group_by("gpus").agg(pl.col("interruptions").sum(), pl.col("held_gpu_h").sum())
    at_size = {r["gpus"]: _rate(r["interruptions"], r["held_gpu_h"]) for r in size.iter_rows(named=True)}
    rows: list[dict[str, Any]] = []
    for r in got.iter_rows(named=True):
        if r["interruptions"] > 0:
            rate, source = _rate(r["interruptions"], r["held_gpu_h"]), "own"
        elif at_size.get(r["gpus"]):
            rate, source = at_size[r["gpus"]], "fleet at its size"
        else:
            rate, source = fleet, "fleet"
        out = {**r, "rate_per_gpu_h": rate, "rate_from": source}
        out |= {k: None for k in ("best_interval_s", "best_ett_pct", "today_ett_pct", "gain_pct_points", "young_s")}
        if r["blocking_s"] is None:
            out["advice"] = "no checkpoint save measured"
        elif rate is None:
            out["advice"] = "no GPU-hours measured"
        else:
            today = r["interval_s"] if r["interval_s"] and r["interval_s"] > 0 else work_h * 3600.0
            plan = JobPlan(0.0, ttr_s, rate * DAY_S / 3600.0, work_h * 3600.0, int(r["gpus"]), today, r["blocking_s"])
            best = best_interval(plan)
            has_today = r["interval_s"] is not None and r["interval_s"] > 0
            out |= {
                "best_interval_s": best.interval_s,
                "best_ett_pct": best.ett_pct,
                "today_ett_pct": best.today_ett_pct if has_today else None,
                "gain_pct_points": best.gain_pct_points if has_today else None,
                "young_s": best.young_s,
                "advice": None,
            }
        rows.append(out)
    schema = {
        **dict(got.schema),
        "rate_per_gpu_h": pl.Float64,
        "rate_from": pl.Utf8,
        "best_interval_s": pl.Float64,
        "best_ett_pct": pl.Float64,
        "today_ett_pct": pl.Float64,
        "gain_pct_points": pl.Float64,
        "young_s": pl.Float64,
        "advice": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")
