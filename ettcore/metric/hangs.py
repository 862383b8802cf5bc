"""Live hang detection: which jobs running at the analysis time are hung, which are slow (reporting only).

For each job running at the as-of time (its current attempt is ``running`` then; the latest such attempt):

- its **last advance**: the latest end of a train span of the current attempt whose data cursor advanced
  (``cursor_end > cursor_start``); the **progress age**: as-of minus that instant;
- its **median step time**: ``1 / pace``, the job's pace as :mod:`ettcore.metric.stalls` defines it (the median,
  over all its train spans that advanced, of cursor units per second; a cursor unit is a step where the cursor counts
  steps, as the integrations' cursors do);
- its **stall threshold**: the job's own from a per-job file, else ``--stall-after``, else ``max(60 s, 10 x median
  step time)`` (60 s when it never advanced), the one the post-hoc stalls use;
- its **recent step time**: seconds per cursor unit over the last :data:`RECENT_SPANS` train spans of the current
  attempt that advanced (a recorder writes one at least every second while the job steps).

State (:data:`STATES`): ``starting`` when the current attempt has not advanced yet (start-up and restore are
TTS/TTR, not judged here); ``hung`` when the progress age exceeds the threshold; ``slow`` when not hung and the recent
step time exceeds :data:`SLOW_FACTOR` x the median step time; else ``advancing``.  The query is
``ettcore/sql/metric/live_progress.sql``; ``reference_live`` of ``tests/reference.py`` is its plain-Python
reference.

Per rank: when the integrations kept each rank's last progress (``progress/<job>-rank-NNNNN.json`` in the run folder,
:func:`ettcore.importers.recorder.read_rank_progress`), :func:`live_jobs` adds, among the ranks seen in the current
attempt, the one that **stopped first** (the smallest step, then the earliest last-advance time) and the one that
**advanced last** (the latest last-advance time), each with its node.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, Iterable

import polars as pl

from ettcore.errors import InputError, Problem
from ettcore.metric import stalls
from ettcore.order import in_natural_order
from ettcore.trace.load import Trace
from ettcore.trace.queries import sql

STATES = ("hung", "slow", "advancing", "starting")  # the one list of live states, worst first
SLOW_FACTOR = 3.0  # slow: the recent step time above this many median step times
RECENT_SPANS = 5  # recent step time: over this many latest advancing train spans of the current attempt
RANK_FIELDS = ("rank", "node", "step", "cursor", "t")


def _seconds(value: Any, where: str, row: int | None, fld: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(Problem(where, row, fld, f"not a positive number of seconds: {value!r}"))
    return seconds


def read_job_thresholds(path: str | Path) -> dict[str, float]:
    """A per-job threshold file: CSV with columns ``job_id, stall_after_s``, or JSON ``{job_id: seconds}``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(Problem(str(path), None, None, f"cannot read the threshold file: {exc}")) from None
    out: dict[str, float] = {}
    if path.suffix.lower() == ".json":
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise InputError(Problem(str(path), None, None, f"not valid JSON: {exc}")) from None
        if not isinstance(doc, dict):
            raise InputError(Problem(str(path), None, None, "expected an object {job_id: seconds}"))
        for n, (job_id, seconds) in enumerate(doc.items(), start=1):
            out[str(job_id)] = _seconds(seconds, str(path), n, job_id)
        return out
    rows = list(csv.DictReader(text.splitlines()))
    for n, r in enumerate(rows, start=2):  # row 1 is the header
        for fld in ("job_id", "stall_after_s"):
            if not (r.get(fld) or "").strip():
                raise InputError(Problem(str(path), n, fld, "missing"))
        job_id = r["job_id"].strip()
        if job_id in out:
            raise InputError(Problem(str(path), n, "job_id", f"job {job_id!r} given twice"))
        out[job_id] = _seconds(r["stall_after_s"], str(path), n, "stall_after_s")
    return out


def live_progress(
    trace: Trace,
    stall_after: float | str | None = None,
    job_stall_after: dict[str, float] | None = None,
    *,
    slow_factor: float = SLOW_FACTOR,
    recent_spans: int = RECENT_SPANS,
) -> pl.DataFrame:
    """One row a job running at the as-of time (``live_progress.sql``): ``job_id, model, attempt, attempt_start,
    last_advance, cursor, progress_age_s, stall_threshold_s, median_step_s, recent_step_s, state``."""
    stalls.prepare(trace, stall_after)
    con = trace.con
    # a fleet store keeps where its running jobs' rows are (ettcore.store): it gives them without reading the others
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW live_spans AS {trace.stored_views.get('live_spans') or sql('metric/live_spans')}"
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_live_params AS SELECT $k::DOUBLE AS slow_factor, $n::BIGINT AS recent_spans",
        {"k": float(slow_factor), "n": int(recent_spans)},
    )
    per_job = pl.DataFrame(
        {"job_id": list((job_stall_after or {}).keys()), "stall_after_s": list((job_stall_after or {}).values())},
        schema={"job_id": pl.String, "stall_after_s": pl.Float64},
    )
    con.register("_ett_job_stall_after", per_job.to_arrow())
    con.execute("CREATE OR REPLACE TEMP TABLE ett_job_stall_after AS SELECT * FROM _ett_job_stall_after")
    con.unregister("_ett_job_stall_after")
    return trace.sql(sql("metric/live_progress"))


def rank_extremes(ranks: Iterable[dict], job_id: str, since_s: float) -> tuple[dict | None, dict | None]:
    """Among ``job_id``'s rank records last written at or after ``since_s`` (the current attempt's start, epoch
    seconds): the rank that stopped first (smallest step, then earliest ``t``, then smallest rank) and the one that
    advanced last (latest ``t``, then largest step, then smallest rank)."""
    mine = [r for r in ranks if r["job_id"] == job_id and r["t"] >= since_s]
    if not mine:
        return None, None
    first = min(mine, key=lambda r: (r["step"], r["t"], r["rank"]))
    last = min(mine, key=lambda r: (-r["t"], -r["step"], r["rank"]))
    return first, last


def live_jobs(
    trace: Trace,
    ranks: Iterable[dict] = (),
    stall_after: float | str | None = None,
    job_stall_after: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """:func:`live_progress`'s rows as dicts (natural job order), each with ``ranks`` (how many ranks reported in the
    current attempt), ``first_stopped_rank``/``_node``/``_step``/``_at`` and ``last_advanced_rank``/``_node``/
    ``_step``/``_at`` (None when no rank reported)."""
    ranks = list(ranks)
    out = []
    for r in in_natural_order(live_progress(trace, stall_after, job_stall_after)).iter_rows(named=True):
        since = r["attempt_start"].timestamp()
        first, last = rank_extremes(ranks, r["job_id"], since)
        r["ranks"] = sum(1 for x in ranks if x["job_id"] == r["job_id"] and x["t"] >= since)
        for name, pick in (("first_stopped", first), ("last_advanced", last)):
            r[f"{name}_rank"] = None if pick is None else pick["rank"]
            r[f"{name}_node"] = None if pick is None else pick["node"]
            r[f"{name}_step"] = None if pick is None else pick["step"]
            r[f"{name}_at"] = None if pick is None else pick["t"]
        out.append(r)
    return out
