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
``ett_<level>_l1_gpu_seconds``     GPU-seconds per L1 bucket (label ``bucket``: the vocabulary's, productive,
                                   tts, recovery, in_training_loss, shutdown_tail; they add up to the wall time)
``ett_<level>_l2_gpu_seconds``     GPU-seconds of lost time per L2 component (labels ``component``, ``owner``)
``ett_<level>_interruptions``      interruptions (NoF) by end reason (label ``end_reason``: failure, preemption)
``ett_<level>_interruptions_by_cause``  interruptions (NoF) by interruption cause (label ``cause``)
``ett_<level>_interruptions_by_category``  interruptions (NoF) by the causes' display category (label ``category``:
                                   a ``--causes-file``'s categories, else the cause groups' labels)
``ett_<level>_excluded_gpu_seconds``  GPU-seconds left out by exclusion windows
=================================  ===========================================================================

Per job the same figures in the job's own seconds (``ett_job_wall_seconds``, ``ett_job_l1_seconds``,
``ett_job_excluded_seconds``), GPU-seconds for L2 (``ett_job_l2_gpu_seconds``), ``ett_job_effective_training_ratio``
(NaN for a job with no measured wall time), ``ett_job_interruptions`` (label ``end_reason``), ``ett_job_gpus``,
``ett_job_info`` (1, with the job's ``status``) and stalls (``ett_job_stalls``, ``ett_job_stall_seconds``,
``ett_job_longest_stall_seconds``), slow time (``ett_job_slow_seconds``; for the fleet and each model
``ett_<level>_slow_gpu_seconds`` and, for the whole trace, the counter ``ett_<level>_slow_gpu_seconds_total``; the
tolerance in ``ett_export_slow_tolerance``) and the crash loop it is in now (``ett_job_crash_loop_restarts``: the open
loop's restarts, 0 without one; :func:`ettcore.metric.restarts.open_crash_loops`).  Crash loops of the fleet and of
each model: ``ett_<level>_crash_loop_restarts`` and ``ett_<level>_crash_loop_gpu_seconds`` (the GPU-seconds their
restarts held), with their ``_total`` counters.  Crash loops are found over the whole trace to the as-of time, so an
export of a window (``--since``, ``--until``, ``--exclude``) writes none of these.  About the export itself:
``ett_trace_info`` (1, labels ``trace`` and ``synthetic``), ``ett_as_of_timestamp_seconds`` and, with a window,
``ett_window_start_timestamp_seconds`` / ``ett_window_end_timestamp_seconds``.

One meaning a label: ``end_reason`` is how an attempt ended (the interrupting end reasons of
``ettcore/defaults/vocabulary.yaml``), ``cause`` only the interruption cause (``ettcore/defaults/causes.yaml``, and a
``--causes-file``'s), ``category`` a cause's display category, and ``bucket`` a Level 1 bucket; every label value list
is the vocabulary's (:data:`ettcore.vocabulary.VOCABULARY`, with the causes file's causes: the trace's,
:func:`ettcore.metric.vocabulary_of`).

Label values are escaped as the format asks (backslash, double quote, line feed), so any job id, model or owner
name is data and cannot end a label, a line or a series.  Names and label names are fixed here, never taken from
the data.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Iterator

import polars as pl

from ettcore import metric
from ettcore.errors import InputError, Problem
from ettcore.metric import hangs, intervals, money, restarts, slow, stalls
from ettcore.trace.load import Trace
from ettcore.vocabulary import VOCABULARY, Vocabulary

L1_BUCKETS = VOCABULARY.bucket_stems  # label ``bucket`` -> column stem of job_summary / group_summary
END_REASONS = VOCABULARY.interruptions  # label ``end_reason`` (each counted in the column nof_<end reason>)
JOB_OWNER_COLUMNS = ("owner", "team", "user", "account")
"""The jobs table's columns that name who owns a job, first present wins (``ett_job_owner``; the alerts name it)."""


def escape_label(value: Any) -> str:
    """A label value as the text format writes it between double quotes."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


SECONDS_DIGITS = 3  # the metric's resolution: milliseconds (GPU-seconds: gpus x milliseconds)
MONEY_DIGITS = 6  # money: a millionth of the currency unit


def number(value: Any, digits: int | None = None) -> str:
    """A sample value: integers as such, floats in Python's shortest round-trip form (rounded to ``digits`` decimals
    when given, so that a sum of milliseconds reads ``32696.645``, not ``32696.644999999997``), NaN and infinities
    spelled as Go reads them."""
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
    if digits is not None:
        v = round(v, digits) + 0.0  # + 0.0: no "-0.0"
        if v == int(v) and abs(v) < 2**53:
            return str(int(v))
    return repr(v)


def labels(pairs: Iterable[tuple[str, Any]]) -> str:
    inner = ",".join(f'{k}="{escape_label(v)}"' for k, v in pairs)
    return "{" + inner + "}" if inner else ""


def family(
    name: str, help_text: str, samples: Iterable[tuple[str, Any]], digits: int | None = None, kind: str | None = None
) -> Iterator[str]:
    """HELP, TYPE and the samples (``(label text, value)``) of one family: a gauge, or a counter for a name ending
    in ``_total``; values rounded to ``digits`` decimals or, by default, to milliseconds
    (:data:`SECONDS_DIGITS`) for a name in seconds (``_seconds`` among its words: ``..._seconds``,
    ``..._seconds_total``, ``..._seconds_by_cause``)."""
    kind = kind or ("counter" if name.endswith("_total") else "gauge")
    if digits is None and "seconds" in name.split("_"):
        digits = SECONDS_DIGITS
    yield f"# HELP {name} {escape_help(help_text)}"
    yield f"# TYPE {name} {kind}"
    for lab, value in samples:
        yield f"{name}{lab} {number(value, digits)}"


def _owners(trace: Trace) -> dict[str, str]:
    """Each of the trace's components (in report order: the defaults, a mapping file's own, unattributed) and its
    owner."""
    return {c: trace.phase_map.owner(c) for c in metric.components(trace)}


def _group_families(
    level: str,
    rows: list[dict],
    key: str | None,
    owners: dict[str, str],
    counters: bool = False,
    money_rows: dict[Any, dict] | None = None,
    currency: str = "USD",
    vocabulary: Vocabulary = VOCABULARY,
) -> Iterator[str]:
    """The families of the fleet (``key`` None) or of one row a model, from group_summary rows (GPU-hours);
    ``counters``: the monotone ``_total`` families too; ``money_rows``: each row's money (``money.group_money``,
    by the row's key; the fleet's under None); ``vocabulary``: the trace's (its causes and their categories)."""

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
    wall = [(lab(r), r["wall_gpu_h"] * 3600) for r in rows]
    lost = [(lab(r, ("component", c), ("owner", owners[c])), r[f"{c}_gpu_h"] * 3600) for r in rows for c in owners]
    nof = [(lab(r, ("end_reason", e)), r[f"nof_{e}"]) for r in rows for e in END_REASONS]
    yield from family(f"ett_{level}_wall_gpu_seconds", f"GPU-seconds of wall time of {what}.", wall)
    yield from family(
        f"ett_{level}_l1_gpu_seconds",
        f"GPU-seconds of {what} per Level-1 bucket (they add up to the wall time).",
        [(lab(r, ("bucket", b)), r[f"{col}_gpu_h"] * 3600) for r in rows for b, col in L1_BUCKETS.items()],
    )
    yield from family(
        f"ett_{level}_l2_gpu_seconds",
        f"GPU-seconds of lost (non-productive) time of {what} per Level-2 component and owner.",
        lost,
    )
    causes = vocabulary.cause_names
    nof_by_cause = [(lab(r, ("cause", c)), r["by_cause"].get(c, (0, 0.0))[0]) for r in rows for c in causes]
    lost_by_cause = [(lab(r, ("cause", c)), r["by_cause"].get(c, (0, 0.0))[1] * 3600) for r in rows for c in causes]
    categories = list(dict.fromkeys(vocabulary.category_of[c] for c in causes))  # in the causes' order
    nof_by_category = [
        (lab(r, ("category", k)), sum(n for c, (n, _) in r["by_cause"].items() if vocabulary.category_of[c] == k))
        for r in rows
        for k in categories
    ]
    yield from family(f"ett_{level}_interruptions", f"Interruptions (NoF) of {what} by end reason.", nof)
    yield from family(
        f"ett_{level}_interruptions_by_cause",
        f"Interruptions (NoF) of {what} by interruption cause (ettcore/defaults/causes.yaml; unknown: the source did"
        " not say).",
        nof_by_cause,
    )
    yield from family(
        f"ett_{level}_interruptions_by_category",
        f"Interruptions (NoF) of {what} by the display category of their causes (a causes file's categories, else the"
        " cause groups' labels).",
        nof_by_category,
    )
    yield from family(
        f"ett_{level}_lost_gpu_seconds_by_cause",
        f"GPU-seconds of {what} lost to each interruption cause: the recovery after each interruption (re-queue,"
        " restart, replayed work).",
        lost_by_cause,
    )
    yield from family(
        f"ett_{level}_excluded_gpu_seconds",
        f"GPU-seconds of {what} left out by exclusion windows.",
        [(lab(r), r["excluded_gpu_h"] * 3600) for r in rows],
    )
    if counters:
        yield from family(
            f"ett_{level}_wall_gpu_seconds_total",
            f"GPU-seconds of wall time of {what}, cumulative over the trace's history (increase() over a range).",
            wall,
        )
        yield from family(
            f"ett_{level}_productive_gpu_seconds_total",
            f"GPU-seconds of productive time of {what}, cumulative: increase(productive) / increase(wall) is the "
            "ETT ratio over a range.",
            [(lab(r), r["productive_gpu_h"] * 3600) for r in rows],
        )
        yield from family(
            f"ett_{level}_lost_gpu_seconds_total",
            f"GPU-seconds of lost time of {what} per Level-2 component and owner, cumulative.",
            lost,
        )
        yield from family(
            f"ett_{level}_interruptions_total", f"Interruptions (NoF) of {what} by end reason, cumulative.", nof
        )
        yield from family(
            f"ett_{level}_interruptions_by_cause_total",
            f"Interruptions (NoF) of {what} by interruption cause, cumulative.",
            nof_by_cause,
        )
        yield from family(
            f"ett_{level}_interruptions_by_category_total",
            f"Interruptions (NoF) of {what} by the display category of their causes, cumulative.",
            nof_by_category,
        )
        yield from family(
            f"ett_{level}_lost_gpu_seconds_by_cause_total",
            f"GPU-seconds of {what} lost to each interruption cause (its recoveries), cumulative.",
            lost_by_cause,
        )
    if money_rows is not None:
        cur = ("currency", currency)
        billed = [c for c in owners if c not in money.UNBILLED]

        def m(r: dict) -> dict:
            return money_rows[r[key] if key else None]

        yield from family(
            f"ett_{level}_cost",
            f"Cost of the GPU time held by {what} (wall minus {', '.join(money.UNBILLED)}, at its jobs' prices).",
            [(lab(r, cur), m(r)["cost"]) for r in rows],
            digits=MONEY_DIGITS,
        )
        lost_cost = [
            (lab(r, ("component", c), ("owner", owners[c]), cur), m(r)[f"{c}_cost"]) for r in rows for c in billed
        ]
        yield from family(
            f"ett_{level}_lost_cost",
            f"Cost of the lost GPU time held by {what} per Level-2 component and owner "
            f"({', '.join(money.UNBILLED)} holds no GPU and is not billed).",
            lost_cost,
            digits=MONEY_DIGITS,
        )
        if counters:
            yield from family(
                f"ett_{level}_lost_cost_total",
                f"Cost of the lost GPU time held by {what} per component and owner, cumulative.",
                lost_cost,
                digits=MONEY_DIGITS,
            )


def _crash_loop_families(loops: pl.DataFrame, models: list[Any]) -> Iterator[str]:
    """The crash loops of the fleet and of each of ``models`` (:func:`ettcore.metric.restarts.crash_loops`' rows):
    their restarts and the GPU-seconds those held, as gauges and as ``_total`` counters (cumulative: a loop only
    grows as the trace does)."""
    by_model = {
        r["model"]: r
        for r in loops.group_by("model").agg(pl.col("restarts").sum(), pl.col("gpu_h").sum()).iter_rows(named=True)
    }
    levels = (
        ("fleet", "the fleet", [("", (int(loops["restarts"].sum()), float(loops["gpu_h"].sum())))]),
        (
            "model",
            "each model",
            [
                (
                    labels([("model", m)]),
                    (int(by_model.get(m, {}).get("restarts", 0)), float(by_model.get(m, {}).get("gpu_h", 0.0))),
                )
                for m in models
            ],
        ),
    )
    for level, what, rows in levels:
        for suffix, kind in (("", "now"), ("_total", "cumulative")):
            yield from family(
                f"ett_{level}_crash_loop_restarts{suffix}",
                f"Restarts of {what} in crash loops (crashed again from the same resume point, no progress saved), "
                f"{'over the trace to the as-of time' if kind == 'now' else 'cumulative'}.",
                [(lab, v[0]) for lab, v in rows],
            )
            yield from family(
                f"ett_{level}_crash_loop_gpu_seconds{suffix}",
                f"GPU-seconds {what} held in the restarts of its crash loops (they went nowhere), "
                f"{'over the trace to the as-of time' if kind == 'now' else 'cumulative'}.",
                [(lab, v[1] * 3600) for lab, v in rows],
            )


LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""A Prometheus label name (one that starts with ``__`` is reserved for Prometheus' own)."""


def storm_families(trace: Trace, by: str | None, interruptions: int | str | None, window: str | None) -> Iterator[str]:
    """Restart storms (:func:`ettcore.metric.restarts.storms_per_group`; docs/metric.md, "Restart storms") found over
    the whole trace with the thresholds ``interruptions`` within ``window`` (written as ``ett_export_storm_*``), per
    value of the jobs' column ``by`` (the label of that name: ``partition="low"``; every value the jobs hold, 0
    without a storm) or fleet-wide (no label): ``ett_fleet_restart_storms`` (a gauge: two storms may merge into one as
    the trace grows) and ``ett_fleet_restart_storm_interruptions`` with its ``_total`` counter (the interruptions in
    storms, which only grow; ``EttRestartStorm`` reads its increase).  ``by`` must be a column a summary can be grouped
    by and a label name; else one line naming ``--storm-by``."""
    if by is not None and (not LABEL_NAME.match(by) or by.startswith("__")):
        why = f"{by!r} is not a Prometheus label name (letters, digits and _, not first a digit nor __)"
        raise InputError(Problem("--storm-by", None, "storm_by", why))
    n, window_ms = restarts.storm_thresholds(interruptions, window)
    rows = list(restarts.storms_per_group(trace, by, n, f"{window_ms}ms").iter_rows(named=True))
    lab = [labels([(by, r[by])] if by else []) for r in rows]
    yield from family(
        "ett_export_storm_min_interruptions",
        "Interruptions within the storm window that make a restart storm (--storm-interruptions).",
        [("", n)],
    )
    yield from family(
        "ett_export_storm_window_seconds", "The window of a restart storm (--storm-window).", [("", window_ms / 1000)]
    )
    where = f"per {by}" if by else "across the fleet"
    yield from family(
        "ett_fleet_restart_storms",
        f"Restart storms {where} (at least ett_export_storm_min_interruptions interruptions within "
        "ett_export_storm_window_seconds), over the trace to the as-of time.",
        [(k, r["storms"]) for k, r in zip(lab, rows)],
    )
    for suffix, kind in (("", "over the trace to the as-of time"), ("_total", "cumulative")):
        yield from family(
            f"ett_fleet_restart_storm_interruptions{suffix}",
            f"Interruptions in restart storms {where}, {kind}.",
            [(k, r["interruptions"]) for k, r in zip(lab, rows)],
        )


def _group_rows(jobs: pl.DataFrame, groups: pl.DataFrame, key: str | None, causes_long: pl.DataFrame) -> list[dict]:
    """group_summary rows with NoF by end reason added (summed from the per-job rows), and ``by_cause``: cause ->
    (NoF, lost GPU-hours) from ``causes_long`` (:func:`ettcore.metric.cause_summary`)."""
    by = [key] if key else []
    sums = [pl.col(c).sum() for c in VOCABULARY.nof_columns]
    causes = jobs.group_by(by).agg(sums) if by else jobs.select(sums)
    rows = groups.join(causes, on=by, how="left") if by else groups.hstack(causes) if groups.height else groups
    out = list(rows.iter_rows(named=True))
    for r in out:
        mine = causes_long.filter(pl.col(key) == r[key]) if key else causes_long
        r["by_cause"] = {c["cause"]: (c["nof"], c["lost_gpu_h"]) for c in mine.iter_rows(named=True)}
    return out


DEFAULT_JOB_SERIES_WITHIN_S = 86400.0
"""Per-job series are written for jobs running or ended within this many seconds before the as-of time (24 h)."""


def recent_jobs(jobs: pl.DataFrame, as_of_ms: int | None, within_s: float | None) -> pl.DataFrame:
    """The jobs whose per-job series are written: running, or ended (``t1``) at most ``within_s`` seconds before the
    as-of time (the latest ``t1`` when the trace has none); every job when ``within_s`` is None."""
    if within_s is None or jobs.height == 0:
        return jobs
    end = (
        pl.lit(as_of_ms).cast(pl.Datetime("ms")) if as_of_ms is not None else pl.col("t1").max().cast(pl.Datetime("ms"))
    )
    t1 = pl.col("t1").cast(pl.Datetime("ms"))
    return jobs.filter((pl.col("status") == "running") | (t1 >= end - pl.duration(milliseconds=int(within_s * 1000))))


def current_spells(trace: Trace, job_ids: list[str]) -> dict[str, tuple[str, float]]:
    """For each running job: the L1 bucket it is in at its last measured instant and for how many seconds it has been
    in it without a break (the trailing run of intervals of that bucket in the metric's own attribution)."""
    if not job_ids:
        return {}
    iv = intervals.job_timeline(trace, job_ids).intervals.sort("job_id", "start_ms")
    out: dict[str, tuple[str, float]] = {}
    for (jid,), g in iv.group_by("job_id", maintain_order=True):
        buckets, starts, ends = g["bucket"].to_list(), g["start_ms"].to_list(), g["end_ms"].to_list()
        last, i = buckets[-1], len(buckets) - 1
        while i > 0 and buckets[i - 1] == last and ends[i - 1] == starts[i]:
            i -= 1
        out[str(jid)] = (last, (ends[-1] - starts[i]) / 1000)
    return out


def exposition(
    trace: Trace,
    prices: money.Prices | None = None,
    job_series_within_s: float | None = DEFAULT_JOB_SERIES_WITHIN_S,
    slow_tolerance: float | None = None,
    storm_by: str | None = None,
    storm_interruptions: int | str | None = None,
    storm_window: str | None = None,
    **live: Any,
) -> Iterator[str]:
    """Every line of the export of a loaded trace (without line ends), in a stable order.

    ``prices``: money families too; ``job_series_within_s``: per-job series only for jobs running or ended that
    recently before the as-of time (None: every job).  The ``_total`` counters are written when the export measures
    the whole trace (no window, no exclusion): a window's totals are not cumulative.  ``slow_tolerance``: that of slow
    time (:func:`slow_families`; None: the default).  ``storm_by``, ``storm_interruptions``, ``storm_window``: the
    restart storms' grouping column and thresholds (:func:`storm_families`).  ``live``: the thresholds of
    :func:`live_families` (the running jobs' hung and slow gauges)."""
    owners = _owners(trace)
    vocabulary = metric.vocabulary_of(trace)  # a --causes-file adds causes (and categories) to the package's
    fleet = metric.fleet_summary(trace)
    models = metric.fleet_summary(trace, by="model")
    counters = trace.window.whole
    if prices is not None:  # the money tables price every job's components
        all_jobs = metric.job_summary(trace)
        tables = money.money_tables(all_jobs, prices, metric.components(trace), owners)
        jobs = recent_jobs(all_jobs, trace.as_of_ms, job_series_within_s)
    else:  # only the recent jobs' components become columns (a pivot of every job's: 1.5 s of a 1M-job export)
        tables = None
        all_jobs = metric.engine_of(trace).per_job()  # their NoF by end reason (_group_rows) needs no component
        jobs = metric.job_components(trace, recent_jobs(all_jobs, trace.as_of_ms, job_series_within_s))
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
    yield from family(
        "ett_export_job_series_within_seconds",
        "Per-job series are written for jobs running or ended this recently before the as-of time (+Inf: every job).",
        [("", math.inf if job_series_within_s is None else job_series_within_s)],
    )
    yield from family(
        "ett_export_jobs_with_series", "Jobs whose per-job series this export writes.", [("", jobs.height)]
    )
    if fleet.height:
        cur = prices.currency if prices is not None else "USD"
        fleet_money = {None: tables["fleet"].row(0, named=True)} if tables is not None else None
        model_money = {r["model"]: r for r in tables["model"].iter_rows(named=True)} if tables is not None else None
        yield from _group_families(
            "fleet",
            _group_rows(all_jobs, fleet, None, metric.cause_summary(trace)),
            None,
            owners,
            counters,
            fleet_money,
            cur,
            vocabulary,
        )
        yield from _group_families(
            "model",
            _group_rows(all_jobs, models, "model", metric.cause_summary(trace, by="model")),
            "model",
            owners,
            counters,
            model_money,
            cur,
            vocabulary,
        )
    loops = restarts.crash_loops(trace) if counters else None  # found over the whole trace: no window cuts them
    if loops is not None and fleet.height:
        models_seen = [r["model"] for r in models.iter_rows(named=True)]
        yield from _crash_loop_families(loops, models_seen)
    if counters and fleet.height:  # storms too are found over the whole trace
        yield from storm_families(trace, storm_by, storm_interruptions, storm_window)

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
    owner_col = next((c for c in JOB_OWNER_COLUMNS if c in jobs.columns), None)
    yield from family(
        "ett_job_owner",
        f"Who owns the job (1): the jobs table's first of {', '.join(JOB_OWNER_COLUMNS)}; 'unknown' without one.",
        [
            (labels(lab + [("owner", (r[owner_col] if owner_col and r[owner_col] is not None else "unknown"))]), 1)
            for r, lab in zip(rows, job_lab)
        ],
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
        "Interruptions (NoF) of the job by end reason.",
        lambda r, e: r[f"nof_{e[0][1]}"],
        [[("end_reason", e)] for e in END_REASONS],
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
    if loops is not None:
        now = restarts.open_crash_loops(trace, loops)
        open_restarts = dict(zip(now["job_id"], now["restarts"]))
        yield from per_job(
            "ett_job_crash_loop_restarts",
            "Restarts of the crash loop the job is in now: crashed again from the same resume point, its last crash "
            "the job's last ended attempt (0 without one; docs/metric.md, Crash loops).",
            lambda r, e: open_restarts.get(r["job_id"], 0),
        )
    running = [r["job_id"] for r in rows if r["status"] == "running"]
    spells = current_spells(trace, running)

    def spell(bucket: str):
        return lambda r, e: spells[r["job_id"]][1] if spells.get(r["job_id"], ("", 0))[0] == bucket else 0.0

    yield from per_job(
        "ett_job_pending_seconds",
        "Seconds a running job has been starting without training yet (in Time to Start now; 0 otherwise).",
        spell("tts"),
    )
    yield from per_job(
        "ett_job_recovering_seconds",
        "Seconds a running job has been recovering from its last interruption (in Time to Recover now; 0 otherwise).",
        spell("recovery"),
    )
    if tables is not None:
        cur = ("currency", prices.currency)
        jm = {r["job_id"]: r for r in tables["jobs"].iter_rows(named=True)}
        yield from per_job(
            "ett_job_gpu_hour_price",
            "Price of a GPU-hour held by the job.",
            lambda r, e: jm[r["job_id"]]["price_per_gpu_h"],
            [[cur]],
        )
        yield from per_job(
            "ett_job_cost",
            "Cost of the GPU time the job held.",
            lambda r, e: round(jm[r["job_id"]]["cost"], MONEY_DIGITS),
            [[cur]],
        )
        yield from per_job(
            "ett_job_lost_cost",
            "Cost of the job's lost GPU time held (scheduling is not billed).",
            lambda r, e: round(jm[r["job_id"]]["lost_cost"], MONEY_DIGITS),
            [[cur]],
        )
    yield from slow_families(trace, [r["job_id"] for r in rows], job_lab, counters, slow_tolerance)
    yield from live_families(trace, **live)


# --------------------------------------------------------------------------- slow time


def slow_families(
    trace: Trace, job_ids: list[str], job_lab: list[list[tuple[str, Any]]], counters: bool, tolerance: float | None
) -> Iterator[str]:
    """Slow time (:mod:`ettcore.metric.slow`, docs/metric.md): the tolerance, the fleet's and each model's slow
    GPU-seconds (a gauge, and a ``_total`` counter when ``counters``) and each listed job's slow seconds (``job_ids``,
    labelled ``job_lab``).  Counted after the fact; not the live ``ett_job_slow`` flag of :func:`live_families`."""
    t = slow.check_tolerance(tolerance)
    yield from family(
        "ett_export_slow_tolerance",
        "How far over its job's ideal pace a train span may run before it is slow (a fraction; --slow-tolerance).",
        [("", t)],
    )
    fleet = slow.group_slow(trace, None, t)
    models = slow.group_slow(trace, "model", t)
    for level, frame, key in (("fleet", fleet, None), ("model", models, "model")):
        samples = [
            (labels([(key, r[key])] if key else []), r["slow_gpu_h"] * 3600) for r in frame.iter_rows(named=True)
        ]
        what = "the fleet" if key is None else "each model"
        yield from family(
            f"ett_{level}_slow_gpu_seconds",
            f"GPU-seconds of slow time of {what}: train spans over (1 + tolerance) x their job's ideal pace, their "
            "time beyond it (productive time, counted beside ETT%).",
            samples,
        )
        if counters:
            yield from family(
                f"ett_{level}_slow_gpu_seconds_total", f"GPU-seconds of slow time of {what}, cumulative.", samples
            )
    per_job = {r["job_id"]: r for r in slow.job_slow(trace, t).iter_rows(named=True)}
    yield from family(
        "ett_job_slow_seconds",
        "Seconds of slow time of the job (its train spans' time beyond its ideal pace; not the live ett_job_slow).",
        [(labels(lab), per_job[j]["slow_s"] if j in per_job else 0.0) for j, lab in zip(job_ids, job_lab)],
    )


# --------------------------------------------------------------------------- live hang detection


def live_families(
    trace: Trace, stall_after: float | str | None = None, job_stall_after: dict[str, float] | None = None
) -> Iterator[str]:
    """The jobs running at the as-of time (:mod:`ettcore.metric.hangs`): ``ett_job_hung`` (labels ``job_id``,
    ``model``, ``first_stopped_rank``, ``first_stopped_node``; empty when no rank reported), ``ett_job_slow``,
    ``ett_job_progress_age_seconds`` and ``ett_job_stall_threshold_seconds``.  Ranks come from ``trace.json``'s
    ``rank_progress`` (a converted run folder's)."""
    rows = hangs.live_jobs(trace, trace.metadata.get("rank_progress") or [], stall_after, job_stall_after)
    job_lab = [[("job_id", r["job_id"]), ("model", r["model"])] for r in rows]

    def blank(v: Any) -> str:
        return "" if v is None else str(v)

    yield from family(
        "ett_job_hung",
        "1 when the running job's step/cursor has not advanced for longer than its stall threshold, else 0; "
        "with the rank that stopped first and its node (empty when unknown).",
        [
            (
                labels(
                    lab
                    + [("first_stopped_rank", blank(r["first_stopped_rank"]))]
                    + [("first_stopped_node", blank(r["first_stopped_node"]))]
                ),
                int(r["state"] == "hung"),
            )
            for r, lab in zip(rows, job_lab)
        ],
    )
    yield from family(
        "ett_job_slow",
        f"1 when the running job advances but its recent step time exceeds {hangs.SLOW_FACTOR:g} x its median, else 0.",
        [(labels(lab), int(r["state"] == "slow")) for r, lab in zip(rows, job_lab)],
    )
    yield from family(
        "ett_job_progress_age_seconds",
        "Seconds since the running job's step/cursor last advanced (since its attempt started, before any advance).",
        [(labels(lab), r["progress_age_s"]) for r, lab in zip(rows, job_lab)],
    )
    yield from family(
        "ett_job_stall_threshold_seconds",
        "The running job's stall threshold: max(60 s, 10 x its median step time) unless overridden.",
        [(labels(lab), r["stall_threshold_s"]) for r, lab in zip(rows, job_lab)],
    )


def write(trace: Trace, out, **options: Any) -> int:
    """Write the export to a text stream; returns the number of samples (``options``: those of :func:`exposition`)."""
    n = 0
    for line in exposition(trace, **options):
        out.write(line + "\n")
        n += not line.startswith("#")
    return n
