"""The metric in the Prometheus text exposition format, for node_exporter's textfile collector
(``ett export prometheus``).

Every figure comes from :mod:`ettcore.metric` (and :mod:`ettcore.metric.stalls`) on one loaded trace, measured over the
trace's window (``--as-of``, ``--since``, ``--until``, ``--exclude``).  Base units only, as Prometheus' naming rules
ask: seconds (wall time; GPU-seconds for GPU-time) and ratios (ETT% / 100).  Every series is a gauge without a
timestamp (the textfile collector refuses timestamps); the file is a snapshot to be rewritten when the trace grows.

Three levels, one metric family each, so that no query sums a level into another by accident:

``ett_fleet_*`` (no label), ``ett_model_*`` (label ``model``) and ``ett_job_*`` (labels ``job_id`` and ``model``):

=================================  ===========================================================================
family (``<level>`` = fleet/model)  value
=================================  ===========================================================================
``ett_<level>_jobs``               jobs measured
``ett_<level>_effective_training_ratio``  GPU-time-weighted ETT% / 100 (``sum(gpus x productive) / sum(gpus x wall)``)
``ett_<level>_wall_gpu_seconds``   GPU-seconds of wall time
``ett_<level>_l1_gpu_seconds``     GPU-seconds per L1 bucket (label ``bucket``: productive, tts, recovery,
                                   in_training_loss, shutdown_tail; they add up to the wall time)
``ett_<level>_l2_gpu_seconds``     GPU-seconds of lost time per L2 component (labels ``component``, ``owner``)
``ett_<level>_interruptions``      interruptions (NoF) by cause (label ``cause``: failure, preemption)
``ett_<level>_excluded_gpu_seconds``  GPU-seconds left out by exclusion windows
=================================  ===========================================================================

Per job the same figures in the job's own seconds (``ett_job_wall_seconds``, ``ett_job_l1_seconds``,
``ett_job_excluded_seconds``), GPU-seconds for L2 (``ett_job_l2_gpu_seconds``), ``ett_job_effective_training_ratio``
(NaN for a job with no measured wall time), ``ett_job_interruptions``, ``ett_job_gpus``, ``ett_job_info`` (1, with the
job's ``status``) and stalls (``ett_job_stalls``, ``ett_job_stall_seconds``, ``ett_job_longest_stall_seconds``).
About the export itself: ``ett_trace_info`` (1, labels ``trace`` and ``synthetic``), ``ett_as_of_timestamp_seconds``
and, with a window, ``ett_window_start_timestamp_seconds`` / ``ett_window_end_timestamp_seconds``.

Label values are escaped as the format asks (backslash, double quote, line feed), so any job id, model or owner
name is data and cannot end a label, a line or a series.  Names and label names are fixed here, never taken from
the data.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Iterator

import polars as pl

from ettcore import metric
from ettcore.causes import CAUSES as INTERRUPTION_CAUSES
from ettcore.metric import stalls
from ettcore.trace.load import Trace

L1_BUCKETS = {
    "productive": "productive",
    "tts": "tts",
    "recovery": "ttr_total",
    "in_training_loss": "in_training_loss",
    "shutdown_tail": "shutdown_tail",
}  # label value -> column stem of job_summary / group_summary
CAUSES = ("failure", "preemption")


def escape_label(value: Any) -> str:
    """A label value as the text format writes it between double quotes."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def number(value: Any) -> str:
    """A sample value: integers as such, floats in Python's shortest round-trip form,
    NaN and infinities spelled as Go reads them."""
    if value is None:
        return "NaN"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def labels(pairs: Iterable[tuple[str, Any]]) -> str:
    inner = ",".join(f'{k}="{escape_label(v)}"' for k, v in pairs)
    return "{" + inner + "}" if inner else ""


def family(name: str, help_text: str, samples: Iterable[tuple[str, Any]]) -> Iterator[str]:
    """HELP, TYPE and the samples (``(label text, value)``) of one gauge family."""
    yield f"# HELP {name} {escape_help(help_text)}"
    yield f"# TYPE {name} gauge"
    for lab, value in samples:
        yield f"{name}{lab} {number(value)}"


def _owners(trace: Trace) -> dict[str, str]:
    """Each of the trace's components (in report order: the defaults, a mapping file's own, unattributed) and its
    owner."""
    return {c: trace.phase_map.owner(c) for c in metric.components(trace)}


def _group_families(level: str, rows: list[dict], key: str | None, owners: dict[str, str]) -> Iterator[str]:
    """The families of the fleet (``key`` None) or of one row a model, from group_summary rows (GPU-hours)."""

    def lab(r: dict, *more: tuple[str, Any]) -> str:
        return labels(([(key, r[key])] if key else []) + list(more))

    what = "the fleet" if key is None else "each model"
    yield from family(f"ett_{level}_jobs", f"Jobs measured, of {what}.", [(lab(r), r["jobs"]) for r in rows])
    yield from family(
        f"ett_{level}_effective_training_ratio",
        f"Effective training time of {what}: sum(gpus x productive) / sum(gpus x wall), "
        "GPU-time weighted (ETT% / 100).",
        [(lab(r), None if r["ett_pct"] is None else r["ett_pct"] / 100) for r in rows],
    )
    yield from family(
        f"ett_{level}_wall_gpu_seconds",
        f"GPU-seconds of wall time of {what}.",
        [(lab(r), r["wall_gpu_h"] * 3600) for r in rows],
    )
    yield from family(
        f"ett_{level}_l1_gpu_seconds",
        f"GPU-seconds of {what} per Level-1 bucket (they add up to the wall time).",
        [(lab(r, ("bucket", b)), r[f"{col}_gpu_h"] * 3600) for r in rows for b, col in L1_BUCKETS.items()],
    )
    yield from family(
        f"ett_{level}_l2_gpu_seconds",
        f"GPU-seconds of lost (non-productive) time of {what} per Level-2 component and owner.",
        [(lab(r, ("component", c), ("owner", owners[c])), r[f"{c}_gpu_h"] * 3600) for r in rows for c in owners],
    )
    yield from family(
        f"ett_{level}_interruptions",
        f"Interruptions (NoF) of {what} by cause.",
        [(lab(r, ("cause", c)), r[f"nof_{c}"]) for r in rows for c in CAUSES],
    )
    yield from family(
        f"ett_{level}_interruptions_by_cause",
        f"Interruptions (NoF) of {what} by interruption cause (ettcore/defaults/causes.yaml; unknown: the source did"
        " not say).",
        [(lab(r, ("cause", c)), r["by_cause"].get(c, (0, 0.0))[0]) for r in rows for c in INTERRUPTION_CAUSES],
    )
    yield from family(
        f"ett_{level}_lost_gpu_seconds_by_cause",
        f"GPU-seconds of {what} lost to each interruption cause: the recovery after each interruption (re-queue,"
        " restart, replayed work).",
        [(lab(r, ("cause", c)), r["by_cause"].get(c, (0, 0.0))[1] * 3600) for r in rows for c in INTERRUPTION_CAUSES],
    )
    yield from family(
        f"ett_{level}_excluded_gpu_seconds",
        f"GPU-seconds of {what} left out by exclusion windows.",
        [(lab(r), r["excluded_gpu_h"] * 3600) for r in rows],
    )


def _group_rows(jobs: pl.DataFrame, groups: pl.DataFrame, key: str | None, causes_long: pl.DataFrame) -> list[dict]:
    """group_summary rows with NoF by end reason added (summed from the per-job rows), and ``by_cause``: cause ->
    (NoF, lost GPU-hours) from ``causes_long`` (:func:`ettcore.metric.cause_summary`)."""
    by = [key] if key else []
    causes = (
        jobs.group_by(by).agg(pl.col("nof_failure").sum(), pl.col("nof_preemption").sum())
        if by
        else jobs.select(pl.col("nof_failure").sum(), pl.col("nof_preemption").sum())
    )
    rows = groups.join(causes, on=by, how="left") if by else groups.hstack(causes) if groups.height else groups
    out = list(rows.iter_rows(named=True))
    for r in out:
        mine = causes_long.filter(pl.col(key) == r[key]) if key else causes_long
        r["by_cause"] = {c["cause"]: (c["nof"], c["lost_gpu_h"]) for c in mine.iter_rows(named=True)}
    return out


def exposition(trace: Trace) -> Iterator[str]:
    """Every line of the export of a loaded trace (without line ends), in a stable order."""
    owners = _owners(trace)
    jobs = metric.job_summary(trace)
    fleet = metric.fleet_summary(trace)
    models = metric.fleet_summary(trace, by="model")
    per_job_stalls = stalls.job_stalls(trace)
    yield from family(
        "ett_trace_info",
        "The trace measured (1).",
        [(labels([("trace", trace.path), ("synthetic", str(trace.synthetic).lower())]), 1)],
    )
    if trace.as_of_ms is not None:
        yield from family(
            "ett_as_of_timestamp_seconds",
            "Analysis time: running jobs are measured up to it (Unix time).",
            [("", trace.as_of_ms / 1000)],
        )
    w = trace.window
    if w.since_ms is not None:
        yield from family(
            "ett_window_start_timestamp_seconds", "Start of the measured window (Unix time).", [("", w.since_ms / 1000)]
        )
    if w.until_ms is not None:
        yield from family(
            "ett_window_end_timestamp_seconds",
            "End of the measured window, exclusive (Unix time).",
            [("", w.until_ms / 1000)],
        )
    if fleet.height:
        fleet_rows = _group_rows(jobs, fleet, None, metric.cause_summary(trace))
        yield from _group_families("fleet", fleet_rows, None, owners)
        model_rows = _group_rows(jobs, models, "model", metric.cause_summary(trace, by="model"))
        yield from _group_families("model", model_rows, "model", owners)

    rows = list(
        jobs.join(
            per_job_stalls.select("job_id", "stalls", "stall_s", "longest_stall_s"), on="job_id", how="left"
        ).iter_rows(named=True)
    )
    job_lab = [[("job_id", r["job_id"]), ("model", r["model"])] for r in rows]

    def per_job(name: str, help_text: str, value, extra: Iterable[tuple[str, Any]] = ((),)) -> Iterator[str]:
        extra = list(extra)
        yield from family(
            name, help_text, [(labels(lab + list(e)), value(r, e)) for r, lab in zip(rows, job_lab) for e in extra]
        )

    yield from family(
        "ett_job_info",
        "A measured job (1), with its status.",
        [(labels(lab + [("status", r["status"])]), 1) for r, lab in zip(rows, job_lab)],
    )
    yield from per_job("ett_job_gpus", "Accelerators held by the job.", lambda r, e: r["gpus"])
    yield from per_job(
        "ett_job_effective_training_ratio",
        "Effective training time of the job: productive / wall (ETT% / 100; NaN without wall time).",
        lambda r, e: None if r["ett_pct"] is None else r["ett_pct"] / 100,
    )
    yield from per_job("ett_job_wall_seconds", "Wall time of the job, in seconds.", lambda r, e: r["wall_s"])
    yield from per_job(
        "ett_job_l1_seconds",
        "Seconds of the job per Level-1 bucket (they add up to its wall time).",
        lambda r, e: r[f"{L1_BUCKETS[e[0][1]]}_s"],
        [[("bucket", b)] for b in L1_BUCKETS],
    )
    yield from per_job(
        "ett_job_l2_gpu_seconds",
        "GPU-seconds of the job's lost (non-productive) time per Level-2 component and owner.",
        lambda r, e: r[f"{e[0][1]}_s"] * r["gpus"],
        [[("component", c), ("owner", owners[c])] for c in owners],
    )
    yield from per_job(
        "ett_job_interruptions",
        "Interruptions (NoF) of the job by cause.",
        lambda r, e: r[f"nof_{e[0][1]}"],
        [[("cause", c)] for c in CAUSES],
    )
    yield from per_job(
        "ett_job_excluded_seconds", "Seconds of the job left out by exclusion windows.", lambda r, e: r["excluded_s"]
    )
    yield from per_job(
        "ett_job_stalls",
        "Train spans of the job whose data cursor stood still longer than its threshold.",
        lambda r, e: r["stalls"] or 0,
    )
    yield from per_job(
        "ett_job_stall_seconds",
        "Seconds the job's data cursor stood still, summed over its stalls.",
        lambda r, e: r["stall_s"] or 0.0,
    )
    yield from per_job(
        "ett_job_longest_stall_seconds", "Seconds of the job's longest stall.", lambda r, e: r["longest_stall_s"] or 0.0
    )


def write(trace: Trace, out) -> int:
    """Write the export to a text stream; returns the number of samples."""
    n = 0
    for line in exposition(trace):
        out.write(line + "\n")
        n += not line.startswith("#")
    return n
