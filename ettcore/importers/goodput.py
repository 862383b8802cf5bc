"""Import the entries written by ml-goodput-measurement's ``GoodputRecorder`` as an ETT trace.

Input, in any order (``gcloud logging read`` lists the newest entry first):

- JSON lines, one entry a line, as the recorder hands them to its
  ``cloud_logger`` (``{"job_name": ..., "step_count": 7, "step_start_time": 1.7e9}``),
  or Cloud Logging entries with the recorder's entry under ``jsonPayload``;
- one JSON array of such entries, as ``gcloud logging read --format=json`` writes it.

Times are epoch seconds.  Checkpoint records (orbax's checkpoint logger, same
log: ``event_type`` ``save``/``restore``/``emergency_restore``) are read too.
Every start/end pair is matched in time order, whatever the order of the file.

Mapping (each choice also noted per file in the import report, and every
second of wall time accounted for there by where its attribution came from):

- Each ``job_name`` is a job.  Each ``job_start_time`` starts a new attempt.
  An attempt ends at its ``job_end_time`` (``completed``; ``cancelled`` if
  another attempt follows, a planned stop).  Without one it ended at its
  last recorded instant; it is a ``failure`` if another attempt follows (the
  entries cannot tell a failure from a preemption) and ``running`` (no end)
  if it is the last.
- A step number that does not grow inside one attempt (the same or an
  earlier step logged again with no new ``job_start_time``: an in-process
  restart from a checkpoint, which the library counts as a disruption) is an
  interruption too: the attempt ends there as a ``failure`` and a new attempt
  begins at the same instant, with no re-queue gap (the hardware was kept).
- ``tpu_init_*`` -> ``hardware_setup``; ``training_prep_*`` ->
  ``trainer_init`` (stage ``training_preparation``); ``data_loading_*`` ->
  ``data_warmup`` (stage ``data_loading``; loading that overlaps training
  stays productive, as the library's "async" data loading); custom badput
  events -> ``eval`` with the event type as the stage (the library defines
  them as blocking work inside the training loop, such as evaluation);
  checkpoint ``save`` -> ``checkpoint_save`` (checkpoint-manager blocking
  time), ``restore`` -> ``checkpoint_load``.  A checkpoint record that cannot
  be placed on the timeline (a start outside 1990..2100, as the library's own
  tests write, or a missing start or duration) is dropped with a note, its
  duration reported as time not in the trace.
- Steps: a ``train`` span from each recorded step's start to the next
  recorded step's start, cursor ``step -> next step``; the last step of an
  attempt runs to ``job_end_time`` if there is one (as the library counts
  it), otherwise its end is unknown and it gets no span.  Training is cut
  around blocking spans (checkpoint saves and custom badput events), the
  cursor shared in proportion to training time.
- Compilation: the first step of an attempt that takes longer than the
  attempt's typical step (the median of its other steps' training time) spent
  the difference compiling (the library's program start-up badput): that
  much of the step's start is a ``pt2_compile`` span (stage
  ``first step above the typical step``), inferred from the step times.

Where this and the library's ``GoodputCalculator`` agree and differ is
worked through, scenario by scenario, in ``docs/importers.md`` and tested in
``tests/test_import_goodput.py`` and ``tests/test_goodput_scenarios.py``.
"""

from __future__ import annotations

import bisect
import datetime
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ettcore.causes import Signals, load_cause_map
from ettcore.errors import InputError, Problem
from ettcore.importers.frames import TraceFrames
from ettcore.importers.import_report import EXPLICIT, FileReport, ImportReport
from ettcore.trace.instants import TS_MAX_MS, TS_MIN_MS
from ettcore.vocabulary import Vocabulary

JOB_NAME = "job_name"
STEP_COUNT, STEP_START = "step_count", "step_start_time"
JOB_START, JOB_END = "job_start_time", "job_end_time"
PAIRS = {  # start key, end key -> phase, stage
    ("tpu_init_start_time", "tpu_init_end_time"): ("hardware_setup", "tpu_initialization"),
    ("training_prep_start_time", "training_prep_end_time"): ("trainer_init", "training_preparation"),
    ("data_loading_start_time", "data_loading_end_time"): ("data_warmup", "data_loading"),
}
CUSTOM_TYPE, CUSTOM_START, CUSTOM_END = (
    "custom_badput_event_type",
    "custom_badput_event_start_time",
    "custom_badput_event_end_time",
)
CKPT_SAVE = ("checkpoint_manager_blocking_start_time", "checkpoint_manager_blocking_duration_secs")
CKPT_SAVE_FALLBACK = ("checkpointer_blocking_start_time", "checkpointer_blocking_duration_secs")
CKPT_RESTORE = ("checkpoint_manager_start_time", "checkpoint_manager_duration_secs")
CKPT_RESTORE_FALLBACK = ("checkpointer_start_time", "checkpointer_duration_secs")
BLOCKING_PHASES = ("checkpoint_save", "eval")


@dataclass
class Entry:
    row: int
    data: dict


def _num(e: Entry, key: str, src: str) -> float:
    v = e.data.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(
            Problem(src, e.row, key, f"must be a number (seconds since the epoch or a duration), got {v!r}")
        )
    if key.endswith("_time") and not TS_MIN_MS <= v * 1000 <= TS_MAX_MS:
        raise InputError(Problem(src, e.row, key, f"timestamp out of the plausible range 1990..2100: {v!r}"))
    return float(v)


EXPECTED = (
    "expected JSON lines (one recorder entry, or one Cloud Logging entry with it under jsonPayload, a line) or the "
    "JSON array that 'gcloud logging read --format=json' writes"
)


def _entry(d: object) -> dict | None:
    """The recorder's entry in ``d`` (``jsonPayload`` unwrapped), or None if ``d`` is not an object."""
    if isinstance(d, dict) and isinstance(d.get("jsonPayload"), dict):
        return d["jsonPayload"]
    return d if isinstance(d, dict) else None


def _read_array(src: str, text: str) -> list[Entry]:
    """The elements of a JSON array, each with the line it starts on; a broken array is one error naming where."""
    dec = json.JSONDecoder()
    i = text.index("[") + 1
    out, line, pos = [], 1, 0

    def line_at(k: int) -> int:
        nonlocal line, pos
        line += text.count("\n", pos, k)
        pos = k
        return line

    while True:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        if i < len(text) and text[i] == "]" and not out:
            break
        try:
            obj, j = dec.raw_decode(text, i)
        except ValueError as exc:
            where = line_at(min(getattr(exc, "pos", i), len(text)))
            raise InputError(
                Problem(src, where, None, f"not a complete JSON array ({getattr(exc, 'msg', exc)}); {EXPECTED}")
            ) from None
        row = line_at(i)
        d = _entry(obj)
        if d is None:
            raise InputError(Problem(src, row, None, f"array element is not a JSON object; {EXPECTED}"))
        out.append(Entry(row, d))
        i = j
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        if i < len(text) and text[i] == ",":
            i += 1
            continue
        if i < len(text) and text[i] == "]" and not text[i + 1 :].strip():
            break
        raise InputError(
            Problem(
                src, line_at(min(i, len(text))), None, f"not a complete JSON array (expected ',' or ']'); {EXPECTED}"
            )
        )
    return out


def read_entries(path: Path) -> list[Entry]:
    """The entries of a JSON-lines file or of a JSON array (``jsonPayload`` unwrapped); bad JSON is an input error.

    A file where no line is a JSON value (CSV, a pretty-printed object, text) is one error saying what was expected;
    otherwise each line that is not a JSON object is named.
    """
    src = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(src, None, None, f"cannot read entries: {exc}")) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if text.lstrip().startswith("["):
        out = _read_array(src, text)
    else:
        out, problems, parsed = [], [], 0
        for row, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except ValueError as exc:
                problems.append(Problem(src, row, None, f"not a JSON object: {exc}"))
                continue
            parsed += 1
            entry = _entry(d)
            if entry is None:
                problems.append(Problem(src, row, None, "each line must be a JSON object (one recorder entry)"))
                continue
            out.append(Entry(row, entry))
        if problems and not parsed:
            first = problems[0].row
            raise InputError(
                Problem(src, first, None, f"no line is a JSON value ({len(problems):,} lines tried); {EXPECTED}")
            )
        if problems:
            raise InputError(problems)
    if not out:
        raise InputError(Problem(src, None, None, "no entries in the file"))
    return out


def _checkpoint(e: Entry) -> tuple[str, str, float, float] | str:
    """(phase, stage, start, end) of an orbax checkpoint record, or why it cannot be placed on the timeline."""
    d = e.data
    et = d["event_type"]
    keys = (CKPT_SAVE, CKPT_SAVE_FALLBACK) if et == "save" else (CKPT_RESTORE, CKPT_RESTORE_FALLBACK)
    pair = next((p for p in keys if d.get(p[0]) is not None and d.get(p[1]) is not None), None)
    if pair is None:
        return f"a {et} record needs {keys[0][0]} and {keys[0][1]} (or {keys[1][0]} and {keys[1][1]})"
    t0, dur = d[pair[0]], d[pair[1]]
    for k, v in ((pair[0], t0), (pair[1], dur)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"{k} must be a number, got {v!r}"
    if dur < 0:
        return f"{pair[1]} is negative ({dur!r})"
    if not TS_MIN_MS <= t0 * 1000 <= TS_MAX_MS or not TS_MIN_MS <= (t0 + dur) * 1000 <= TS_MAX_MS:
        return f"{pair[0]} {t0!r} is outside 1990..2100 (the library adds checkpoint durations without placing them)"
    return (
        ("checkpoint_save" if et == "save" else "checkpoint_load"),
        f"{et}:step {d.get('step')}",
        float(t0),
        float(t0 + dur),
    )


def _repeats(events: list[tuple]) -> list[int]:
    """Rows of events (time, kind, row) that repeat an earlier row's time and kind (a log line delivered twice)."""
    seen, out = set(), []
    for ev in sorted(events, key=lambda e: e[-1]):
        if ev[:-1] in seen:
            out.append(ev[-1])
        seen.add(ev[:-1])
    return out


def _once(events: list[tuple]) -> list[tuple]:
    """``events`` without repeats (the first row of each time and kind kept)."""
    seen, out = set(), []
    for ev in sorted(events, key=lambda e: e[-1]):
        if ev[:-1] not in seen:
            out.append(ev)
            seen.add(ev[:-1])
    return sorted(out)


def _pair_in_time(events: list[tuple[float, str, int]]) -> tuple[list[tuple[float, float, int]], list[int], list[int]]:
    """Match starts and ends of one kind in time order: (intervals (t0, t1, row of start), unmatched start rows,
    unmatched end rows).  At one instant an end first closes an open interval, then starts open, then ends close
    what just opened (a zero-length interval), so neither the file's order nor ties decide."""
    out: list[tuple[float, float, int]] = []
    lone_starts: list[int] = []
    lone_ends: list[int] = []
    open_: tuple[float, int] | None = None
    by_time: dict[float, list[tuple[str, int]]] = {}
    for t, edge, row in events:
        by_time.setdefault(t, []).append((edge, row))
    for t in sorted(by_time):
        group = sorted(by_time[t], key=lambda x: x[1])
        ends = [r for e, r in group if e == "end"]
        starts = [r for e, r in group if e == "start"]
        if open_ is not None and ends:
            out.append((open_[0], t, open_[1]))
            open_ = None
            ends.pop(0)
        for r in starts:
            if open_ is not None:
                lone_starts.append(open_[1])
            open_ = (t, r)
        for r in ends:
            if open_ is not None:
                out.append((open_[0], t, open_[1]))
                open_ = None
            else:
                lone_ends.append(r)
    if open_ is not None:
        lone_starts.append(open_[1])
    return out, lone_starts, lone_ends


@dataclass
class _JobEntries:
    """Parse stage: one job's entries as typed events (epoch seconds), each with the line it came from."""

    starts: list[tuple[float, int]]  # (time, row) of each job_start_time, in time order
    ends: list[tuple[float, int]] = field(default_factory=list)  # (time, row) of each job_end_time
    steps: list[tuple[float, int, int]] = field(default_factory=list)  # (time, step, row)
    pair_events: dict[str, list[tuple[float, str, int]]] = field(default_factory=dict)  # kind -> (time, edge, row)
    kind_of: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # kind -> (phase, stage)
    raw_spans: list[tuple[str, str | None, float, float, int]] = field(
        default_factory=list
    )  # phase, stage, t0, t1, row
    bad_ckpt: list[tuple[int, str, float | None]] = field(default_factory=list)  # (row, why, duration): not placeable
    unknown: list[int] = field(default_factory=list)  # rows with no recorder field

    def read(self, e: Entry, src: str) -> None:
        """Take the fields of one entry (a bad value is an input error naming its row and field)."""
        d = e.data
        used = JOB_START in d
        if JOB_END in d:
            self.ends.append((_num(e, JOB_END, src), e.row))
            used = True
        if STEP_START in d:
            self.steps.append(_step(e, src))
            used = True
        used = self._read_interval_edge(e, src) or used
        if d.get("event_type") in ("save", "restore", "emergency_restore"):
            self._read_checkpoint(e)
            used = True
        if not used:
            self.unknown.append(e.row)

    def _read_interval_edge(self, e: Entry, src: str) -> bool:
        """The start or end of an interval (TPU initialisation, training preparation, data loading, a custom badput
        event) the entry gives, if any."""
        d = e.data
        used = False
        for (ks, ke), (phase, stage) in PAIRS.items():
            key, edge = (ks, "start") if ks in d else (ke, "end")
            if key in d:
                self.pair_events.setdefault(ks, []).append((_num(e, key, src), edge, e.row))
                self.kind_of[ks] = (phase, stage)
                used = True
                break
        if CUSTOM_START in d or CUSTOM_END in d:
            ctype = str(d.get(CUSTOM_TYPE, "unknown")).lower()
            key, edge = (CUSTOM_START, "start") if CUSTOM_START in d else (CUSTOM_END, "end")
            self.pair_events.setdefault(f"custom:{ctype}", []).append((_num(e, key, src), edge, e.row))
            self.kind_of[f"custom:{ctype}"] = ("eval", ctype)
            used = True
        return used

    def _read_checkpoint(self, e: Entry) -> None:
        """An orbax checkpoint record: a span, or (with its duration, if it has one) one that cannot be placed."""
        got = _checkpoint(e)
        if not isinstance(got, str):
            self.raw_spans.append((*got, e.row))
            return
        d = e.data
        dur = next(
            (
                d.get(k[1])
                for k in (CKPT_SAVE, CKPT_SAVE_FALLBACK, CKPT_RESTORE, CKPT_RESTORE_FALLBACK)
                if isinstance(d.get(k[1]), (int, float))
                and not isinstance(d.get(k[1]), bool)
                and math.isfinite(d.get(k[1]))
            ),
            None,
        )
        self.bad_ckpt.append((e.row, got, dur))


def _step(e: Entry, src: str) -> tuple[float, int, int]:
    """(time, step, row) of a step entry; a step number that is not an integer is an input error."""
    t = _num(e, STEP_START, src)
    sc = e.data.get(STEP_COUNT)
    if (
        isinstance(sc, bool)
        or not isinstance(sc, (int, float))
        or not math.isfinite(sc)
        or abs(sc) >= 2**53
        or sc != int(sc)
    ):
        raise InputError(Problem(src, e.row, STEP_COUNT, f"must be an integer step number, got {sc!r}"))
    return t, int(sc), e.row


def _parse_job(job: str, entries: list[Entry], src: str) -> _JobEntries:
    """Parse stage: one job's entries (any order) as typed events; a job without a job start is an input error."""
    starts = sorted(((_num(e, JOB_START, src), e.row) for e in entries if JOB_START in e.data))
    if not starts:
        raise InputError(
            Problem(src, entries[0].row, JOB_START, f"job {job!r} has no job_start_time entry: its start is unknown")
        )
    parsed = _JobEntries(starts)
    for e in entries:
        parsed.read(e, src)
    return parsed


def _pair_events(
    job: str, parsed: _JobEntries, fr: FileReport
) -> tuple[list[tuple[float, int, int]], list[tuple[str, str | None, float, float, int]]]:
    """Parse stage: events logged twice read once, starts and ends paired in time order.  Returns (steps, raw spans:
    (phase, stage, start, end, row)); what was merged or dropped (lone edges, checkpoint records that cannot be
    placed, entries with no recorder field) is noted in ``fr``."""
    twice = [row for evs in [parsed.steps, *parsed.pair_events.values()] for row in _repeats(evs)]
    if twice:
        fr.note(
            "merged",
            f"entry of job {job!r} logged twice (same event, same time)",
            "one event delivered twice: read once",
            twice,
        )
    raw_spans = list(parsed.raw_spans)
    for key, evs in parsed.pair_events.items():
        intervals, lone_s, lone_e = _pair_in_time(_once(evs))
        phase, stage = parsed.kind_of[key]
        raw_spans += [(phase, stage, t0, t1, row) for t0, t1, row in intervals]
        for what, other, rows in (
            ("start without an end", "later end", lone_s),
            ("end without a start", "earlier start", lone_e),
        ):
            if rows:
                fr.note(
                    "dropped", f"'{key}' {what}", f"no {other} to pair it with: the interval's length is unknown", rows
                )
    for row, why, dur in parsed.bad_ckpt:
        fr.note("dropped", "checkpoint record that cannot be placed", why, [row])
        fr.outside(job, "dropped", f"checkpoint record (line {row}) not placed on the timeline", dur, [row])
    if parsed.unknown:
        fr.note(
            "dropped",
            f"entry of job {job!r} with no recorder field",
            "not a goodput recorder or checkpoint entry",
            parsed.unknown,
        )
    return _once(parsed.steps), raw_spans


@dataclass
class _Cuts:
    """Build stage: the instants one job's attempts begin at (each job start, each step rollback) and the rollbacks
    (time, step before, step logged again, row)."""

    at: list[float]
    rollbacks: list[tuple[float, int, int, int]]
    start_rows: dict[float, int]  # the line of each job start

    def attempt_of(self, t: float) -> int:
        """The attempt instant ``t`` falls in (-1: before the first)."""
        return bisect.bisect_right(self.at, t) - 1


def _attempt_cuts(starts: list[tuple[float, int]], steps: list[tuple[float, int, int]]) -> _Cuts:
    """Build stage: attempts begin at each job start and at each step number that does not grow inside one (an
    in-process restart)."""
    bounds = [t for t, _ in starts]
    rollbacks: list[tuple[float, int, int, int]] = []
    for k, b in enumerate(bounds):
        nxt = bounds[k + 1] if k + 1 < len(bounds) else math.inf
        inside = [x for x in steps if b <= x[0] < nxt]
        for prev, cur in zip(inside, inside[1:]):
            if cur[1] <= prev[1]:
                rollbacks.append((cur[0], prev[1], cur[1], cur[2]))
    at = sorted(set(bounds) | {t for t, *_ in rollbacks})
    return _Cuts(at, rollbacks, {t: row for t, row in starts})


def _attempt_end(
    job: str, k: int, start: float, nxt: float | None, cuts: _Cuts, end_of: dict, last_seen: dict, fr: FileReport
) -> tuple[float | None, str]:
    """Build stage: (end, end reason) of attempt ``k`` (``nxt``: the next attempt's start), the inference noted."""
    if nxt is not None and nxt not in cuts.start_rows and any(r[0] == nxt for r in cuts.rollbacks):
        _, s_prev, s_again, row = next(r for r in cuts.rollbacks if r[0] == nxt)
        fr.note(
            "inferred",
            f"{job}: step rollback at step {s_again} (after step {s_prev}) with no new job start",
            "an in-process restart from a checkpoint, which the library counts as a disruption: taken as an "
            f"interruption; attempt {k} ends as a failure at the repeated step's start and attempt {k + 1} begins "
            "there, with no re-queue time (the hardware was kept)",
            [row],
        )
        return nxt, "failure"
    if k in end_of and (nxt is None or end_of[k] <= nxt):
        if nxt is not None:
            fr.note(
                "inferred",
                f"{job} attempt {k} end reason",
                "job_end_time recorded and another job_start follows: a planned stop, 'cancelled'",
            )
        return end_of[k], ("completed" if nxt is None else "cancelled")
    rows = [cuts.start_rows[start]] if start in cuts.start_rows else None
    if nxt is not None:
        fr.note(
            "inferred",
            f"{job} attempt {k} end",
            "no job_end_time before the next job_start_time: ended at its last recorded instant, "
            "as a failure (the entries cannot tell a failure from a preemption)",
            rows,
        )
        return min(max(last_seen.get(k, start), start), nxt), "failure"
    fr.note("inferred", f"{job} attempt {k} end", "no job_end_time: still running (end left empty)", rows)
    return None, "running"


def _attempts(
    job: str,
    ends: list[tuple[float, int]],
    steps: list[tuple[float, int, int]],
    raw_spans: list[tuple[str, str | None, float, float, int]],
    cuts: _Cuts,
    fr: FileReport,
) -> list[dict]:
    """Build stage: the attempt rows of one job; entries dated before its first start are dropped with a note."""
    points = list(ends) + [(t, row) for t, _, row in steps]  # every instant a row places on the timeline
    for _, _, t0, t1, row in raw_spans:
        points += [(t0, row), (t1, row)]
    before = sorted({row for t, row in points if cuts.attempt_of(t) < 0})
    if before:
        fr.note(
            "dropped", f"entry of job {job!r} dated before its first job_start_time", "belongs to no attempt", before
        )
    last_seen: dict[int, float] = {}
    for t, _ in points:
        k = cuts.attempt_of(t)
        if k >= 0:
            last_seen[k] = max(last_seen.get(k, -math.inf), t)
    end_of: dict[int, float] = {}
    for t, _ in ends:
        k = cuts.attempt_of(t)
        if k >= 0:
            end_of[k] = max(end_of.get(k, -math.inf), t)
    attempts: list[dict] = []
    for k, start in enumerate(cuts.at):
        nxt = cuts.at[k + 1] if k + 1 < len(cuts.at) else None
        end, reason = _attempt_end(job, k, start, nxt, cuts, end_of, last_seen, fr)
        attempts.append(dict(job_id=job, attempt=k, start=start, end=end, end_reason=reason))
    return attempts


def _span(job: str, k: int, phase: str, stage: str | None, start: float, end: float, how: str = EXPLICIT) -> dict:
    """A span row without a cursor (:meth:`TraceFrames.from_rows` leaves it null); ``how``: where it came from."""
    return dict(job_id=job, attempt=k, phase=phase, stage=stage, start=start, end=end, how=how)


def _placed_spans(
    job: str,
    raw_spans: list[tuple[str, str | None, float, float, int]],
    attempts: list[dict],
    cuts: _Cuts,
    fr: FileReport,
) -> list[dict]:
    """Build stage: the paired intervals and checkpoint records as spans of the attempt they start in, cut at its
    end (noted); those before the first attempt are left out (noted by :func:`_attempts`)."""
    spans: list[dict] = []
    clipped = []
    for phase, stage, t0, t1, row in raw_spans:
        k = cuts.attempt_of(t0)
        if k < 0:
            continue
        a = attempts[k]
        hi = a["end"] if a["end"] is not None else t1
        if t1 > hi:
            clipped.append(row)
            t1 = hi
        if t1 > t0:
            spans.append(_span(job, k, phase, stage, t0, t1))
    if clipped:
        fr.note("clipped", f"{job}: interval running past its attempt's end", "cut at the attempt's end", clipped)
    return spans


def _step_pieces(
    a: dict, steps: list[tuple[float, int, int]], blocks: list[tuple[float, float]]
) -> tuple[list[list[tuple[float, float]]], list[tuple[float, float]], list[int]]:
    """Build stage, one attempt's steps: each step's training time (the parts outside blocking spans) and cursor
    (step -> next step); and the rows of steps whose end is unknown (the last step of an attempt that did not end
    with a job_end_time)."""
    pieces: list[list[tuple[float, float]]] = []
    cursors: list[tuple[float, float]] = []
    unfinished: list[int] = []
    for i, (t, sc, row) in enumerate(steps):
        if i + 1 < len(steps):
            t_next, s_next = steps[i + 1][0], steps[i + 1][1]
        elif a["end"] is not None and a["end_reason"] in ("completed", "cancelled"):
            t_next, s_next = a["end"], sc + 1
        else:
            unfinished.append(row)
            continue
        pieces.append(_train_time(t, t_next, blocks))
        cursors.append((float(sc), float(s_next)))
    return pieces, cursors, unfinished


def _step_spans(
    job: str, steps: list[tuple[float, int, int]], attempts: list[dict], placed: list[dict], cuts: _Cuts, fr: FileReport
) -> list[dict]:
    """Build stage: the ``train`` spans of every attempt's steps, cut around its blocking spans (``placed``), and
    the first step's time above the typical step as ``pt2_compile``; both inferences noted."""
    spans: list[dict] = []
    unfinished, compiled = [], []
    for k, a in enumerate(attempts):
        st = [x for x in steps if cuts.attempt_of(x[0]) == k]
        blocks = [(sp["start"], sp["end"]) for sp in placed if sp["attempt"] == k and sp["phase"] in BLOCKING_PHASES]
        pieces, cursors, lost = _step_pieces(a, st, blocks)
        unfinished += lost
        extra = _compile_time(pieces)
        if extra > 0:
            compiled.append((k, extra))
        for i, (ps, (c0, c1)) in enumerate(zip(pieces, cursors)):
            if i == 0 and extra > 0:
                ps, compile_parts = _take(ps, extra)
                stage = "first step above the typical step"
                spans += [_span(job, k, "pt2_compile", stage, x, y, COMPILE_HOW) for x, y in compile_parts]
            spans += _train_spans(job, k, ps, c0, c1)
    if unfinished:
        fr.note(
            "inferred",
            f"{job}: last step of an attempt without job_end_time",
            "its end is unknown: no train span for it",
            unfinished,
        )
    for k, extra in compiled:
        fr.note(
            "inferred",
            f"{job} attempt {k}: first step's time above the typical step -> pt2_compile ({extra:.3f} s)",
            "the first step took longer than the attempt's typical (median) step: the difference is taken as "
            "compilation, measured from the step times (the library's PROGRAM_STARTUP badput)",
        )
    return spans


def _import_job(job: str, entries: list[Entry], src: str, fr: FileReport) -> tuple[list[dict], list[dict]]:
    """Attempts and spans (epoch seconds) of one job from its entries, in any order.

    Parse (:func:`_parse_job`, :func:`_pair_events`), then build (:func:`_attempt_cuts`, :func:`_attempts`,
    :func:`_placed_spans`, :func:`_step_spans`); every stage notes what it dropped, merged, inferred or clipped in
    ``fr``, the file's note collector.
    """
    parsed = _parse_job(job, entries, src)
    steps, raw_spans = _pair_events(job, parsed, fr)
    cuts = _attempt_cuts(parsed.starts, steps)
    attempts = _attempts(job, parsed.ends, steps, raw_spans, cuts, fr)
    spans = _placed_spans(job, raw_spans, attempts, cuts, fr)
    spans += _step_spans(job, steps, attempts, spans, cuts, fr)
    return attempts, spans


COMPILE_HOW = (
    "compilation: the first step's time above the attempt's typical (median) step, measured from the step times"
)


def _train_time(t0: float, t1: float, blocks: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of ``[t0, t1]`` outside blocking spans (training time of one step)."""
    cuts = sorted((max(a, t0), min(b, t1)) for a, b in blocks if b > t0 and a < t1)
    pieces, t = [], t0
    for a, b in cuts:
        if a > t:
            pieces.append((t, a))
        t = max(t, b)
    if t < t1:
        pieces.append((t, t1))
    return pieces


def _compile_time(steps: list[list[tuple[float, float]]]) -> float:
    """Seconds of the first step's training time above the median of the other steps' (0 without another step)."""
    if len(steps) < 2:
        return 0.0
    first = sum(b - a for a, b in steps[0])
    return max(0.0, first - statistics.median(sum(b - a for a, b in ps) for ps in steps[1:]))


def _take(
    pieces: list[tuple[float, float]], seconds: float
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Split ``seconds`` off the start of ``pieces``: (what is left, what was taken)."""
    left, taken = [], []
    for a, b in pieces:
        if seconds <= 0:
            left.append((a, b))
        elif b - a <= seconds:
            taken.append((a, b))
            seconds -= b - a
        else:
            taken.append((a, a + seconds))
            left.append((a + seconds, b))
            seconds = 0
    return left, taken


def _train_spans(job: str, k: int, pieces: list[tuple[float, float]], c0: float, c1: float) -> list[dict]:
    """``train`` spans for one step's training time; the cursor grows linearly in training time."""
    total = sum(b - a for a, b in pieces)
    out, done, c = [], 0.0, c0
    for a, b in pieces:
        done += b - a
        ce = c0 + (c1 - c0) * done / total
        out.append(
            dict(
                job_id=job,
                attempt=k,
                phase="train",
                stage="steps",
                start=a,
                end=b,
                cursor_start=c,
                cursor_end=ce,
                how=EXPLICIT,
            )
        )
        c = ce
    return out


def _entries_by_job(entries: list[Entry], src: str, fr: FileReport) -> dict[str, list[Entry]]:
    """Parse stage: the entries of each job (``job_name``), jobs in name order.  Entries without a name go to the
    file's only job (noted); in a file of several jobs they are an input error."""
    names = sorted({e.data[JOB_NAME] for e in entries if isinstance(e.data.get(JOB_NAME), str)})
    by_job: dict[str, list[Entry]] = {n: [] for n in names}
    nameless = [e for e in entries if not isinstance(e.data.get(JOB_NAME), str)]
    for e in entries:
        if isinstance(e.data.get(JOB_NAME), str):
            by_job[e.data[JOB_NAME]].append(e)
    if nameless:
        if len(names) == 1:
            by_job[names[0]].extend(nameless)
            by_job[names[0]].sort(key=lambda e: e.row)
            fr.note(
                "inferred",
                "entries without job_name",
                f"the file holds one job; given to {names[0]!r}",
                [e.row for e in nameless],
            )
        else:
            raise InputError(
                [
                    Problem(src, e.row, JOB_NAME, "entry without job_name in a file holding several jobs")
                    for e in nameless[:20]
                ]
            )
    if not names:
        raise InputError(Problem(src, None, JOB_NAME, "no entry names its job (job_name)"))
    return by_job


def _note_file(fr: FileReport, attempts: list[dict], spans: list[dict], jobs: int, entries: int, gpus: int) -> None:
    """Note stage: the time accounting of every job, the file's facts, and the GPUs when none were given."""
    fr.account(attempts, spans)
    fr.facts.update({"jobs": jobs, "attempts": len(attempts), "entries": entries})
    if gpus == 1:
        fr.note("inferred", "gpus", "the entries do not record accelerators; every job has gpus = 1 (use --gpus)")


def import_entries(
    path: str | Path,
    gpus: int = 1,
    synthetic: bool = False,
    cause_mapping: str | Path | None = None,
    causes_file: str | Path | None = None,
    vocabulary: Vocabulary | None = None,
) -> tuple[TraceFrames, ImportReport]:
    """Import a recorder's entries (JSON lines or a JSON array, any order): one job a ``job_name``.

    ``gpus`` is given to every job (the entries do not record it).  Set
    ``synthetic`` when the entries were generated rather than recorded from
    a real job; it is written to ``trace.json``.  Each interruption's cause is decided by the cause mapping
    (``cause_mapping``: a user's rules before the shipped ones, docs/causes.md); the entries record nothing about
    why an attempt ended, so the shipped rules give a failure ``unknown``.  ``causes_file`` (a user's causes file) or
    ``vocabulary`` (one read before): the causes the mapping's rules may name beside the package's
    (:func:`ettcore.causes.load_cause_map`).
    """
    path = Path(path)
    src = str(path)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise InputError(Problem("--gpus", None, "gpus", f"must be an integer >= 1, got {gpus!r}"))
    cause_map = load_cause_map(cause_mapping, causes_file, vocabulary)
    report = ImportReport("goodput")
    fr = report.add_file(src)
    entries = read_entries(path)
    by_job = _entries_by_job(entries, src, fr)
    attempts, spans, jobs = [], [], []
    for job, mine in by_job.items():
        a, s = _import_job(job, mine, src, fr)
        for row in a:
            row["cause"] = cause_map.classify(Signals("goodput", row["end_reason"]))
        attempts.extend(a)
        spans.extend(s)
        jobs.append(dict(job_id=job, model=job, gpus=gpus, source_file=path.name, synthetic=synthetic))
        fr.job_ids.append(job)
    _note_file(fr, attempts, spans, len(jobs), len(entries), gpus)
    fr.facts["interruptions by cause"] = cause_map.counts_line()
    metadata = {
        "synthetic": synthetic,
        "source": "ml-goodput-measurement recorder entries",
        "importer": "ettcore.importers.goodput",
        "source_files": [src],
    }
    return TraceFrames.from_rows(attempts, spans, jobs, metadata), report


class MemoryLogger:
    """An in-memory ``cloud_logger`` for ml-goodput-measurement (no Google Cloud, no network).

    ``GoodputRecorder`` writes entries into it and ``GoodputCalculator`` reads them back as it reads Cloud
    Logging: each entry has a timestamp (the entry's own time, its first ``*_time`` field, as if written when it
    happened; else the time it was written) and an insert id.  A read returns, in ascending (timestamp, id) order,
    the entries after ``last_entry_info`` (or after ``start_time``) and up to ``end_time``, with the (timestamp, id)
    of the last one returned, so a calculator asked again reads only what is new and an interval query reads its
    interval.  ``entries`` (the payloads, in write order) can be written as JSON lines for ``ett import goodput``.
    """

    def __init__(self) -> None:
        self.entries: list[dict] = []
        self._keys: list[tuple[datetime.datetime, str]] = []  # (timestamp, insert id) of each entry

    @staticmethod
    def _timestamp(entry: dict) -> datetime.datetime:
        for k, v in entry.items():
            if "_time" in k and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                try:
                    return datetime.datetime.fromtimestamp(v, datetime.timezone.utc)
                except (OverflowError, OSError, ValueError):
                    break
        return datetime.datetime.now(datetime.timezone.utc)

    def write_cloud_logging_entry(self, entry: dict | None) -> None:
        if entry is not None:
            self.entries.append(dict(entry))
            self._keys.append((self._timestamp(entry), f"{len(self._keys):012d}"))

    def read_cloud_logging_entries(self, start_time=None, end_time=None, last_entry_info=None):
        def aware(t):
            return t.replace(tzinfo=datetime.timezone.utc) if t is not None and t.tzinfo is None else t

        start_time, end_time = aware(start_time), aware(end_time)
        after = None
        if last_entry_info is not None and last_entry_info[0] is not None:
            after = (aware(last_entry_info[0]), last_entry_info[1])
        picked = sorted(
            (
                k
                for k, key in enumerate(self._keys)
                if (end_time is None or key[0] <= end_time)
                and (after is None or key > after)
                and (after is not None or start_time is None or key[0] > start_time)
            ),
            key=lambda k: self._keys[k],
        )
        last = self._keys[picked[-1]] if picked else (None, None)
        return [dict(self.entries[k]) for k in picked], last
