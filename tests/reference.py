"""Plain-Python reference implementation of the ETT metric (trace spec, sections 3-6).

This module is the *oracle* the property tests compare the DuckDB SQL
implementation against; it lives beside them (``tests/``, imported as ``reference``), not in the package.  It is
written independently of the SQL and is deliberately slow and obvious: for each job it collects every time boundary
(attempt ends, span ends, replay splits, as-of time, calendar boundaries),
cuts the job's wall time ``[T0, T1)`` into elementary intervals, and
classifies each elementary interval by testing its midpoint against the
definitions directly.  No clever sweep, no window functions.

Inputs are plain Python data, not files:

``jobs``
    list of dicts ``{"job_id": str, "model": str?, "gpus": int?, <labels>...}``
    (may be ``None`` or empty; a job without a row gets ``model = job_id`` and
    ``gpus = 1``).
``attempts``
    list of dicts ``{"job_id", "attempt": int, "start": int, "end": int | None,
    "end_reason": str}``.
``spans``
    list of dicts ``{"job_id", "attempt", "phase", "start": int, "end": int,
    "cursor_start": number | None, "cursor_end": number | None}`` (``stage``
    and other keys are ignored).

Every timestamp is an **integer number of milliseconds since the Unix epoch
(UTC)**; durations in the output are seconds (``ms / 1000``).  The inputs are
assumed valid (the loader's job); :func:`check_valid` raises ``ValueError``
on the structural rules the generators must respect.

Conventions (decisions where the spec is silent, shared with the SQL):

* **as-of.**  With an explicit ``as_of`` (ms), or -- when some attempt is
  running (``end is None``) -- the default ``as_of`` = the latest timestamp
  anywhere in the trace (max over attempt starts and ends and span ends):
  attempts starting at or after ``as_of`` are dropped (with the default
  ``as_of``, only those starting after it: nothing the trace recorded is left
  out without an explicit as-of, so the cut is ``as_of + 1`` ms, as in
  ``ett_params.cut_ms``); an attempt ending after
  ``as_of`` (or running) ends at ``as_of`` with ``end_reason = "running"``;
  spans starting at or after the cut are dropped; a span ending after
  ``as_of`` ends there, a train span's ``cursor_end`` prorated linearly:
  ``c0 + (c1 - c0) * (as_of - s) / (e - s)``.  A job left with no attempt is
  dropped.
* **Replay split** of a train span ``[s, e]`` (cursors ``c0 <= c1``) with
  ``h`` = max ``cursor_end`` over train spans of the same job that *start*
  strictly earlier (any attempt): no such span -> ``split = s``; ``c1 > c0``
  -> ``split = s + floor(((h - c0) * (e - s)) / (c1 - c0))`` in float64, in
  that operation order, clamped to ``[s, e]``; ``c1 == c0`` -> ``split = e``
  if ``c0 <= h`` else ``s``.  ``[s, split)`` is replay, ``[split, e)`` is
  productive.
* **L2 attribution** of a non-productive instant ``t``: among covering spans
  (every non-train span, and the replay part ``[s, split)`` of each train span,
  as phase ``train``) with ``start <= t < end``, the one with the largest
  ``end``; ties go to the phase later in the vocabulary order.  Not covered but
  inside an attempt: ``unattributed``; between attempts: ``scheduling``.
* **L1 buckets.**  Productive parts cut ``[T0, T1]`` into non-productive
  stretches (leading, middle, trailing).  An interruption (attempt end with
  ``end_reason`` failure or preemption) at ``t`` belongs to stretch ``[a, b]``
  when ``a <= t <= b``.  Leading stretch: ``TTS = [T0, min(first interruption,
  first productive start)]`` (``[T0, min(first interruption, T1)]`` for a job
  that never trained), the rest recovery.  Middle stretches: recovery if they
  hold an interruption, else in-training loss.  Trailing stretch: recovery if it
  holds an interruption, else shutdown tail.
* **Fleet**: ``ett_pct = 100 * sum(gpus * productive) / sum(gpus * wall)``;
  ``ett_mean_pct`` = plain mean of per-job ``ett_pct``; GPU-hours =
  ``sum(gpus * seconds) / 3600``.
* **Trend**: every elementary interval is additionally cut at UTC calendar
  boundaries (day; ISO week starting Monday; month) and credited to the bucket
  it lies in.
* **Windows and exclusions** (``since``, ``until``, ``exclusions``): the job's
  pieces are computed on the whole (clipped) job exactly as above, additionally
  cut at ``since``, ``until`` and the bounds of the exclusions that apply to it;
  a piece is *measured* when its doubled midpoint lies in ``[2 since, 2 until)``
  and in no applicable exclusion ``[2 start, 2 end)``.  Every figure sums
  measured pieces only (``wall_s`` too); an interruption counts when its instant
  lies in ``[since, until)`` and in no applicable exclusion.  ``t0``/``t1`` are
  ``T0``/``T1`` clipped to the window and ``excluded_s = t1 - t0 - wall``.  A job
  is listed when ``[T0, T1)`` overlaps the window, ``T0`` lies in it, or it has a
  counted interruption.  An exclusion is a dict ``{"start", "end", "reason",
  "job": id | None, "label": (column, value) | None}``; it applies to a job when
  the id matches (if given) and the job's column, as text, equals the value (if
  given; ``model`` and ``gpus`` default as above).
* **Rolling trend** (``every`` hour or day, trailing window ``W`` a multiple of
  it): pieces are also cut at every UTC hour (or day) mark; the row of the bucket
  starting at ``B`` sums the measured pieces and counted interruptions in
  ``[B + every - W, B + every)``; rows run from the first to the last bucket that
  holds measured time or a counted interruption.

Productive instants carry bucket ``productive``, phase ``train`` and the
pseudo-component :data:`PRODUCTIVE` in the L2 matrices.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

from ettcore.vocabulary import VOCABULARY

#: The spec's phase vocabulary, in vocabulary order (spec section 5).
PHASE_ORDER: tuple[str, ...] = (
    "scheduling",
    "hardware_setup",
    "trainer_init",
    "data_warmup",
    "checkpoint_load",
    "pt2_compile",
    "train",
    "checkpoint_save",
    "eval",
    "shutdown",
    "publish",
)

#: Phase -> L2 component (spec section 2).
COMPONENT_OF: dict[str, str] = {
    "scheduling": "scheduling",
    "hardware_setup": "hardware_setup",
    "trainer_init": "trainer_init",
    "data_warmup": "trainer_init",
    "checkpoint_load": "trainer_init",
    "pt2_compile": "pt2_compile",
    "train": "wasted_training",
    "checkpoint_save": "wasted_training",
    "eval": "wasted_training",
    "shutdown": "shutdown",
    "publish": "shutdown",
}

COMPONENTS: tuple[str, ...] = (
    "scheduling",
    "hardware_setup",
    "trainer_init",
    "pt2_compile",
    "wasted_training",
    "shutdown",
)
UNATTRIBUTED = "unattributed"
ALL_COMPONENTS: tuple[str, ...] = COMPONENTS + (UNATTRIBUTED,)
PRODUCTIVE = "productive"
# The vocabulary's words (ettcore/defaults): the Level 1 buckets and each one's column stem, the end reasons that
# interrupt a job, the end reasons of a running and of a cancelled attempt, the interruption causes in report order
# and the cause an interruption without one takes from its end reason.  Which instant falls in which bucket is this
# module's own logic (_l1_bucket).
L1_BUCKETS: tuple[str, ...] = VOCABULARY.bucket_names
L1_STEMS: dict[str, str] = VOCABULARY.bucket_stems
INTERRUPTIONS: tuple[str, ...] = VOCABULARY.interruptions
RUNNING: str = VOCABULARY.open_end_reason
CANCELLED: str = VOCABULARY.role("cancel")[0]
COMPLETED: str = VOCABULARY.role("completion")[0]
CAUSES: tuple[str, ...] = VOCABULARY.cause_names
DERIVED_CAUSE: dict[str, str] = VOCABULARY.derived
CRASH_CAUSES: tuple[str, ...] = VOCABULARY.crash_causes  # an interruption of these causes is a crash (crash loops)
EVERY: tuple[str, ...] = ("day", "week", "month")

Piece = tuple[int, int, str, str, str]  # (start_ms, end_ms, l1_bucket, phase, component)


# --------------------------------------------------------------------------- input


def check_valid(attempts: list[dict], spans: list[dict]) -> None:
    """Raise ``ValueError`` if the trace breaks a structural rule of the spec.

    Rules: attempt ``start <= end``; running (``end is None``) only with
    ``end_reason == "running"`` and only as a job's last attempt; attempts of a
    job numbered increasingly in time and not overlapping; spans inside their
    attempt with ``start <= end``; train spans with ``cursor_start <=
    cursor_end`` and not overlapping within a job; phases from the vocabulary.
    """
    by_job: dict[str, list[dict]] = defaultdict(list)
    keys = set()
    for a in attempts:
        key = (a["job_id"], a["attempt"])
        if key in keys:
            raise ValueError(f"duplicate attempt {key}")
        keys.add(key)
        if (a["end"] is None) != (a["end_reason"] == RUNNING):
            raise ValueError(f"attempt {key}: end None iff end_reason running")
        if a["end"] is not None and a["end"] < a["start"]:
            raise ValueError(f"attempt {key}: end before start")
        by_job[a["job_id"]].append(a)
    for job, atts in by_job.items():
        atts = sorted(atts, key=lambda a: a["attempt"])
        for prev, nxt in zip(atts, atts[1:]):
            if prev["end"] is None or nxt["start"] < prev["end"]:
                raise ValueError(
                    f"job {job}: attempts {prev['attempt']} and {nxt['attempt']} overlap or are out of order"
                )
    att = {(a["job_id"], a["attempt"]): a for a in attempts}
    trains: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for s in spans:
        a = att.get((s["job_id"], s["attempt"]))
        if a is None:
            raise ValueError(f"span {s} names an unknown attempt")
        if s["phase"] not in COMPONENT_OF:
            raise ValueError(f"unknown phase {s['phase']!r}")
        if s["end"] < s["start"] or s["start"] < a["start"] or (a["end"] is not None and s["end"] > a["end"]):
            raise ValueError(f"span {s} outside its attempt or reversed")
        if s["phase"] == "train":
            if s.get("cursor_start") is None or s.get("cursor_end") is None or s["cursor_end"] < s["cursor_start"]:
                raise ValueError(f"train span {s}: missing or decreasing cursor")
            trains[s["job_id"]].append((s["start"], s["end"]))
    for job, iv in trains.items():
        iv.sort()
        for (s0, e0), (s1, e1) in zip(iv, iv[1:]):
            if s1 < e0:
                raise ValueError(f"job {job}: train spans overlap")


def default_as_of(attempts: list[dict], spans: list[dict]) -> int | None:
    """The as-of time used when none is given: ``None`` if no attempt is running,
    else the latest timestamp anywhere in the trace (attempt starts and ends,
    span ends)."""
    if not any(a["end"] is None for a in attempts):
        return None
    stamps = [a["start"] for a in attempts] + [a["end"] for a in attempts if a["end"] is not None]
    stamps += [s["end"] for s in spans]
    return max(stamps)


def clip_to_as_of(
    attempts: list[dict], spans: list[dict], as_of: int | None, cut: int | None = None
) -> tuple[list[dict], list[dict]]:
    """Apply the as-of rules of the module docstring; returns new lists (inputs untouched).

    ``cut`` (default ``as_of``): attempts and spans starting at or after it are dropped; the default as-of passes
    ``as_of + 1`` (:func:`reference_metrics` returns it as ``cut``)."""
    if as_of is None:
        return [dict(a) for a in attempts], [dict(s) for s in spans]
    cut = as_of if cut is None else cut
    out_a = []
    for a in attempts:
        if a["start"] >= cut:
            continue
        a = dict(a)
        if a["end"] is None or a["end"] > as_of:
            a["end"] = as_of
            a["end_reason"] = RUNNING
        out_a.append(a)
    kept = {(a["job_id"], a["attempt"]) for a in out_a}
    out_s = []
    for s in spans:
        if s["start"] >= cut or (s["job_id"], s["attempt"]) not in kept:
            continue
        s = dict(s)
        if s["end"] > as_of:
            if s["phase"] == "train":
                c0, c1 = s["cursor_start"], s["cursor_end"]
                s["cursor_end"] = c0 + (c1 - c0) * (as_of - s["start"]) / (s["end"] - s["start"])
            s["end"] = as_of
        out_s.append(s)
    return out_a, out_s


# --------------------------------------------------------------------------- one job


def replay_splits(train_spans: list[dict]) -> list[tuple[int, int, int]]:
    """``(s, split, e)`` for each train span of one job (see the module docstring).

    ``h`` is the max ``cursor_end`` over train spans starting strictly earlier;
    ``[s, split)`` is replay and ``[split, e)`` productive.
    """
    out = []
    for sp in train_spans:
        s, e = sp["start"], sp["end"]
        c0, c1 = sp["cursor_start"], sp["cursor_end"]
        earlier = [o["cursor_end"] for o in train_spans if o["start"] < s]
        if not earlier:
            split = s
        else:
            h = max(earlier)
            if c1 > c0:
                split = s + math.floor(((h - c0) * (e - s)) / (c1 - c0))
                split = min(max(split, s), e)
            else:
                split = e if c0 <= h else s
        out.append((s, int(split), e))
    return out


def _winner(t2: int, covering: list[tuple[int, int, str]], order: dict[str, int]) -> str | None:
    """Phase of the covering span holding the doubled instant ``t2`` (largest end, then later phase)."""
    best = None
    for s, e, phase in covering:
        if 2 * s <= t2 < 2 * e:
            key = (e, order[phase])
            if best is None or key > best[0]:
                best = (key, phase)
    return None if best is None else best[1]


def _l1_bucket(a: int, b: int, prod: list[tuple[int, int]], interrupts: list[int], t0: int, t1: int) -> str:
    """L1 bucket of the non-productive elementary interval ``[a, b)``."""
    before = [pe for ps, pe in prod if pe <= a]
    after = [ps for ps, pe in prod if ps >= b]
    if not before:  # leading stretch [T0, first productive start] (or [T0, T1])
        first_prod = min(ps for ps, _ in prod) if prod else t1
        tts_end = min([first_prod] + interrupts)
        return "tts" if b <= tts_end else "recovery"
    lo = max(before)
    hi = min(after) if after else t1
    has_interrupt = any(lo <= t <= hi for t in interrupts)
    if has_interrupt:
        return "recovery"
    return "in_training_loss" if after else "shutdown_tail"


def job_pieces(
    attempts: list[dict],
    spans: list[dict],
    extra_bounds: Iterable[int] = (),
    phase_order: tuple[str, ...] = PHASE_ORDER,
    component_of: dict[str, str] = COMPONENT_OF,
) -> list[Piece]:
    """Cut one (clipped) job's ``[T0, T1)`` into classified elementary intervals.

    Each piece is ``(start_ms, end_ms, l1_bucket, phase, component)``; pieces
    are contiguous, in time order, and cover ``[T0, T1)`` exactly.
    ``extra_bounds`` adds cut points (calendar boundaries for the trend).
    """
    order = {p: i for i, p in enumerate(phase_order)}
    atts = sorted(attempts, key=lambda a: (a["attempt"], a["start"]))
    t0, t1 = atts[0]["start"], atts[-1]["end"]
    trains = sorted((s for s in spans if s["phase"] == "train"), key=lambda s: (s["start"], s["end"]))
    splits = replay_splits(trains)
    prod = [(split, e) for _, split, e in splits if split < e]
    covering = [(s["start"], s["end"], s["phase"]) for s in spans if s["phase"] != "train"]
    covering += [(s, split, "train") for s, split, _ in splits if s < split]
    interrupts = sorted(a["end"] for a in atts if a["end_reason"] in INTERRUPTIONS)

    bounds = {t0, t1}
    for a in atts:
        bounds.update((a["start"], a["end"]))
    for s, e, _ in covering:
        bounds.update((s, e))
    for s, split, e in splits:
        bounds.update((s, split, e))
    bounds.update(extra_bounds)
    cuts = sorted(b for b in bounds if t0 <= b <= t1)

    pieces: list[Piece] = []
    for a, b in zip(cuts, cuts[1:]):
        m2 = a + b  # doubled midpoint, exact in integers
        if any(2 * ps <= m2 < 2 * pe for ps, pe in prod):
            pieces.append((a, b, "productive", "train", PRODUCTIVE))
            continue
        phase = _winner(m2, covering, order)
        if phase is None:
            inside = any(2 * x["start"] <= m2 < 2 * x["end"] for x in atts)
            phase = UNATTRIBUTED if inside else "scheduling"
        comp = UNATTRIBUTED if phase == UNATTRIBUTED else component_of[phase]
        pieces.append((a, b, _l1_bucket(a, b, prod, interrupts, t0, t1), phase, comp))
    return pieces


def attempt_cause(a: dict) -> str | None:
    """An attempt's interruption cause: its own ``cause`` (empty = none), else its end reason's; None when it did not
    interrupt the job."""
    if a["end_reason"] not in INTERRUPTIONS:
        return None
    return (a.get("cause") or "").strip() or DERIVED_CAUSE[a["end_reason"]]


def piece_causes(attempts: list[dict], spans: list[dict], pieces: list[Piece]) -> list[str | None]:
    """The cause each piece's time goes to: for a recovery piece ``[a, b)``, of the interruptions in its stretch
    (the non-productive stretch holding it, bounds included), the last one at or before ``a`` (of several at one
    instant the last attempt's), else the stretch's first (earliest; of several at one instant the first attempt's);
    None for every other piece."""
    atts = sorted(attempts, key=lambda a: (a["start"], a["end"], a["attempt"]))
    ints = [(a["end"], i, attempt_cause(a)) for i, a in enumerate(atts) if a["end_reason"] in INTERRUPTIONS]
    trains = sorted((s for s in spans if s["phase"] == "train"), key=lambda s: (s["start"], s["end"]))
    prod = [(split, e) for _, split, e in replay_splits(trains) if split < e]
    t0, t1 = atts[0]["start"], max(a["end"] for a in atts)
    out: list[str | None] = []
    for a, b, bucket, *_ in pieces:
        if bucket != "recovery":
            out.append(None)
            continue
        lo = max([pe for ps, pe in prod if pe <= a], default=t0)
        hi = min([ps for ps, pe in prod if ps >= b], default=t1)
        inside = sorted(x for x in ints if lo <= x[0] <= hi)
        before = [x for x in inside if x[0] <= a]
        out.append((before[-1] if before else inside[0])[2])
    return out


def is_measured(a: int, b: int, since: int | None, until: int | None, excluded: Iterable[tuple[int, int]]) -> bool:
    """Whether the elementary interval ``[a, b)`` (no window bound inside it) is measured, by its doubled midpoint."""
    m2 = a + b
    if (since is not None and m2 < 2 * since) or (until is not None and m2 >= 2 * until):
        return False
    return not any(2 * s <= m2 < 2 * e for s, e in excluded)


def is_counted(t: int, since: int | None, until: int | None, excluded: Iterable[tuple[int, int]]) -> bool:
    """Whether the instant ``t`` lies in ``[since, until)`` and in no excluded ``[start, end)``."""
    if (since is not None and t < since) or (until is not None and t >= until):
        return False
    return not any(s <= t < e for s, e in excluded)


def job_row(job_id: str, row: dict | None) -> dict[str, Any]:
    """A job as exclusion filters see it: ``job_id``, ``model`` (default the id),
    ``gpus`` (default 1) and its labels."""
    row = dict(row or {})
    row["job_id"] = job_id
    row["model"] = row.get("model") if row.get("model") is not None else job_id
    row["gpus"] = int(row.get("gpus") or 1)
    return row


def applies(exclusion: dict, job: dict) -> bool:
    """Whether an exclusion applies to a job (see :func:`job_row`): same id if one is given,
    same label text if given."""
    if exclusion.get("job") is not None and exclusion["job"] != job["job_id"]:
        return False
    if exclusion.get("label") is not None:
        column, value = exclusion["label"]
        return job.get(column) is not None and str(job[column]) == value
    return True


def job_metrics(
    attempts: list[dict],
    spans: list[dict],
    *,
    job_id: str,
    model: str | None = None,
    gpus: int = 1,
    labels: dict | None = None,
    phase_order: tuple[str, ...] = PHASE_ORDER,
    component_of: dict[str, str] = COMPONENT_OF,
    since: int | None = None,
    until: int | None = None,
    excluded: list[tuple[int, int]] = (),
) -> dict[str, Any] | None:
    """Every per-job figure for one job whose attempts and spans are already clipped.

    ``since``/``until``/``excluded`` (the ``[start, end)`` of the exclusions that apply to this job): only measured
    pieces and counted interruptions count (module docstring); ``None`` when the job is not listed in the window.

    Returns L1 seconds (``wall_s = T1 - T0``, ``productive_s``, ``ett_pct =
    100 * productive / wall`` or ``None`` for zero wall, ``tts_s``, ``nof`` and
    by reason, ``ttr_total_s`` = all recovery, ``ttr_mean_s = ttr_total / nof``
    or ``None``, ``in_training_loss_s``, ``shutdown_tail_s``), ``components``
    (non-productive seconds per component, all seven), ``l2`` ``{(bucket,
    component): s}``, ``l2_phase`` ``{(bucket, phase): s}``, ``busy`` ``{phase:
    plain sum of span lengths}`` and ``pieces`` (ms).
    """
    atts = sorted(attempts, key=lambda a: (a["attempt"], a["start"]))
    cuts = [t for t in (since, until) if t is not None] + [t for iv in excluded for t in iv]
    every_piece = job_pieces(atts, spans, cuts, phase_order=phase_order, component_of=component_of)
    causes_of = piece_causes(atts, spans, every_piece)
    kept = [i for i, p in enumerate(every_piece) if is_measured(p[0], p[1], since, until, excluded)]
    pieces = [every_piece[i] for i in kept]
    T0, T1 = atts[0]["start"], atts[-1]["end"]
    t0 = T0 if since is None else max(T0, since)
    t1 = max(t0, T1 if until is None else min(T1, until))
    counted = [a for a in atts if a["end_reason"] in INTERRUPTIONS and is_counted(a["end"], since, until, excluded)]
    starts_inside = is_counted(T0, since, until, ())
    if not (t1 > t0 or starts_inside or counted):
        return None
    l1_ms: dict[str, int] = {b: 0 for b in L1_BUCKETS}
    comp_ms: dict[str, int] = {c: 0 for c in ALL_COMPONENTS}
    l2_ms: dict[tuple[str, str], int] = defaultdict(int)
    l2p_ms: dict[tuple[str, str], int] = defaultdict(int)
    for a, b, bucket, phase, comp in pieces:
        d = b - a
        l1_ms[bucket] += d
        l2_ms[(bucket, comp)] += d
        l2p_ms[(bucket, phase)] += d
        if comp != PRODUCTIVE:
            comp_ms[comp] += d
    busy_ms: dict[str, int] = defaultdict(int)
    for s in spans:
        busy_ms[s["phase"]] += s["end"] - s["start"]
    nof_by_reason = {r: sum(1 for a in counted if a["end_reason"] == r) for r in INTERRUPTIONS}
    nof = sum(nof_by_reason.values())
    nof_by_cause = {c: sum(1 for a in counted if attempt_cause(a) == c) for c in CAUSES}
    lost_ms_by_cause = {c: 0 for c in CAUSES}
    for i in kept:
        if causes_of[i] is not None:
            lost_ms_by_cause[causes_of[i]] += every_piece[i][1] - every_piece[i][0]
    cancelled = sum(1 for a in atts if a["end_reason"] == CANCELLED and is_counted(a["end"], since, until, excluded))
    wall = sum(b - a for a, b, *_ in pieces)
    return {
        "job_id": job_id,
        "model": job_id if model is None else model,
        "gpus": gpus,
        "labels": dict(labels or {}),
        "status": atts[-1]["end_reason"],
        "t0": t0,
        "t1": t1,
        "wall_s": wall / 1000,
        **{f"{stem}_s": l1_ms[b] / 1000 for b, stem in L1_STEMS.items()},
        "ett_pct": 100 * l1_ms["productive"] / wall if wall > 0 else None,
        "nof": nof,
        **{f"nof_{r}": n for r, n in nof_by_reason.items()},
        "cancelled": cancelled,
        "nof_by_cause": nof_by_cause,
        "lost_s_by_cause": {c: v / 1000 for c, v in lost_ms_by_cause.items()},
        "ttr_mean_s": l1_ms["recovery"] / 1000 / nof if nof else None,
        "excluded_s": (t1 - t0 - wall) / 1000,
        "components": {c: v / 1000 for c, v in comp_ms.items()},
        "l2": {k: v / 1000 for k, v in l2_ms.items()},
        "l2_phase": {k: v / 1000 for k, v in l2p_ms.items()},
        "busy": {k: v / 1000 for k, v in busy_ms.items()},
        "pieces": pieces,
    }


# --------------------------------------------------------------------------- whole trace


def _job_rows(jobs: list[dict] | None) -> dict[str, dict]:
    return {j["job_id"]: j for j in (jobs or [])}


def reference_metrics(
    jobs: list[dict] | None,
    attempts: list[dict],
    spans: list[dict],
    as_of: int | None = None,
    *,
    phase_order: tuple[str, ...] = PHASE_ORDER,
    component_of: dict[str, str] = COMPONENT_OF,
    since: int | None = None,
    until: int | None = None,
    exclusions: Iterable[dict] = (),
) -> dict[str, Any]:
    """Per-job reference figures for a whole trace (measured over ``[since, until)`` minus ``exclusions``).

    Returns ``{"as_of": ms | None, "jobs": {job_id: job_metrics(...)}}``; the
    effective as-of is the given one, else :func:`default_as_of`.  Jobs not
    listed in the window are absent.
    """
    exclusions = list(exclusions)
    eff = as_of if as_of is not None else default_as_of(attempts, spans)
    cut = as_of if as_of is not None else (None if eff is None else eff + 1)  # the default as-of cuts nothing recorded
    atts, sps = clip_to_as_of(attempts, spans, eff, cut)
    rows = _job_rows(jobs)
    a_by: dict[str, list[dict]] = defaultdict(list)
    s_by: dict[str, list[dict]] = defaultdict(list)
    for a in atts:
        a_by[a["job_id"]].append(a)
    for s in sps:
        s_by[s["job_id"]].append(s)
    out = {}
    for job_id in sorted(a_by):
        row = rows.get(job_id, {})
        labels = {k: v for k, v in row.items() if k not in ("job_id", "model", "gpus")}
        got = job_metrics(
            a_by[job_id],
            s_by[job_id],
            job_id=job_id,
            model=row.get("model"),
            gpus=int(row.get("gpus") or 1),
            labels=labels,
            phase_order=phase_order,
            component_of=component_of,
            since=since,
            until=until,
            excluded=job_exclusions(job_id, row, exclusions),
        )
        if got is not None:
            out[job_id] = got
    return {"as_of": eff, "cut": cut, "jobs": out}


def job_exclusions(job_id: str, row: dict | None, exclusions: Iterable[dict]) -> list[tuple[int, int]]:
    """``[start, end)`` of each exclusion that applies to the job."""
    job = job_row(job_id, row)
    return [(x["start"], x["end"]) for x in exclusions if applies(x, job)]


def _group_key(job: dict, by: str | None) -> Any:
    if by is None:
        return None
    if by in ("model", "gpus", "job_id", "status"):
        return job[by]
    return job["labels"].get(by)


def grouped_jobs(result: dict[str, Any], by: str | None) -> list[tuple[Any, list[dict]]]:
    """:func:`reference_metrics`'s jobs by group (``by=None``: one group, the fleet), sorted by key (``None`` last,
    else ``str`` of the key)."""
    groups: dict[Any, list[dict]] = defaultdict(list)
    for job in result["jobs"].values():
        groups[_group_key(job, by)].append(job)
    return [(key, groups[key]) for key in sorted(groups, key=lambda k: (k is None, str(k)))]


def reference_fleet(result: dict[str, Any], by: str | None = None) -> list[dict[str, Any]]:
    """Fleet (``by=None``: one row) or per-group figures from :func:`reference_metrics`.

    Each row: ``key`` (the group value, ``None`` for the fleet), ``jobs``,
    ``ett_pct = 100 * sum(gpus * productive) / sum(gpus * wall)``,
    ``ett_mean_pct`` (mean of per-job ``ett_pct``, jobs with zero wall left
    out), ``wall_gpu_h``, ``productive_gpu_h``, ``nof`` and
    ``<component>_gpu_h = sum(gpus * seconds) / 3600`` for all seven components
    and the same for the L1 buckets (``tts_gpu_h``, ``ttr_total_gpu_h``,
    ``in_training_loss_gpu_h``, ``shutdown_tail_gpu_h``) and for the time
    exclusion windows left out (``excluded_gpu_h``).
    Rows are sorted by key (``str`` of the key).
    """
    rows = []
    for key, js in grouped_jobs(result, by):
        wall_g = sum(j["gpus"] * j["wall_s"] for j in js)
        prod_g = sum(j["gpus"] * j["productive_s"] for j in js)
        pcts = [j["ett_pct"] for j in js if j["ett_pct"] is not None]
        row = {
            "key": key,
            "jobs": len(js),
            "ett_pct": 100 * prod_g / wall_g if wall_g > 0 else None,
            "ett_mean_pct": sum(pcts) / len(pcts) if pcts else None,
            "wall_gpu_h": wall_g / 3600,
            "productive_gpu_h": prod_g / 3600,
            "nof": sum(j["nof"] for j in js),
        }
        for c in ALL_COMPONENTS:
            row[f"{c}_gpu_h"] = sum(j["gpus"] * j["components"][c] for j in js) / 3600
        for b in (*(L1_STEMS[x] for x in L1_BUCKETS if x != PRODUCTIVE), "excluded"):
            row[f"{b}_gpu_h"] = sum(j["gpus"] * j[f"{b}_s"] for j in js) / 3600
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- trend


def _ms(dt: datetime) -> int:
    return int(round(dt.timestamp() * 1000))


def _dt(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)


def bucket_floor(ms: int, every: str) -> int:
    """Start (ms) of the UTC calendar bucket holding ``ms``: midnight, Monday midnight, or the 1st."""
    d = _dt(ms)
    day = datetime(d.year, d.month, d.day, tzinfo=timezone.utc)
    if every == "day":
        return _ms(day)
    if every == "week":
        return _ms(day - timedelta(days=day.weekday()))
    if every == "month":
        return _ms(datetime(d.year, d.month, 1, tzinfo=timezone.utc))
    raise ValueError(f"every must be one of {EVERY}, not {every!r}")


def bucket_next(start_ms: int, every: str) -> int:
    """Start (ms) of the bucket after the one starting at ``start_ms``."""
    d = _dt(start_ms)
    if every == "day":
        return _ms(d + timedelta(days=1))
    if every == "week":
        return _ms(d + timedelta(days=7))
    if every == "month":
        y, m = (d.year + 1, 1) if d.month == 12 else (d.year, d.month + 1)
        return _ms(datetime(y, m, 1, tzinfo=timezone.utc))
    raise ValueError(f"every must be one of {EVERY}, not {every!r}")


def reference_trend(
    jobs: list[dict] | None,
    attempts: list[dict],
    spans: list[dict],
    every: str,
    as_of: int | None = None,
    *,
    phase_order: tuple[str, ...] = PHASE_ORDER,
    component_of: dict[str, str] = COMPONENT_OF,
    since: int | None = None,
    until: int | None = None,
    exclusions: Iterable[dict] = (),
) -> list[dict[str, Any]]:
    """Fleet trend: each job's per-instant (measured) attribution prorated into UTC calendar buckets.

    One row per bucket that some job's measured time overlaps or where a counted interruption happens, in time order:
    ``bucket_start`` (aware UTC ``datetime``), ``bucket_start_ms``,
    ``ett_pct = 100 * productive_gpu_h / wall_gpu_h``, ``wall_gpu_h``,
    ``productive_gpu_h`` and ``<component>_gpu_h`` for all seven components
    (``gpus * seconds / 3600`` of the part of each job inside the bucket).
    """
    acc: dict[int, dict[str, float]] = {}
    empty = lambda: {"wall": 0.0, "productive": 0.0, **{c: 0.0 for c in ALL_COMPONENTS}}  # noqa: E731
    for job, pieces, stops in _measured_pieces(
        jobs,
        attempts,
        spans,
        as_of,
        lambda t0, t1: _calendar(t0, t1, every),
        phase_order=phase_order,
        component_of=component_of,
        since=since,
        until=until,
        exclusions=exclusions,
    ):
        g = job["gpus"]
        for t in stops:  # a bucket where an interruption happens is a row even if no wall time lies in it
            acc.setdefault(bucket_floor(t, every), empty())
        for a, b, _bucket, _phase, comp in pieces:
            start = bucket_floor(a, every)
            row = acc.setdefault(start, empty())
            gs = g * (b - a) / 1000
            row["wall"] += gs
            if comp == PRODUCTIVE:
                row["productive"] += gs
            else:
                row[comp] += gs
    out = []
    for start in sorted(acc):
        r = acc[start]
        row = {
            "bucket_start": _dt(start),
            "bucket_start_ms": start,
            "ett_pct": 100 * r["productive"] / r["wall"] if r["wall"] > 0 else None,
            "wall_gpu_h": r["wall"] / 3600,
            "productive_gpu_h": r["productive"] / 3600,
        }
        for c in ALL_COMPONENTS:
            row[f"{c}_gpu_h"] = r[c] / 3600
        out.append(row)
    return out


def _calendar(t0: int, t1: int, every: str) -> list[int]:
    """Starts of the UTC calendar buckets from the one holding ``t0`` to the one holding ``t1``."""
    cal = []
    b = bucket_floor(t0, every)
    while b <= t1:
        cal.append(b)
        b = bucket_next(b, every)
    return cal


def _measured_pieces(
    jobs,
    attempts,
    spans,
    as_of,
    marks,
    *,
    phase_order: tuple[str, ...] = PHASE_ORDER,
    component_of: dict[str, str] = COMPONENT_OF,
    since: int | None = None,
    until: int | None = None,
    exclusions: Iterable[dict] = (),
):
    """Per listed job: (job figures, measured pieces cut also at ``marks(T0, T1)``, counted interruption instants)."""
    exclusions = list(exclusions)
    res = reference_metrics(
        jobs,
        attempts,
        spans,
        as_of,
        phase_order=phase_order,
        component_of=component_of,
        since=since,
        until=until,
        exclusions=exclusions,
    )
    atts, sps = clip_to_as_of(attempts, spans, res["as_of"], res["cut"])
    rows = _job_rows(jobs)
    for job_id, job in res["jobs"].items():
        j_atts = [a for a in atts if a["job_id"] == job_id]
        excl = job_exclusions(job_id, rows.get(job_id), exclusions)
        T0 = min(a["start"] for a in j_atts)
        T1 = max(a["end"] for a in j_atts)
        cuts = marks(T0, T1) + [t for t in (since, until) if t is not None] + [t for iv in excl for t in iv]
        pieces = [
            p
            for p in job_pieces(
                j_atts,
                [s for s in sps if s["job_id"] == job_id],
                cuts,
                phase_order=phase_order,
                component_of=component_of,
            )
            if is_measured(p[0], p[1], since, until, excl)
        ]
        stops = [
            a["end"] for a in j_atts if a["end_reason"] in INTERRUPTIONS and is_counted(a["end"], since, until, excl)
        ]
        yield job, pieces, stops


ROLLING_EVERY: dict[str, int] = {"hour": 3_600_000, "day": 86_400_000}


def reference_rolling(
    jobs: list[dict] | None,
    attempts: list[dict],
    spans: list[dict],
    every: str,
    window_ms: int,
    as_of: int | None = None,
    **measure: Any,
) -> list[dict[str, Any]]:
    """Rolling trend: at the end of each ``every`` bucket (hour or day, UTC), the fleet over the trailing ``window_ms``.

    ``measure``: the keyword arguments of :func:`reference_trend` (``phase_order``, ``component_of``, ``since``,
    ``until``, ``exclusions``).

    One row a bucket from the first to the last that holds measured time or a counted interruption:
    ``bucket_start_ms``, ``window_start_ms = bucket end - window_ms``, ``window_end_ms`` (the bucket's end),
    ``ett_pct``, ``wall_gpu_h``, ``productive_gpu_h``, ``<component>_gpu_h`` and ``nof`` of the measured time
    and counted interruptions in ``[window_start, window_end)``.
    """
    step = ROLLING_EVERY[every]
    if window_ms <= 0 or window_ms % step:
        raise ValueError("window_ms must be a positive multiple of the bucket")
    slots: dict[int, dict[str, float]] = defaultdict(
        lambda: {"wall": 0.0, "productive": 0.0, "nof": 0, **{c: 0.0 for c in ALL_COMPONENTS}}
    )
    for job, pieces, stops in _measured_pieces(
        jobs, attempts, spans, as_of, lambda t0, t1: list(range((t0 // step + 1) * step, t1, step)), **measure
    ):
        for a, b, _bucket, _phase, comp in pieces:
            row = slots[a - a % step]
            gs = job["gpus"] * (b - a) / 1000
            row["wall"] += gs
            row["productive" if comp == PRODUCTIVE else comp] += gs
        for t in stops:
            slots[t - t % step]["nof"] += 1
    if not slots:
        return []
    out = []
    for start in range(min(slots), max(slots) + step, step):
        end = start + step
        inside = [slots[k] for k in slots if end - window_ms <= k < end]
        wall = sum(r["wall"] for r in inside)
        prod = sum(r["productive"] for r in inside)
        row = {
            "bucket_start_ms": start,
            "window_start_ms": end - window_ms,
            "window_end_ms": end,
            "ett_pct": 100 * prod / wall if wall > 0 else None,
            "wall_gpu_h": wall / 3600,
            "productive_gpu_h": prod / 3600,
            "nof": sum(r["nof"] for r in inside),
        }
        for c in ALL_COMPONENTS:
            row[f"{c}_gpu_h"] = sum(r[c] for r in inside) / 3600
        out.append(row)
    return out


def _pace(trains: list[dict], stall_after: float | None) -> tuple[float | None, float]:
    """A job's pace (the median, over its train spans with ``end > start`` and ``cursor_end > cursor_start``, of
    cursor units per second; None when none advanced) and its stall threshold (``stall_after``, else ``max(60, 10 /
    pace)``, 60 without a pace)."""
    import statistics

    rates = [
        (s["cursor_end"] - s["cursor_start"]) / ((s["end"] - s["start"]) / 1000)
        for s in trains
        if s["end"] > s["start"] and s["cursor_end"] > s["cursor_start"]
    ]
    pace = statistics.median(rates) if rates else None
    return pace, stall_after if stall_after is not None else max(60.0, 10.0 / pace if pace else 0.0)


def reference_stalls(
    jobs: list[dict] | None,
    attempts: list[dict],
    spans: list[dict],
    as_of: int | None = None,
    *,
    stall_after: float | None = None,
    since: int | None = None,
    until: int | None = None,
    exclusions: Iterable[dict] = (),
) -> dict[str, dict[str, Any]]:
    """Stalls per listed job (reporting only; no metric figure uses them).

    Pace: the median, over the job's (as-of clipped) train spans with ``end > start`` and ``cursor_end >
    cursor_start``, of cursor units per second.  Stalled time of a train span of ``d`` seconds advancing ``dc``:
    ``d`` when ``dc <= 0`` or the job has no pace, else ``max(0, d - dc / pace)``.  Threshold: ``stall_after``, else
    ``max(60, 10 / pace)`` (60 without a pace).  A stall is a span whose stalled time exceeds the threshold and
    whose start lies in ``[since, until)`` and in no exclusion that applies to the job.  Returns ``{job_id: {"pace",
    "threshold", "stalls": [(start_ms, stalled_s), ...]}}`` for the jobs :func:`reference_metrics` lists.
    """
    exclusions = list(exclusions)
    res = reference_metrics(jobs, attempts, spans, as_of, since=since, until=until, exclusions=exclusions)
    _, sps = clip_to_as_of(attempts, spans, res["as_of"], res["cut"])
    rows = _job_rows(jobs)
    out = {}
    for job_id in res["jobs"]:
        trains = sorted(
            (s for s in sps if s["job_id"] == job_id and s["phase"] == "train"), key=lambda s: (s["start"], s["end"])
        )
        pace, threshold = _pace(trains, stall_after)
        excl = job_exclusions(job_id, rows.get(job_id), exclusions)
        found = []
        for s in trains:
            d = (s["end"] - s["start"]) / 1000
            dc = s["cursor_end"] - s["cursor_start"]
            stalled = d if dc <= 0 or pace is None else max(0.0, d - dc / pace)
            if stalled > threshold and is_counted(s["start"], since, until, excl):
                found.append((s["start"], stalled))
        out[job_id] = {"pace": pace, "threshold": threshold, "stalls": found}
    return out


def reference_live(
    jobs: list[dict] | None,
    attempts: list[dict],
    spans: list[dict],
    as_of: int | None = None,
    *,
    stall_after: float | None = None,
    job_stall_after: dict[str, float] | None = None,
    slow_factor: float = 3.0,
    recent_spans: int = 5,
) -> dict[str, dict[str, Any]]:
    """Live hang detection for the jobs running at the as-of time (reporting only).

    A job is running when one of its (as-of clipped) attempts is ``running``; its current attempt is the latest such.
    Its train spans of that attempt that advanced (``cursor_end > cursor_start``), latest ``end`` first (then latest
    ``start``): the last advance is the largest ``end``, the cursor there the largest ``cursor_end``, the recent step
    time ``sum(end - start) / sum(cursor_end - cursor_start)`` over the first ``recent_spans`` of them.  The median
    step time is ``1 / pace`` (:func:`_pace`, over all the job's train spans), the threshold ``job_stall_after[job]``,
    else :func:`_pace`'s.  The progress age is ``as_of - last advance`` (``as_of - attempt start`` without one).
    State: ``starting`` (no advance in the attempt), ``hung`` (age > threshold), ``slow`` (recent step time >
    ``slow_factor`` x median step time), else ``advancing``.  Returns ``{job_id: {"attempt", "last_advance",
    "cursor", "age", "threshold", "median_step", "recent_step", "state"}}`` (times in ms, durations in s).
    """
    res = reference_metrics(jobs, attempts, spans, as_of)
    atts, sps = clip_to_as_of(attempts, spans, res["as_of"], res["cut"])
    out = {}
    for job_id in res["jobs"]:
        running = [a for a in atts if a["job_id"] == job_id and a["end_reason"] == RUNNING]
        if not running:
            continue
        cur = max(running, key=lambda a: a["attempt"])
        trains = [s for s in sps if s["job_id"] == job_id and s["phase"] == "train"]
        pace, threshold = _pace(trains, stall_after)
        threshold = (job_stall_after or {}).get(job_id, threshold)
        adv = sorted(
            (s for s in trains if s["attempt"] == cur["attempt"] and s["cursor_end"] > s["cursor_start"]),
            key=lambda s: (s["end"], s["start"]),
            reverse=True,
        )
        last = max((s["end"] for s in adv), default=None)
        recent = adv[:recent_spans]
        recent_step = (
            sum((s["end"] - s["start"]) / 1000 for s in recent)
            / sum(s["cursor_end"] - s["cursor_start"] for s in recent)
            if recent
            else None
        )
        median_step = None if pace is None else 1.0 / pace
        age = (res["as_of"] - (cur["start"] if last is None else last)) / 1000
        if last is None:
            state = "starting"
        elif age > threshold:
            state = "hung"
        elif median_step is not None and recent_step > slow_factor * median_step:
            state = "slow"
        else:
            state = "advancing"
        out[job_id] = {
            "attempt": cur["attempt"],
            "last_advance": last,
            "cursor": max((s["cursor_end"] for s in adv), default=None),
            "age": age,
            "threshold": threshold,
            "median_step": median_step,
            "recent_step": recent_step,
            "state": state,
        }
    return out


def _quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` with linear interpolation between ranks (DuckDB's ``quantile_cont``)."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (pos - lo) * (xs[hi] - xs[lo])


def reference_slow(
    jobs: list[dict] | None,
    attempts: list[dict],
    spans: list[dict],
    as_of: int | None = None,
    *,
    tolerance: float = 0.25,
    since: int | None = None,
    until: int | None = None,
    exclusions: Iterable[dict] = (),
) -> dict[str, dict[str, Any]]:
    """Slow time per listed job (docs/metric.md, "Slow time").

    Advancing train spans: the job's (as-of clipped) train spans with ``end > start`` and ``cursor_end >
    cursor_start``; in each attempt the first of them (by start, then end) is warm-up.  Ideal seconds per cursor
    unit: the 10th percentile (linear interpolation) of ``seconds / advance`` over the advancing spans past warm-up,
    when there are at least 5; else none, and no slow time.  A span past warm-up of ``d`` seconds advancing ``dc`` is
    slow when ``d > (1 + tolerance) * dc * ideal``; its slow time is ``(d - dc * ideal) * (e - split) / (e - s)``
    (:func:`replay_splits`: the new-data share), counted when positive and when its start lies in ``[since, until)``
    and in no exclusion that applies to the job.  Returns ``{job_id: {"ideal" (s per unit or None), "slow":
    [(start_ms, slow_s), ...], "slow_s", "slow_gpu_h", "ett_ideal_pct"}}`` for the jobs :func:`reference_metrics`
    lists.
    """
    exclusions = list(exclusions)
    res = reference_metrics(jobs, attempts, spans, as_of, since=since, until=until, exclusions=exclusions)
    _, sps = clip_to_as_of(attempts, spans, res["as_of"], res["cut"])
    rows = _job_rows(jobs)
    out = {}
    for job_id, m in res["jobs"].items():
        trains = sorted(
            (s for s in sps if s["job_id"] == job_id and s["phase"] == "train"), key=lambda s: (s["start"], s["end"])
        )
        share = {(s, e): (e - split) / (e - s) if e > s else 0.0 for s, split, e in replay_splits(trains)}
        seen: set[Any] = set()
        judged = []
        for s in trains:
            if s["end"] > s["start"] and s["cursor_end"] > s["cursor_start"]:
                if s["attempt"] in seen:
                    judged.append(s)
                seen.add(s["attempt"])
        rates = [((s["end"] - s["start"]) / 1000) / (s["cursor_end"] - s["cursor_start"]) for s in judged]
        ideal = _quantile(rates, 0.1) if len(rates) >= 5 else None
        excl = job_exclusions(job_id, rows.get(job_id), exclusions)
        found = []
        for s in judged if ideal is not None else []:
            d = (s["end"] - s["start"]) / 1000
            ideal_s = (s["cursor_end"] - s["cursor_start"]) * ideal
            slow = (d - ideal_s) * share[(s["start"], s["end"])]
            if d > (1 + tolerance) * ideal_s and slow > 0 and is_counted(s["start"], since, until, excl):
                found.append((s["start"], slow))
        slow_s = sum(v for _, v in found)
        wall = m["wall"] if "wall" in m else m["wall_s"]
        prod = m["productive"] if "productive" in m else m["productive_s"]
        out[job_id] = {
            "ideal": ideal,
            "slow": found,
            "slow_s": slow_s,
            "slow_gpu_h": m["gpus"] * slow_s / 3600,
            "ett_ideal_pct": 100 * max(0.0, prod - slow_s) / wall if wall > 0 else None,
        }
    return out


def reference_group_slow(result: dict[str, Any], slow: dict[str, dict[str, Any]], by: str | None = None) -> list[dict]:
    """Slow time per group (``by=None``: the fleet) of :func:`reference_metrics`'s jobs, from :func:`reference_slow`:
    ``key, jobs, slow_spans, slow_gpu_h, ett_pct, ett_ideal_pct = 100 * sum(gpus * max(0, productive_s - slow_s)) /
    sum(gpus * wall_s)``, sorted by key as :func:`reference_fleet`."""
    rows = []
    for key, js in grouped_jobs(result, by):
        wall_g = sum(j["gpus"] * j["wall_s"] for j in js)
        ideal_g = sum(j["gpus"] * max(0.0, j["productive_s"] - slow[j["job_id"]]["slow_s"]) for j in js)
        rows.append(
            {
                "key": key,
                "jobs": len(js),
                "slow_spans": sum(len(slow[j["job_id"]]["slow"]) for j in js),
                "slow_gpu_h": sum(slow[j["job_id"]]["slow_gpu_h"] for j in js),
                "ett_pct": 100 * sum(j["gpus"] * j["productive_s"] for j in js) / wall_g if wall_g > 0 else None,
                "ett_ideal_pct": 100 * ideal_g / wall_g if wall_g > 0 else None,
            }
        )
    return rows


def _clipped(attempts: list[dict], spans: list[dict], as_of: int | None) -> tuple[list[dict], list[dict]]:
    """The attempts and spans clipped to the as-of time as :func:`reference_metrics` clips them (the given one, else
    :func:`default_as_of`, which cuts nothing recorded)."""
    eff = as_of if as_of is not None else default_as_of(attempts, spans)
    cut = as_of if as_of is not None else (None if eff is None else eff + 1)
    return clip_to_as_of(attempts, spans, eff, cut)


def reference_crash_loops(
    jobs: list[dict] | None, attempts: list[dict], spans: list[dict], as_of: int | None = None
) -> list[dict[str, Any]]:
    """Crash loops (docs/metric.md "Crash loops") of each job's (as-of clipped) attempts, in attempt order.

    An attempt's point is the ``cursor_start`` of its first train span (by start, then cursor; None without one); it
    crashed when it interrupted its job with a cause in :data:`CRASH_CAUSES`.  Attempt ``i`` *repeats* when, with
    ``k`` the last attempt before it that has a point, every attempt from ``k`` to ``i`` crashed, and either ``i`` has
    a point equal to ``k``'s, or ``i`` has none and ``k`` repeats or the first attempt after ``i`` that has a point
    repeats.  Each maximal run of repeating attempts, with the attempt before the run, is a loop: ``{"job_id",
    "first_attempt", "last_attempt", "restarts" (the run's length), "resume_cursor" (the first attempt's point),
    "began" (the first attempt's end, ms), "last_crash" (the last attempt's end, ms), "gpu_h" (the job's GPUs times
    the run's attempts' ``end - start``, in hours), "restarted" (each restart's start, ms, and the GPU-milliseconds
    it held)}``, in job id then attempt order.
    """
    atts, sps = _clipped(attempts, spans, as_of)
    rows = _job_rows(jobs)
    out: list[dict[str, Any]] = []
    for job_id in sorted({a["job_id"] for a in atts}):
        gpus = int(rows.get(job_id, {}).get("gpus") or 1)
        mine = sorted((a for a in atts if a["job_id"] == job_id), key=lambda a: a["attempt"])
        points: list[float | None] = []
        for a in mine:
            trains = sorted(
                (s for s in sps if s["job_id"] == job_id and s["attempt"] == a["attempt"] and s["phase"] == "train"),
                key=lambda s: (s["start"], s["cursor_start"]),
            )
            points.append(float(trains[0]["cursor_start"]) if trains else None)
        crashed = [attempt_cause(a) in CRASH_CAUSES for a in mine]
        n = len(mine)

        def before(i: int) -> int | None:
            return next((k for k in range(i - 1, -1, -1) if points[k] is not None), None)

        def after(i: int) -> int | None:
            return next((t for t in range(i + 1, n) if points[t] is not None), None)

        def trained_repeats(i: int) -> bool:
            k = before(i)
            return k is not None and all(crashed[k : i + 1]) and points[i] == points[k]

        def repeats(i: int) -> bool:
            if points[i] is not None:
                return trained_repeats(i)
            k, t = before(i), after(i)
            if k is None or not all(crashed[k : i + 1]):
                return False
            return trained_repeats(k) or (t is not None and trained_repeats(t))

        flags = [repeats(i) for i in range(n)]
        i = 0
        while i < n:
            if not flags[i]:
                i += 1
                continue
            j = i
            while j + 1 < n and flags[j + 1]:
                j += 1
            first, run = mine[i - 1], mine[i : j + 1]
            out.append(
                {
                    "job_id": job_id,
                    "first_attempt": first["attempt"],
                    "last_attempt": mine[j]["attempt"],
                    "restarts": len(run),
                    "resume_cursor": points[i - 1],
                    "began": first["end"],
                    "last_crash": mine[j]["end"],
                    "gpu_h": gpus * sum(a["end"] - a["start"] for a in run) / 3_600_000,
                    "restarted": [(a["start"], gpus * (a["end"] - a["start"])) for a in run],
                }
            )
            i = j + 1
    return out


def reference_crash_loop_trend(
    loops: list[dict[str, Any]], every: str = "day", every_ms: int | None = None, window_ms: int | None = None
) -> dict[Any, tuple[int, float]]:
    """Crash loops per trend bucket (docs/metric.md "Crash loops", "In a trend"): bucket -> (restarts, GPU-hours) of
    the restarts of ``loops`` (:func:`reference_crash_loops`) that start in it, each counted whole.  Calendar buckets
    (``every`` day, week or month, UTC; a bucket is its first day, a week starts on Monday) without ``window_ms``;
    with it, buckets of ``every_ms`` (keyed by their start, ms) whose trailing window ``[end - window_ms, end)``
    holds the start.  Only buckets with a restart."""
    out: dict[Any, tuple[int, float]] = {}
    for loop in loops:
        for start, gpu_ms in loop["restarted"]:
            if window_ms is None:
                day = datetime.fromtimestamp(start / 1000, tz=timezone.utc).date()
                keys = [{"day": day, "week": day - timedelta(days=day.weekday()), "month": day.replace(day=1)}[every]]
            else:
                assert every_ms is not None
                keys = [
                    b
                    for b in range(start - start % every_ms - window_ms, start + window_ms + every_ms, every_ms)
                    if b + every_ms - window_ms <= start < b + every_ms
                ]
            for key in keys:
                n, gpu_h = out.get(key, (0, 0.0))
                out[key] = (n + 1, gpu_h + gpu_ms / 3_600_000)
    return out


def reference_open_crash_loops(
    jobs: list[dict] | None, attempts: list[dict], spans: list[dict], as_of: int | None = None
) -> list[dict[str, Any]]:
    """The crash loops a job is in now (docs/metric.md "Crash loops"): :func:`reference_crash_loops`' loops whose last
    attempt is the last of the job's (as-of clipped) attempts that ended (not ``RUNNING``), in the same order."""
    atts, _ = _clipped(attempts, spans, as_of)
    last_ended: dict[str, int] = {}
    for a in atts:
        if a["end_reason"] != RUNNING:
            last_ended[a["job_id"]] = max(a["attempt"], last_ended.get(a["job_id"], a["attempt"]))
    loops = reference_crash_loops(jobs, attempts, spans, as_of)
    return [lp for lp in loops if last_ended.get(lp["job_id"]) == lp["last_attempt"]]


def reference_retry_chains(
    jobs: list[dict] | None, attempts: list[dict], spans: list[dict], as_of: int | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Retry chains (docs/metric.md "Retry chains") of the (as-of clipped) attempts: ``(per_job, fleet)``.

    Per job (attempts in attempt order): ``attempts``; ``interruptions`` (ended by an interrupting end reason);
    ``waits`` (ms from each interruption to the next attempt's start, for the interruptions an attempt follows);
    ``restarts`` = their number; ``outcome`` = ``interrupted`` / ``cancelled`` / ``running`` / ``completed`` by the last
    attempt's end reason; ``restart_wait_s`` (their sum) and ``median_restart_wait_s`` (their median; None without
    one).  The fleet: ``retried_jobs`` (with an interruption), ``retried_ended`` (of those, not running),
    ``retried_completed``, ``retry_completion_pct`` (100 * completed / ended; None when none ended), ``restarts`` and
    ``median_restart_wait_s`` over every wait of every job.
    """
    import statistics

    atts, _ = _clipped(attempts, spans, as_of)
    per_job: dict[str, dict[str, Any]] = {}
    every_wait: list[int] = []
    for job_id in sorted({a["job_id"] for a in atts}):
        mine = sorted((a for a in atts if a["job_id"] == job_id), key=lambda a: a["attempt"])
        waits = [b["start"] - a["end"] for a, b in zip(mine, mine[1:]) if a["end_reason"] in INTERRUPTIONS]
        last = mine[-1]["end_reason"]
        outcome = "interrupted" if last in INTERRUPTIONS else last  # completed, cancelled or running
        per_job[job_id] = {
            "attempts": len(mine),
            "interruptions": sum(a["end_reason"] in INTERRUPTIONS for a in mine),
            "restarts": len(waits),
            "outcome": outcome,
            "restart_wait_s": sum(waits) / 1000,
            "median_restart_wait_s": statistics.median(waits) / 1000 if waits else None,
        }
        every_wait += waits
    retried = [j for j in per_job.values() if j["interruptions"] > 0]
    ended = [j for j in retried if j["outcome"] != RUNNING]
    completed = [j for j in ended if j["outcome"] == COMPLETED]
    fleet = {
        "retried_jobs": len(retried),
        "retried_ended": len(ended),
        "retried_completed": len(completed),
        "retry_completion_pct": 100 * len(completed) / len(ended) if ended else None,
        "restarts": len(every_wait),
        "median_restart_wait_s": statistics.median(every_wait) / 1000 if every_wait else None,
    }
    return per_job, fleet


def reference_storms(
    jobs: list[dict] | None,
    attempts: list[dict],
    spans: list[dict],
    n: int,
    window_ms: int,
    by: str | None = None,
    as_of: int | None = None,
) -> list[dict[str, Any]]:
    """Restart storms (docs/metric.md "Restart storms"): per group of ``by`` (``None``: the fleet), the interruption
    instants (as-of clipped attempts ended by an interrupting end reason); ``t`` is dense when ``[t, t + window_ms)``
    holds at least ``n`` of them, and its window runs to the last one there.  Overlapping (or touching) windows
    merge; each merged window ``[first, last]`` is a storm: ``{"group", "first", "last", "interruptions" (instants in
    it), "jobs" (distinct jobs among them)}``, by group then first."""
    atts, _ = _clipped(attempts, spans, as_of)
    rows = _job_rows(jobs)
    groups: dict[Any, list[tuple[int, str]]] = defaultdict(list)
    for a in atts:
        if a["end_reason"] in INTERRUPTIONS:
            value = job_row(a["job_id"], rows.get(a["job_id"])).get(by) if by else "fleet"
            key = None if value is None else str(value)  # the SQL groups by the column as text
            groups[key].append((a["end"], a["job_id"]))
    out = []
    for key in sorted(groups, key=str):
        times = sorted(groups[key])
        windows = []
        for t, _ in times:
            inside = [u for u, _ in times if t <= u < t + window_ms]
            if len(inside) >= n:
                windows.append([t, max(inside)])
        windows.sort()
        merged: list[list[int]] = []
        for w in windows:
            if merged and w[0] <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], w[1])
            else:
                merged.append(list(w))
        for lo, hi in merged:
            hit = [(t, j) for t, j in times if lo <= t <= hi]
            out.append(
                {"group": key, "first": lo, "last": hi, "interruptions": len(hit), "jobs": len({j for _, j in hit})}
            )
    return out
