"""Synthetic traces from a scenario: vectorized, seeded, partitioned.

:func:`generate` turns a :class:`~ettcore.synthetic.scenario.Scenario`, a job count and a
seed into a trace folder (``jobs``, ``attempts``, ``spans`` + ``trace.json``
with ``"synthetic": true``).  The same scenario, job count and seed give the
same bytes: jobs are drawn in fixed-size chunks, chunk ``c`` from its own
random stream ``SeedSequence([seed, c])``, so a chunk never depends on how the
work is split between runs.  One chunk is written as single files; more
chunks as ``<table>/part-NNNNN.parquet`` folders.

The job model (all times are whole milliseconds, so sums are exact):

* A job has ``P`` of new-data training ("progress").  Interruptions strike at
  progress positions ``x_1 <= x_2 <= ...``: induced ones at fixed minutes,
  random ones as a Poisson process in progress time (``per_day`` per day of
  training), positions uniform on ``(0, P)``.  Interruptions strike during
  training only (not during start-up); this is an assumption.
* Attempt ``k`` runs the start-up DAG (the critical path ``S_k`` is the latest
  step end), then trains from the last checkpoint ``a_k``
  to ``e_k = x_k`` (``P`` for the last attempt), where ``a_k`` is the last
  multiple of ``I`` strictly below ``x_{k-1}``.  Progress from ``a_k`` to
  ``x_{k-1}`` is replay.  Training runs at one progress-second per second; a
  checkpoint is saved (blocking ``b``) at every multiple of the interval ``I``
  strictly inside ``(a_k, e_k)``, so every multiple is saved exactly once.
* An interrupted attempt ends ``hang`` after its last train span (nothing
  recorded: unattributed), and the next starts ``requeue`` later.  The last
  attempt ends with ``shutdown`` then ``publish`` spans.
* Time-boxed jobs (``wall_budget_min``) solve for ``P`` so that the wall time
  equals the budget: with ``R`` the budget left for the last attempt's loop,
  ``P + b * ceil(P/I - 1) = R`` gives ``k = ceil(R / (I + b))`` and
  ``P = min(R - b (k - 1), k I)``.
* The cursor is ``progress_seconds * cursor_rate`` (examples).

Cost (measured on a 2-core machine): the fleet scenario writes about 10,000
jobs (450,000 spans) a second; 1,000,000 jobs (45 M spans, 336 MB of Parquet)
took 3 min with a peak of 0.84 GB.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
import polars as pl

from ettcore.atomic import atomic_path
from ettcore.errors import InputError, Problem
from ettcore.phases import default_phase_map
from ettcore.synthetic.scenario import END_REASONS, Profile, Scenario, load_scenario
from ettcore.vocabulary import VOCABULARY

CHUNK_JOBS = 50_000
MIN_MS = 60_000
DAY_MS = 86_400_000
CALIBRATED_TO = "published aggregates of arXiv 2610.02057"
_REASONS = (*END_REASONS, *VOCABULARY.role("completion"))  # an attempt's end reason by its code
_COMPLETED = len(END_REASONS)  # the code of a job's last attempt: completed


def _ms(minutes: np.ndarray) -> np.ndarray:
    return np.rint(np.asarray(minutes, dtype=np.float64) * MIN_MS).astype(np.int64)


def _within(group: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Position of each row inside its group, for rows laid out group after group."""
    starts = np.cumsum(sizes) - sizes
    return np.arange(len(group), dtype=np.int64) - np.repeat(starts, sizes)


_Code = Callable[[str | None], int]  # a string's code in the group's vocabulary (extending it)


@dataclass
class _Jobs:
    """The per-job draws of one group (checkpoint interval and blocking in ms, cursor rate, budget, progress)."""

    interval: np.ndarray
    block: np.ndarray
    rate: np.ndarray
    budget: np.ndarray | None  # wall budget (ms) of time-boxed jobs
    progress: np.ndarray | None  # new-data training (ms), unless solved from the budget


def _draw_jobs(prof: Profile, rng: np.random.Generator, n: int) -> _Jobs:
    """Draw stage 1: each job's checkpoint interval and blocking, cursor rate, wall budget and progress."""
    interval = np.maximum(_ms(prof.ckpt_interval_min.sample(rng, n)), 1000)
    block = _ms(prof.ckpt_blocking_min.sample(rng, n))
    rate = prof.cursor_rate.sample(rng, n)
    budget = _ms(prof.wall_budget_min.sample(rng, n)) if prof.wall_budget_min is not None else None
    progress = np.maximum(_ms(prof.train_min.sample(rng, n)), MIN_MS) if prof.train_min is not None else None
    return _Jobs(interval, block, rate, budget, progress)


@dataclass
class _Interruptions:
    """The interruptions of a group's jobs, job after job in progress order (at most ``max_interruptions`` each)."""

    pos: np.ndarray  # progress position (ms)
    reason: np.ndarray  # end reason code (index into END_REASONS)
    kind: np.ndarray  # failure kind code (vocab)
    count: np.ndarray  # per job
    offset: np.ndarray  # per job: index of its first interruption


def _draw_interruptions(
    prof: Profile, rng: np.random.Generator, n: int, progress: np.ndarray | None, code: _Code
) -> _Interruptions:
    """Draw stage 2: induced interruptions at fixed minutes, random ones as a Poisson process in progress time."""
    ij, ipos, irsn, ikind = [], [], [], []
    for e in prof.induced:
        pos = np.full(n, int(round(e.at_min * MIN_MS)), dtype=np.int64)
        keep = np.ones(n, bool) if progress is None else pos < progress
        ij.append(np.flatnonzero(keep)), ipos.append(pos[keep])
        (
            irsn.append(np.full(keep.sum(), END_REASONS.index(e.end_reason), np.int8)),
            ikind.append(np.full(keep.sum(), code(e.failure_kind), np.int32)),
        )
    for e in prof.random:
        lam = e.per_day.sample(rng, n) * progress / DAY_MS
        cnt = rng.poisson(lam)
        jj = np.repeat(np.arange(n), cnt)
        ij.append(jj), ipos.append(1 + (rng.random(len(jj)) * (progress[jj] - 1)).astype(np.int64))
        (
            irsn.append(np.full(len(jj), END_REASONS.index(e.end_reason), np.int8)),
            ikind.append(np.full(len(jj), code(e.failure_kind), np.int32)),
        )
    ij = np.concatenate(ij) if ij else np.zeros(0, np.int64)
    ipos = np.concatenate(ipos) if ipos else np.zeros(0, np.int64)
    irsn = np.concatenate(irsn) if irsn else np.zeros(0, np.int8)
    ikind = np.concatenate(ikind) if ikind else np.zeros(0, np.int32)
    order = np.lexsort((ipos, ij))
    ij, ipos, irsn, ikind = ij[order], ipos[order], irsn[order], ikind[order]
    nint = np.bincount(ij, minlength=n)
    keep = _within(ij, nint) < prof.max_interruptions
    nint = np.minimum(nint, prof.max_interruptions)
    return _Interruptions(ipos[keep], irsn[keep], ikind[keep], nint, np.cumsum(nint) - nint)


@dataclass
class _Attempts:
    """The attempts of a group: one more than each job's interruptions, job after job."""

    job: np.ndarray  # job index (local to the group)
    k: np.ndarray  # attempt number
    last: np.ndarray  # the job's last attempt
    natt: np.ndarray  # per job: number of attempts
    interval: np.ndarray  # the job's checkpoint interval and blocking, per attempt
    block: np.ndarray
    resume: np.ndarray  # progress the attempt resumes from: the last checkpoint strictly below the high-water mark
    cur: np.ndarray  # index of the interruption that ends it (0 for the last attempt)
    reason: np.ndarray  # end reason code (_COMPLETED for the last attempt)
    kind: np.ndarray  # failure kind code (0 for the last attempt)


def _lay_out_attempts(jobs: _Jobs, ints: _Interruptions, n: int) -> _Attempts:
    """Attempt layout (no draws): where each attempt resumes and what ends it."""
    natt = ints.count + 1
    aj = np.repeat(np.arange(n), natt)
    ak = _within(aj, natt)
    last = ak == ints.count[aj]
    interval, block = jobs.interval[aj], jobs.block[aj]
    prev = np.where(ak > 0, ints.offset[aj] + ak - 1, 0)
    high = np.where(ak > 0, ints.pos[prev] if len(ints.pos) else 0, 0)
    resume = np.where(high > 0, ((high - 1) // interval) * interval, 0)
    cur = np.where(~last, ints.offset[aj] + ak, 0)
    rsn = np.where(last, _COMPLETED, ints.reason[cur] if len(ints.reason) else _COMPLETED).astype(np.int8)
    kind = np.where(last, 0, ints.kind[cur] if len(ints.kind) else 0).astype(np.int32)
    return _Attempts(aj, ak, last, natt, interval, block, resume, cur, rsn, kind)


def _draw_startup(prof: Profile, rng: np.random.Generator, ak: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """Draw stage 3: the start-up DAG, one step at a time (vectorized over attempts; first attempts draw ``first``,
    restarts ``restart``).  Returns (each attempt's start-up critical path, (step, start, end, ran) per step)."""
    na = len(ak)
    first_mask = ak == 0
    n_first, n_rest = int(first_mask.sum()), int(na - first_mask.sum())
    ends, steps_out = [], []
    for s in prof.steps:
        dur = np.zeros(na, np.int64)
        ran = np.zeros(na, bool)
        if s.first is not None:
            dur[first_mask] = _ms(s.first.sample(rng, n_first))
            ran |= first_mask
        if s.restart is not None:
            dur[~first_mask] = _ms(s.restart.sample(rng, n_rest))
            ran |= ~first_mask
        ran &= dur > 0
        dur = np.where(ran, dur, 0)
        st = np.zeros(na, np.int64)
        for p in s.after:
            st = np.maximum(st, ends[p])
        ends.append(st + dur)
        steps_out.append((s, st, st + dur, ran))
    startup = np.max(np.stack(ends), axis=0) if ends else np.zeros(na, np.int64)
    return startup, steps_out


class _Recovery(NamedTuple):
    """Per attempt (ms): the hang and re-queue gap after an interruption, the last attempt's shutdown and publish."""

    hang: np.ndarray
    gap: np.ndarray
    shut: np.ndarray
    pub: np.ndarray


def _draw_recovery_and_tail(prof: Profile, rng: np.random.Generator, att: _Attempts) -> _Recovery:
    """Draw stage 4: (hang, re-queue gap) of interrupted attempts by end reason, (shutdown, publish) of last ones."""
    na = len(att.k)
    hang = np.zeros(na, np.int64)
    gap = np.zeros(na, np.int64)
    for rc, er in enumerate(END_REASONS):
        m = (att.reason == rc) & ~att.last
        hang[m] = _ms(prof.hang_min[er].sample(rng, int(m.sum())))
        gap[m] = _ms(prof.requeue_min[er].sample(rng, int(m.sum())))
    shut = np.where(att.last, _ms(prof.shutdown_min.sample(rng, na)), 0)
    pub = np.where(att.last, _ms(prof.publish_min.sample(rng, na)), 0)
    return _Recovery(hang, gap, shut, pub)


def _progress_from_budget(
    jobs: _Jobs, ints: _Interruptions, att: _Attempts, fixed_ms: np.ndarray, n: int, where: str
) -> np.ndarray:
    """Time-boxed jobs (no draws): the progress ``P`` that makes the wall time equal the budget, given everything
    but the last attempt's loop (``fixed_ms``, per attempt; see the module docstring)."""
    e_nl = np.where(att.last, 0, ints.pos[att.cur] if len(ints.pos) else 0)
    a, ivl, b = att.resume, att.interval, att.block
    loop_nl = np.where(att.last, 0, (e_nl - a) + b * np.maximum(0, (e_nl - 1) // ivl - a // ivl))
    fixed = np.bincount(att.job, weights=fixed_ms + loop_nl, minlength=n).astype(np.int64)
    Il, bl, al = jobs.interval, jobs.block, a[np.flatnonzero(att.last)]
    R = jobs.budget - fixed + al + bl * (al // Il)
    k = np.maximum(1, -(-R // (Il + bl)))
    progress = np.minimum(R - bl * (k - 1), k * Il)
    x_last = np.where(ints.count > 0, ints.pos[ints.offset + ints.count - 1] if len(ints.pos) else 0, 0)
    bad = progress <= np.maximum(x_last, MIN_MS - 1)
    if bad.any():
        raise InputError(
            Problem(
                where,
                None,
                "wall_budget_min",
                "the wall budget leaves no training after start-up, recovery and shutdown "
                f"(or ends before an induced interruption); {int(bad.sum())} job(s)",
            )
        )
    return progress


class _SpanColumns:
    """Span columns, added a kind of span at a time: attempt index, phase and stage codes, start, end, cursors."""

    def __init__(self) -> None:
        self.att: list[np.ndarray] = []
        self.phase: list[np.ndarray] = []
        self.stage: list[np.ndarray] = []
        self.start: list[np.ndarray] = []
        self.end: list[np.ndarray] = []
        self.c0: list[np.ndarray] = []
        self.c1: list[np.ndarray] = []

    def add(
        self,
        idx: np.ndarray,
        phase: int,
        stage: int,
        start: np.ndarray,
        end: np.ndarray,
        c0: np.ndarray | None = None,
        c1: np.ndarray | None = None,
    ) -> None:
        """Spans of attempts ``idx``; cursors NaN unless given."""
        self.att.append(idx)
        self.phase.append(np.full(len(idx), phase, np.int32))
        self.stage.append(np.full(len(idx), stage, np.int32))
        self.start.append(start)
        self.end.append(end)
        self.c0.append(np.full(len(idx), np.nan) if c0 is None else c0)
        self.c1.append(np.full(len(idx), np.nan) if c1 is None else c1)


def _train_and_checkpoint_spans(
    cols: _SpanColumns, att: _Attempts, e: np.ndarray, nsave: np.ndarray, at: np.ndarray, rate: np.ndarray, code: _Code
) -> None:
    """Spans (no draws): each attempt's train segments from its resume point to ``e``, with a blocking checkpoint
    save after every segment but the last (``at``: where the attempt's training starts)."""
    nseg = nsave + 1
    ta = np.repeat(np.arange(len(att.k)), nseg)
    tj = _within(ta, nseg)
    ivl, b, a = att.interval[ta], att.block[ta], att.resume[ta]
    m0 = a // ivl
    p0 = np.where(tj == 0, a, (m0 + tj) * ivl)
    p1 = np.where(tj < nsave[ta], (m0 + tj + 1) * ivl, e[ta])
    t0 = at[ta] + (p0 - a) + tj * b
    t1 = t0 + (p1 - p0)
    r = rate[att.job[ta]] / 1000.0
    cols.add(ta, code("train"), 0, t0, t1, p0 * r, p1 * r)
    sv = np.flatnonzero((tj < nsave[ta]) & (b > 0))
    cols.add(ta[sv], code("checkpoint_save"), 0, t1[sv], t1[sv] + b[sv])


@dataclass
class _Times:
    """Per attempt (ms): the progress it trains to, its checkpoint saves, its loop (training and saves), its start
    and its length (without the re-queue gap after it)."""

    e: np.ndarray
    nsave: np.ndarray
    loop: np.ndarray
    start: np.ndarray
    dur: np.ndarray


def _attempt_times(
    att: _Attempts,
    ints: _Interruptions,
    progress: np.ndarray,
    startup: np.ndarray,
    rec: _Recovery,
    job_start_ms: np.ndarray,
) -> _Times:
    """Attempt times (no draws): start-up, the training loop with its checkpoint saves, then the tail (last attempt)
    or the hang; attempts of a job follow one another with the re-queue gap between them."""
    last, ivl, a = att.last, att.interval, att.resume
    e = np.where(last, progress[att.job], ints.pos[att.cur] if len(ints.pos) else 0)
    nsave = np.maximum(0, (e - 1) // ivl - a // ivl)
    loop = (e - a) + att.block * nsave
    dur = startup + loop + np.where(last, rec.shut + rec.pub, rec.hang)
    seg = dur + np.where(last, 0, rec.gap)
    cs = np.cumsum(seg) - seg
    cs -= np.repeat(cs[np.cumsum(att.natt) - att.natt], att.natt)
    return _Times(e, nsave, loop, job_start_ms[att.job] + cs, dur)


def _spans(
    att: _Attempts,
    t: _Times,
    startup: np.ndarray,
    steps_out: list[tuple],
    rec: _Recovery,
    rate: np.ndarray,
    code: _Code,
) -> _SpanColumns:
    """Spans (no draws), in this order: the start-up steps, train segments and checkpoint saves, shutdown and
    publish (codes are given to phases and stages in that order)."""
    cols = _SpanColumns()
    for s, st, en, ran in steps_out:
        idx = np.flatnonzero(ran)
        cols.add(idx, code(s.phase), code(s.stage), t.start[idx] + st[idx], t.start[idx] + en[idx])
    _train_and_checkpoint_spans(cols, att, t.e, t.nsave, t.start + startup, rate, code)
    tail0 = t.start + startup + t.loop
    for ph, d, off in (("shutdown", rec.shut, np.zeros(len(att.k), np.int64)), ("publish", rec.pub, rec.shut)):
        idx = np.flatnonzero(att.last & (d > 0))
        cols.add(idx, code(ph), 0, tail0[idx] + off[idx], tail0[idx] + off[idx] + d[idx])
    return cols


def _draw_group(
    prof: Profile, rng: np.random.Generator, n: int, job_start_ms: np.ndarray, where: str, vocab: dict[str | None, int]
) -> dict:
    """Draw ``n`` jobs of one profile.  Returns attempt and span columns (job index local to the group).

    Strings (phase, stage, failure kind) come back as codes into ``vocab`` (extended here; code 0 is null).  The
    stages draw from ``rng`` in a fixed order (the order fixes the bytes): the jobs (:func:`_draw_jobs`), their
    interruptions (:func:`_draw_interruptions`), the attempts' start-up (:func:`_draw_startup`), recovery and tail
    (:func:`_draw_recovery_and_tail`); then, with no draws, the attempts' times (:func:`_attempt_times`) and their
    spans (:func:`_spans`).
    """
    code = lambda s: vocab.setdefault(s, len(vocab))  # noqa: E731
    jobs = _draw_jobs(prof, rng, n)
    ints = _draw_interruptions(prof, rng, n, jobs.progress, code)
    att = _lay_out_attempts(jobs, ints, n)
    startup, steps_out = _draw_startup(prof, rng, att.k)
    rec = _draw_recovery_and_tail(prof, rng, att)
    progress = jobs.progress
    if jobs.budget is not None:
        fixed_ms = startup + rec.hang + rec.gap + rec.shut + rec.pub
        progress = _progress_from_budget(jobs, ints, att, fixed_ms, n, where)
    t = _attempt_times(att, ints, progress, startup, rec, job_start_ms)
    cols = _spans(att, t, startup, steps_out, rec, jobs.rate, code)
    span_att = np.concatenate(cols.att)
    return {
        "att_job": att.job,
        "att_k": att.k,
        "att_start": t.start,
        "att_end": t.start + t.dur,
        "att_reason": att.reason,
        "att_kind": att.kind,
        "span_job": att.job[span_att],
        "span_k": att.k[span_att],
        "span_phase": np.concatenate(cols.phase),
        "span_stage": np.concatenate(cols.stage),
        "span_start": np.concatenate(cols.start),
        "span_end": np.concatenate(cols.end),
        "span_c0": np.concatenate(cols.c0),
        "span_c1": np.concatenate(cols.c1),
    }


def _cohort_of_jobs(sc: Scenario, n_jobs: int, seed: int) -> np.ndarray:
    """Cohort index of every job: counts proportional to weight (largest remainder), order listed or shuffled."""
    w = np.array([c.weight for c in sc.cohorts])
    exact = w / w.sum() * n_jobs
    cnt = np.floor(exact).astype(np.int64)
    short = n_jobs - cnt.sum()
    cnt[np.argsort(-(exact - cnt), kind="stable")[:short]] += 1
    if sc.assignment == "listed":
        # Round-robin over cohorts, so job i < len(cohorts) is cohort i when counts allow.
        order = np.concatenate([np.arange(k) for k in cnt])
        cohort = np.repeat(np.arange(len(cnt)), cnt)
        return cohort[np.lexsort((cohort, order))]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5EED, 1]))
    return rng.permutation(np.repeat(np.arange(len(cnt)), cnt))


def _model_gpus(sc: Scenario, seed: int) -> list[np.ndarray]:
    """GPUs of each model of each cohort, drawn once per model (rounded to a multiple of 8 from 8 up)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5EED, 2]))
    out = []
    for c in sc.cohorts:
        g = np.maximum(1, np.rint(c.gpus.sample(rng, c.models))).astype(np.int64)
        out.append(np.where(g >= 8, np.rint(g / 8) * 8, g).astype(np.int64))
    return out


def _job_ids(sc: Scenario, idx: np.ndarray | pl.Series, width: int) -> pl.Expr:
    return pl.lit(f"{sc.name}-") + pl.Series(idx).cast(pl.String).str.zfill(width)


def generate_chunk(
    sc: Scenario,
    n_jobs: int,
    seed: int,
    chunk: int,
    chunk_jobs: int = CHUNK_JOBS,
    cohorts: np.ndarray | None = None,
    gpus_table: list[np.ndarray] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The ``jobs``, ``attempts`` and ``spans`` frames of jobs ``[chunk*chunk_jobs, ...)``."""
    cohorts = _cohort_of_jobs(sc, n_jobs, seed) if cohorts is None else cohorts
    gpus_table = _model_gpus(sc, seed) if gpus_table is None else gpus_table
    j0, j1 = chunk * chunk_jobs, min(n_jobs, (chunk + 1) * chunk_jobs)
    gidx = np.arange(j0, j1, dtype=np.int64)
    n = len(gidx)
    coh = cohorts[j0:j1]
    rng = np.random.default_rng(np.random.SeedSequence([seed, chunk]))
    t0 = int(sc.start.timestamp() * 1000)
    if sc.arrival_kind == "sequential":
        start = t0 + _ms(gidx * sc.spacing_min)
    else:
        start = t0 + (rng.random(n) * sc.window_days * DAY_MS).astype(np.int64)
    model_k = np.zeros(n, np.int64)
    gpus = np.zeros(n, np.int64)
    for ci, c in enumerate(sc.cohorts):
        m = coh == ci
        model_k[m] = rng.integers(0, c.models, int(m.sum()))
        gpus[m] = gpus_table[ci][model_k[m]]
    # Active changes per job, as a bit mask.
    mask = np.zeros(n, np.int64)
    for i, ch in enumerate(sc.changes):
        on = np.zeros(n, bool)
        for cname, d in ch.starts.items():
            ci = [c.name for c in sc.cohorts].index(cname)
            on |= (coh == ci) & (start >= int(d.timestamp() * 1000))
        if ch.until is not None:
            on &= start < int(ch.until.timestamp() * 1000)
        mask |= on.astype(np.int64) << i

    parts = []
    vocab: dict[str | None, int] = {None: 0}
    key = coh.astype(np.int64) * (1 << len(sc.changes)) + mask
    for kv in np.unique(key):
        sel = np.flatnonzero(key == kv)
        ci, mk = int(kv >> len(sc.changes)), int(kv & ((1 << len(sc.changes)) - 1))
        active = tuple(i for i in range(len(sc.changes)) if mk >> i & 1)
        out = _draw_group(sc.profile(ci, active), rng, len(sel), start[sel], str(sc.path), vocab)
        parts.append((sel, out))

    width = max(5, len(str(n_jobs - 1)))
    cat = lambda k: np.concatenate([o[k] for _, o in parts])  # noqa: E731
    att_job = np.concatenate([sel[o["att_job"]] for sel, o in parts])
    span_job = np.concatenate([sel[o["span_job"]] for sel, o in parts])
    words = pl.Series([w for w, _ in sorted(vocab.items(), key=lambda kv: kv[1])], dtype=pl.String)
    to_dt = lambda x: pl.Series(x, dtype=pl.Int64).cast(pl.Datetime("ms")).dt.replace_time_zone("UTC")  # noqa: E731

    attempts = pl.DataFrame(
        {
            "j": att_job + j0,
            "attempt": cat("att_k").astype(np.int32),
            "start": to_dt(cat("att_start")),
            "end": to_dt(cat("att_end")),
            "end_reason": pl.Series(np.array(_REASONS, object)[cat("att_reason")], dtype=pl.String),
            "failure_kind": words.gather(pl.Series(cat("att_kind"))),
        }
    ).sort("j", "attempt")
    order = {p: i for i, p in enumerate(default_phase_map().phases)}
    spans = pl.DataFrame(
        {
            "j": span_job + j0,
            "attempt": cat("span_k").astype(np.int32),
            "phase": words.gather(pl.Series(cat("span_phase"))),
            "start": to_dt(cat("span_start")),
            "end": to_dt(cat("span_end")),
            "stage": words.gather(pl.Series(cat("span_stage"))),
            "cursor_start": pl.Series(cat("span_c0")).fill_nan(None),
            "cursor_end": pl.Series(cat("span_c1")).fill_nan(None),
        }
    )
    spans = (
        spans.with_columns(pl.col("phase").replace_strict(order, return_dtype=pl.Int32).alias("_o"))
        .sort("j", "attempt", "start", "_o", "end")
        .drop("_o")
    )

    names = [c.name for c in sc.cohorts]
    label_names = list(sc.cohorts[0].labels)
    jobs = pl.DataFrame(
        {
            "j": gidx,
            "model": pl.Series(
                [f"{sc.cohorts[c].model_prefix}-{k:03d}" for c, k in zip(coh.tolist(), model_k.tolist())]
                if "model" not in label_names
                else [str(sc.cohorts[c].labels["model"]) for c in coh.tolist()],
                dtype=pl.String,
            ),
            "gpus": gpus,
            "cohort": pl.Series(np.array(names, object)[coh], dtype=pl.String),
        }
    )
    for ln in label_names:
        if ln != "model":
            jobs = jobs.with_columns(pl.Series(ln, [sc.cohorts[c].labels[ln] for c in coh.tolist()]))
    if sc.changes:
        chg = [",".join(ch.name for i, ch in enumerate(sc.changes) if m >> i & 1) for m in mask.tolist()]
        jobs = jobs.with_columns(pl.Series("changes", chg, dtype=pl.String))
    jid = lambda df: df.with_columns(_job_ids(sc, df["j"], width).alias("job_id")).drop("j")  # noqa: E731
    jobs = jid(jobs).select("job_id", pl.exclude("job_id"))
    attempts = jid(attempts).select("job_id", pl.exclude("job_id"))
    spans = jid(spans).select("job_id", pl.exclude("job_id"))
    return jobs, attempts, spans


def metadata(sc: Scenario, n_jobs: int, seed: int) -> dict:
    """``trace.json`` of a generated trace: it says it is synthetic and what it is calibrated to."""
    return {
        "synthetic": True,
        "calibrated_to": CALIBRATED_TO,
        "scenario": sc.name,
        "scenario_file": sc.path.name,
        "seed": int(seed),
        "jobs": int(n_jobs),
        "generator": "ettcore.generator",  # the name written into every trace.json since the first release
        "description": sc.description,
        "assumptions": sc.assumptions,
        "calibrated_to_detail": sc.calibrated_to,
    }


def generate(
    scenario: Scenario | str | Path,
    out_dir: str | Path,
    *,
    n_jobs: int | None = None,
    seed: int = 0,
    chunk_jobs: int = CHUNK_JOBS,
    progress: bool = False,
) -> Path:
    """Generate a trace folder at ``out_dir`` (atomically) and return its path.

    ``n_jobs`` defaults to the scenario's ``default_jobs``.  Memory is bounded by
    one chunk of ``chunk_jobs`` jobs; the output is the same for the same
    ``(scenario, n_jobs, seed, chunk_jobs)``.
    """
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    n_jobs = sc.default_jobs if n_jobs is None else int(n_jobs)
    if n_jobs < 1:
        raise ValueError("n_jobs must be >= 1")
    if seed < 0:
        raise ValueError("seed must be >= 0")
    cohorts = _cohort_of_jobs(sc, n_jobs, seed)
    gpus_table = _model_gpus(sc, seed)
    nchunks = -(-n_jobs // chunk_jobs)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n_jobs, unit="job", desc=f"synth {sc.name}", file=sys.stderr)
    out_dir = Path(out_dir)
    with atomic_path(out_dir, directory=True) as tmp:
        for c in range(nchunks):
            frames = generate_chunk(sc, n_jobs, seed, c, chunk_jobs, cohorts, gpus_table)
            for name, df in zip(VOCABULARY.tables, frames):
                if nchunks == 1:
                    df.write_parquet(tmp / f"{name}.parquet", statistics=True)
                else:
                    (tmp / name).mkdir(exist_ok=True)
                    df.write_parquet(tmp / name / f"part-{c:05d}.parquet", statistics=True)
            if bar is not None:
                bar.update(frames[0].height)
            del frames
        (tmp / "trace.json").write_text(
            json.dumps(metadata(sc, n_jobs, seed), indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
    if bar is not None:
        bar.close()
    return out_dir
