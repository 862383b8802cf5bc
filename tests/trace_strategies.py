"""Hypothesis strategies for random VALID job traces, and a writer for them.

A generated trace is SYNTHETIC test data: a dict ``{"jobs": list | None,
"attempts": list, "spans": list}`` of plain dicts with integer-millisecond
UTC timestamps, the input format of :mod:`reference` (``tests/reference.py``).

What the strategies produce (each on purpose):

* 1-4 jobs a trace, 1-4 attempts a job, re-queue gaps (sometimes zero);
* end reasons completed / failure / preemption / cancelled, and ``running``
  (``end = None``) for a job's last attempt;
* overlapping and touching non-train init spans (hardware_setup, trainer_init,
  data_warmup, checkpoint_load, pt2_compile, sometimes scheduling), with equal
  end times common (times mostly on a one-minute grid) so tie-breaks happen;
* train spans with checkpoint_save between them, eval overlapping train (and
  reaching past it), uncovered hangs, shutdown and publish at the end;
* replay: after a restart the cursor resumes at the last checkpoint (below the
  high-water mark), sometimes exactly at it, sometimes above it; flat cursors;
* startup failures (an attempt that fails before any train span), jobs that
  never train, GPU counts 1..2048, jobs across midnight, a month end and an
  ISO week boundary.

:func:`write_trace_folder` writes such a trace as Parquet, CSV or JSONL with
timestamps as epoch-second floats, ISO strings (zone-less, ``Z`` or a
non-UTC offset) or Parquet timestamps, optionally with rows shuffled and a
table split across several Parquet files (``spans/part-0.parquet`` ...).
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import polars as pl
from hypothesis import strategies as st

from ettcore.trace.writer import write_table

MINUTE = 60_000

#: Anchors (UTC): a Saturday night before a month end, a Sunday night before an
#: ISO week boundary, and an ordinary weekday morning.
ANCHORS_MS: tuple[int, ...] = tuple(
    int(datetime(*ymdh, tzinfo=timezone.utc).timestamp() * 1000)
    for ymdh in ((2026, 1, 31, 22), (2026, 2, 1, 22), (2026, 3, 11, 8))
)

INIT_PHASES = ("hardware_setup", "trainer_init", "data_warmup", "checkpoint_load", "pt2_compile", "scheduling")
END_REASONS_MID = ("failure", "preemption", "failure", "preemption", "cancelled", "completed")
END_REASONS_LAST = ("completed", "failure", "preemption", "cancelled", "running")


def _dur(draw, max_minutes: int, zero_ok: bool = True) -> int:
    """A duration in ms: mostly whole minutes (so ends coincide), sometimes odd ms."""
    lo = 0 if zero_ok else 1
    if draw(st.integers(0, 3)) == 0:
        return draw(st.integers(max(lo, 1), max_minutes * MINUTE))
    return draw(st.integers(lo, max_minutes)) * MINUTE


def _span(job: str, attempt: int, phase: str, start: int, end: int, c0=None, c1=None, stage=None) -> dict:
    return dict(
        job_id=job, attempt=attempt, phase=phase, start=start, end=end, cursor_start=c0, cursor_end=c1, stage=stage
    )


TRAIN_COUNTS = (0, 1, 1, 2, 2, 3)  # train spans an attempt that trains has, drawn from


@st.composite
def job_trace(
    draw, job_id: str, base_ms: int, train_counts: tuple[int, ...] = TRAIN_COUNTS
) -> tuple[list[dict], list[dict]]:
    """Attempts and spans of one valid job starting at ``base_ms`` (each attempt that trains has one of
    ``train_counts`` train spans)."""
    n_att = draw(st.integers(1, 4))
    never_trains = draw(st.integers(0, 7)) == 0
    attempts: list[dict] = []
    spans: list[dict] = []
    t = base_ms
    hw = 0  # cursor high-water mark so far
    ckpt = 0  # last checkpointed cursor (<= hw)
    for k in range(n_att):
        last = k == n_att - 1
        if k > 0:
            t += 0 if draw(st.integers(0, 3)) == 0 else _dur(draw, 30, zero_ok=False)
        a_start = t
        a_spans: list[dict] = []

        # Init block: overlapping or sequential non-train spans.
        cur = a_start
        for phase in draw(st.lists(st.sampled_from(INIT_PHASES), max_size=5)):
            s = max(a_start, cur + draw(st.integers(-2, 2)) * MINUTE)
            e = s + _dur(draw, 8)
            stage = draw(st.sampled_from([None, "device_init", "pre_train"])) if phase == "trainer_init" else None
            a_spans.append(_span(job_id, k, phase, s, e, stage=stage))
            cur = draw(st.sampled_from([s, e]))
        t = max([a_start] + [sp["end"] for sp in a_spans])
        if draw(st.booleans()):
            t += _dur(draw, 5)  # uncovered stall before training

        startup_failure = not last and draw(st.integers(0, 4)) == 0
        n_train = 0 if (never_trains or startup_failure) else draw(st.sampled_from(train_counts))
        c = draw(st.sampled_from(["ckpt", "ckpt", "hw", "above", "zero"]))
        c = {"ckpt": ckpt, "hw": hw, "above": hw + draw(st.integers(1, 50)), "zero": 0}[c]
        for i in range(n_train):
            if i > 0:
                gap = draw(st.sampled_from(["touch", "save", "save", "hang", "eval"]))
                if gap == "save":
                    e = t + _dur(draw, 3)
                    a_spans.append(_span(job_id, k, "checkpoint_save", t, e))
                    ckpt = c
                    t = e
                elif gap == "hang":
                    t += _dur(draw, 4)
                elif gap == "eval":
                    e = t + _dur(draw, 4)
                    a_spans.append(_span(job_id, k, "eval", t, e))
                    t = e
                if draw(st.integers(0, 5)) == 0:
                    c += draw(st.integers(1, 30))  # a jump in the data cursor
            s, e = t, t + _dur(draw, 25, zero_ok=False)
            c1 = c + draw(st.one_of(st.just(0), st.integers(1, 400)))
            a_spans.append(_span(job_id, k, "train", s, e, c, c1))
            if draw(st.integers(0, 3)) == 0:  # eval overlapping the train span, maybe past its end
                es = s + draw(st.integers(0, e - s))
                a_spans.append(
                    _span(job_id, k, "eval", es, e + draw(st.sampled_from([0, 0, MINUTE, 3 * MINUTE, 1234])))
                )
            hw = max(hw, c1)
            c = c1
            t = e

        reason = draw(st.sampled_from(END_REASONS_LAST if last else END_REASONS_MID))
        if startup_failure:
            reason = draw(st.sampled_from(("failure", "preemption")))
        if reason in ("completed", "cancelled") and draw(st.booleans()):
            e = t + _dur(draw, 6)
            a_spans.append(_span(job_id, k, "shutdown", t, e))
            if draw(st.booleans()):
                ps = t + draw(st.integers(0, 3)) * MINUTE
                a_spans.append(_span(job_id, k, "publish", ps, ps + _dur(draw, 6)))
        end = max([t] + [sp["end"] for sp in a_spans])
        if draw(st.booleans()):
            end += _dur(draw, 5)  # hang until the failure is detected, or idle tail
        if reason == "running":
            # keep the running attempt's latest stamp after its start, so the
            # default as-of (the latest stamp in the trace) does not drop it
            if max([a_start] + [sp["end"] for sp in a_spans]) == a_start:
                a_spans.append(_span(job_id, k, "hardware_setup", a_start, a_start + MINUTE))
            attempts.append(dict(job_id=job_id, attempt=k, start=a_start, end=None, end_reason="running"))
        else:
            attempts.append(dict(job_id=job_id, attempt=k, start=a_start, end=end, end_reason=reason))
        spans.extend(a_spans)
        t = end
    if attempts[-1]["end"] == attempts[0]["start"]:  # a job needs positive wall time
        attempts[-1]["end"] += MINUTE
    # attempt numbers: increasing in time, not necessarily consecutive
    step = draw(st.sampled_from([1, 1, 3]))
    for a in attempts:
        a["attempt"] *= step
    for sp in spans:
        sp["attempt"] *= step
    return attempts, spans


@st.composite
def traces(
    draw, max_jobs: int = 4, with_jobs_table: bool | None = None, train_counts: tuple[int, ...] = TRAIN_COUNTS
) -> dict[str, Any]:
    """A random valid trace of 1..``max_jobs`` jobs (see the module docstring); ``train_counts``: as
    :func:`job_trace`."""
    n_jobs = draw(st.integers(1, max_jobs))
    attempts: list[dict] = []
    spans: list[dict] = []
    jobs: list[dict] = []
    for j in range(n_jobs):
        job_id = f"job-{j}"
        base = draw(st.sampled_from(ANCHORS_MS)) + draw(st.integers(0, 150)) * MINUTE
        if draw(st.integers(0, 3)) == 0:
            base += draw(st.integers(0, MINUTE - 1))
        a, s = draw(job_trace(job_id, base, train_counts))
        attempts += a
        spans += s
        gpus = draw(st.one_of(st.sampled_from([1, 8, 128, 2048]), st.integers(1, 2048)))
        jobs.append(
            dict(
                job_id=job_id,
                model=draw(st.sampled_from(["model-a", "model-b", "model-c"])),
                gpus=gpus,
                team=draw(st.sampled_from(["ads", "feed"])),
            )
        )
    if with_jobs_table is None:
        with_jobs_table = draw(st.integers(0, 4)) > 0
    return {"jobs": jobs if with_jobs_table else None, "attempts": attempts, "spans": spans}


# --------------------------------------------------------------------------- writing

TS_MODES = ("timestamp", "timestamp_naive", "epoch", "iso", "iso_z", "iso_offset")


def _iso(ms: int, mode: str) -> str:
    d = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
    if mode == "iso":
        return d.replace(tzinfo=None).isoformat(timespec="milliseconds")
    if mode == "iso_z":
        return d.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"
    tz = timezone(timedelta(hours=5, minutes=30))  # a non-UTC offset: same instant
    return d.astimezone(tz).isoformat(timespec="milliseconds")


def _ts_series(name: str, values: list[int | None], mode: str) -> pl.Series:
    if mode == "epoch":
        return pl.Series(name, [None if v is None else v / 1000 for v in values], dtype=pl.Float64)
    if mode in ("iso", "iso_z", "iso_offset"):
        return pl.Series(name, [None if v is None else _iso(v, mode) for v in values], dtype=pl.Utf8)
    tz = "UTC" if mode == "timestamp" else None
    return pl.Series(name, values, dtype=pl.Int64).cast(pl.Datetime("ms", time_zone=tz))


def _frame(rows: list[dict], columns: dict[str, Any], ts_cols: tuple[str, ...], mode: str) -> pl.DataFrame:
    cols = []
    for name, dtype in columns.items():
        vals = [r.get(name) for r in rows]
        cols.append(_ts_series(name, vals, mode) if name in ts_cols else pl.Series(name, vals, dtype=dtype))
    return pl.DataFrame(cols)


def trace_frames(trace: dict[str, Any], ts: str = "timestamp") -> dict[str, pl.DataFrame]:
    """Polars frames for ``jobs`` (if any), ``attempts`` and ``spans`` with timestamps in mode ``ts``."""
    if ts not in TS_MODES:
        raise ValueError(f"ts must be one of {TS_MODES}")
    out = {
        "attempts": _frame(
            trace["attempts"],
            {"job_id": pl.Utf8, "attempt": pl.Int64, "start": None, "end": None, "end_reason": pl.Utf8},
            ("start", "end"),
            ts,
        ),
        "spans": _frame(
            trace["spans"],
            {
                "job_id": pl.Utf8,
                "attempt": pl.Int64,
                "phase": pl.Utf8,
                "start": None,
                "end": None,
                "stage": pl.Utf8,
                "cursor_start": pl.Float64,
                "cursor_end": pl.Float64,
            },
            ("start", "end"),
            ts,
        ),
    }
    if trace.get("jobs") is not None:
        out["jobs"] = pl.DataFrame(
            [
                pl.Series(k, [j.get(k) for j in trace["jobs"]], dtype=pl.Int64 if k == "gpus" else pl.Utf8)
                for k in ("job_id", "model", "gpus", "team")
            ]
        )
    return out


def write_trace_folder(
    trace: dict[str, Any],
    folder: str | Path,
    *,
    fmt: str = "parquet",
    ts: str = "timestamp",
    shuffle_seed: int | None = None,
    parts: dict[str, int] | None = None,
) -> Path:
    """Write ``trace`` as a trace folder the loader reads; returns the folder.

    ``fmt``: ``parquet``, ``csv`` or ``jsonl`` (one file a table).  ``ts``: one of
    :data:`TS_MODES` (Parquet-timestamp modes only with ``fmt="parquet"``;
    for CSV/JSONL they fall back to ISO strings).  ``shuffle_seed``: shuffle
    every table's rows with that seed.  ``parts``: ``{"spans": 3}`` splits that
    table into a folder of that many Parquet files (non-empty ones only).
    A ``trace.json`` marks the folder synthetic.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if fmt != "parquet" and ts.startswith("timestamp"):
        ts = "iso"
    frames = trace_frames(trace, ts)
    for name, df in frames.items():
        if shuffle_seed is not None and df.height > 1:
            order = list(range(df.height))
            random.Random(f"{shuffle_seed}-{name}").shuffle(order)
            df = df[order]
        n = (parts or {}).get(name, 1)
        if n > 1:
            if fmt != "parquet":
                raise ValueError("only Parquet tables can be split into part files")
            (folder / name).mkdir()
            bounds = sorted(set([0, df.height] + [round(i * df.height / n) for i in range(1, n)]))
            for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
                df[lo:hi].write_parquet(folder / name / f"part-{i}.parquet")
            if df.height == 0:  # an empty table still needs one (empty) file
                df.write_parquet(folder / name / "part-0.parquet")
            continue
        write_table(df, folder / f"{name}.{fmt}", fmt)
    meta = {"synthetic": True, "source": "tests/trace_strategies.py (hypothesis-generated test trace)"}
    (folder / "trace.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return folder


def train_spans(job_id: str, attempt: int, pieces: list[tuple[float, float]], t: int, c: float = 0) -> list[dict]:
    """Consecutive train spans from ``t`` (ms) and cursor ``c``: ``pieces`` = [(seconds, cursor units), ...]."""
    out = []
    for seconds, units in pieces:
        out.append(
            dict(
                job_id=job_id,
                attempt=attempt,
                phase="train",
                start=t,
                end=t + int(seconds * 1000),
                cursor_start=c,
                cursor_end=c + units,
                stage=None,
            )
        )
        t, c = t + int(seconds * 1000), c + units
    return out
