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
from pathlib import Path

import numpy as np
import polars as pl

from ettcore.atomic import atomic_path
from ettcore.errors import InputError, Problem
from ettcore.phases import default_phase_map
from ettcore.synthetic.scenario import END_REASONS, Profile, Scenario, load_scenario

CHUNK_JOBS = 50_000
MIN_MS = 60_000
DAY_MS = 86_400_000
CALIBRATED_TO = "published aggregates of arXiv 2610.02057"
_REASONS = END_REASONS + ("completed",)


def _ms(minutes: np.ndarray) -> np.ndarray:
    return np.rint(np.asarray(minutes, dtype=np.float64) * MIN_MS).astype(np.int64)


def _within(group: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Position of each row inside its group, for rows laid out group after group."""
    starts = np.cumsum(sizes) - sizes
    return np.arange(len(group), dtype=np.int64) - np.repeat(starts, sizes)


def _draw_group(
    prof: Profile, rng: np.random.Generator, n: int, job_start_ms: np.ndarray, where: str, vocab: dict[str | None, int]
) -> dict:
    """Draw ``n`` jobs of one profile.  Returns attempt and span columns (job index local to the group).

    Strings (phase, stage, failure kind) come back as codes into ``vocab`` (extended here; code 0 is null).
    """
    code = lambda s: vocab.setdefault(s, len(vocab))  # noqa: E731
    interval = np.maximum(_ms(prof.ckpt_interval_min.sample(rng, n)), 1000)
    block = _ms(prof.ckpt_blocking_min.sample(rng, n))
    rate = prof.cursor_rate.sample(rng, n)
    budget = _ms(prof.wall_budget_min.sample(rng, n)) if prof.wall_budget_min is not None else None
    progress = np.maximum(_ms(prof.train_min.sample(rng, n)), MIN_MS) if prof.train_min is not None else None

    # Interruptions: (job, position, end_reason code, failure_kind).
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
    rank = _within(ij, nint)
    keep = rank < prof.max_interruptions
    ij, ipos, irsn, ikind = ij[keep], ipos[keep], irsn[keep], ikind[keep]
    nint = np.minimum(nint, prof.max_interruptions)
    ioff = np.cumsum(nint) - nint

    # Attempts.
    natt = nint + 1
    aj = np.repeat(np.arange(n), natt)
    ak = _within(aj, natt)
    last = ak == nint[aj]
    na = len(aj)
    period, b = interval[aj], block[aj]
    prev = np.where(ak > 0, ioff[aj] + ak - 1, 0)
    high = np.where(ak > 0, ipos[prev] if len(ipos) else 0, 0)
    a = np.where(high > 0, ((high - 1) // period) * period, 0)  # last checkpoint strictly below the high-water mark
    cur = np.where(~last, ioff[aj] + ak, 0)
    rsn = np.where(last, 2, irsn[cur] if len(irsn) else 2).astype(np.int8)
    kind = np.where(last, 0, ikind[cur] if len(ikind) else 0).astype(np.int32)

    # Start-up DAG, one step at a time (vectorized over attempts).
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

    hang = np.zeros(na, np.int64)
    gap = np.zeros(na, np.int64)
    for rc, er in enumerate(END_REASONS):
        m = (rsn == rc) & ~last
        hang[m] = _ms(prof.hang_min[er].sample(rng, int(m.sum())))
        gap[m] = _ms(prof.requeue_min[er].sample(rng, int(m.sum())))
    shut = np.where(last, _ms(prof.shutdown_min.sample(rng, na)), 0)
    pub = np.where(last, _ms(prof.publish_min.sample(rng, na)), 0)

    if budget is not None:
        # Everything but the last loop, then P from the budget (see the module docstring).
        e_nl = np.where(last, 0, ipos[cur] if len(ipos) else 0)
        loop_nl = np.where(last, 0, (e_nl - a) + b * np.maximum(0, (e_nl - 1) // period - a // period))
        fixed = np.bincount(aj, weights=startup + loop_nl + hang + gap + shut + pub, minlength=n).astype(np.int64)
        li = np.flatnonzero(last)
        Il, bl, al = interval, block, a[li]
        R = budget - fixed + al + bl * (al // Il)
        k = np.maximum(1, -(-R // (Il + bl)))
        progress = np.minimum(R - bl * (k - 1), k * Il)
        x_last = np.where(nint > 0, ipos[ioff + nint - 1] if len(ipos) else 0, 0)
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
    e = np.where(last, progress[aj], ipos[cur] if len(ipos) else 0)
    nsave = np.maximum(0, (e - 1) // period - a // period)
    loop = (e - a) + b * nsave
    dur = startup + loop + np.where(last, shut + pub, hang)
    seg = dur + np.where(last, 0, gap)
    cs = np.cumsum(seg) - seg
    cs -= np.repeat(cs[np.cumsum(natt) - natt], natt)
    att_start = job_start_ms[aj] + cs
    att_end = att_start + dur

    # Spans: start-up steps.
    sp_att, sp_phase, sp_stage, sp_start, sp_end, sp_c0, sp_c1 = [], [], [], [], [], [], []
    for s, st, en, ran in steps_out:
        idx = np.flatnonzero(ran)
        (
            sp_att.append(idx),
            sp_phase.append(np.full(len(idx), code(s.phase), np.int32)),
            sp_stage.append(np.full(len(idx), code(s.stage), np.int32)),
        )
        sp_start.append(att_start[idx] + st[idx]), sp_end.append(att_start[idx] + en[idx])
        sp_c0.append(np.full(len(idx), np.nan)), sp_c1.append(np.full(len(idx), np.nan))
    # Train segments and checkpoint saves.
    nseg = nsave + 1
    ta = np.repeat(np.arange(na), nseg)
    tj = _within(ta, nseg)
    m0 = a[ta] // period[ta]
    p0 = np.where(tj == 0, a[ta], (m0 + tj) * period[ta])
    p1 = np.where(tj < nsave[ta], (m0 + tj + 1) * period[ta], e[ta])
    t0 = att_start[ta] + startup[ta] + (p0 - a[ta]) + tj * b[ta]
    t1 = t0 + (p1 - p0)
    r = rate[aj[ta]] / 1000.0
    (
        sp_att.append(ta),
        sp_phase.append(np.full(len(ta), code("train"), np.int32)),
        sp_stage.append(np.zeros(len(ta), np.int32)),
    )
    sp_start.append(t0), sp_end.append(t1), sp_c0.append(p0 * r), sp_c1.append(p1 * r)
    sv = np.flatnonzero((tj < nsave[ta]) & (b[ta] > 0))
    (
        sp_att.append(ta[sv]),
        sp_phase.append(np.full(len(sv), code("checkpoint_save"), np.int32)),
        sp_stage.append(np.zeros(len(sv), np.int32)),
    )
    (
        sp_start.append(t1[sv]),
        sp_end.append(t1[sv] + b[ta[sv]]),
        sp_c0.append(np.full(len(sv), np.nan)),
        sp_c1.append(np.full(len(sv), np.nan)),
    )
    # Shutdown and publish.
    tail0 = att_start + startup + loop
    for ph, d, off in (("shutdown", shut, np.zeros(na, np.int64)), ("publish", pub, shut)):
        idx = np.flatnonzero(last & (d > 0))
        (
            sp_att.append(idx),
            sp_phase.append(np.full(len(idx), code(ph), np.int32)),
            sp_stage.append(np.zeros(len(idx), np.int32)),
        )
        sp_start.append(tail0[idx] + off[idx]), sp_end.append(tail0[idx] + off[idx] + d[idx])
        sp_c0.append(np.full(len(idx), np.nan)), sp_c1.append(np.full(len(idx), np.nan))

    span_att = np.concatenate(sp_att)
    return {
        "att_job": aj,
        "att_k": ak,
        "att_start": att_start,
        "att_end": att_end,
        "att_reason": rsn,
        "att_kind": kind,
        "span_job": aj[span_att],
        "span_k": ak[span_att],
        "span_phase": np.concatenate(sp_phase),
        "span_stage": np.concatenate(sp_stage),
        "span_start": np.concatenate(sp_start),
        "span_end": np.concatenate(sp_end),
        "span_c0": np.concatenate(sp_c0),
        "span_c1": np.concatenate(sp_c1),
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
            for name, df in zip(("jobs", "attempts", "spans"), frames):
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
