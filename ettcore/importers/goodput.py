"""Import the entries written by ml-goodput-measurement's ``GoodputRecorder`` as an ETT trace.

Input: a JSON-lines file, one entry a line, as the recorder hands them to
its ``cloud_logger`` (``{"job_name": ..., "step_count": 7, "step_start_time": 1.7e9}``),
or as exported from Cloud Logging (the entry under ``jsonPayload``).  Times
are epoch seconds.  Checkpoint records (orbax's checkpoint logger, same log:
``event_type`` ``save``/``restore``/``emergency_restore``) are read too.

Mapping (each choice also noted per file in the import report):

- Each ``job_name`` is a job.  Each ``job_start_time`` starts a new attempt.
  An attempt ends at its ``job_end_time`` (``completed``; ``cancelled`` if
  another attempt follows, a planned stop).  Without one it ended at its
  last recorded instant; it is a ``failure`` if another attempt follows (the
  entries cannot tell a failure from a preemption) and ``running`` (no end)
  if it is the last.
- ``tpu_init_*`` -> ``hardware_setup``; ``training_prep_*`` ->
  ``trainer_init`` (stage ``training_preparation``); ``data_loading_*`` ->
  ``data_warmup`` (stage ``data_loading``; loading that overlaps training
  stays productive, as the library's "async" data loading); custom badput
  events -> ``eval`` with the event type as the stage (the library defines
  them as blocking work inside the training loop, such as evaluation);
  checkpoint ``save`` -> ``checkpoint_save`` (checkpoint-manager blocking
  time), ``restore`` -> ``checkpoint_load``.
- Steps: a ``train`` span from each recorded step's start to the next
  recorded step's start, cursor ``step -> next step``; the last step of an
  attempt runs to ``job_end_time`` if there is one (as the library counts
  it), otherwise its end is unknown and it gets no span.  Training is cut
  around blocking spans (checkpoint saves and custom badput events), the
  cursor shared in proportion to training time.  A step number that does
  not grow inside one attempt (an in-process rollback) ends the previous
  step without a span.

Where this and the library's ``GoodputCalculator`` agree and differ is
worked through, case by case, in ``tests/test_import_goodput.py``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..trace import TS_MAX_MS, TS_MIN_MS
from ..errors import Problem, TraceError
from .frames import TraceFrames
from .import_report import FileReport, ImportReport

JOB_NAME = "job_name"
STEP_COUNT, STEP_START = "step_count", "step_start_time"
JOB_START, JOB_END = "job_start_time", "job_end_time"
PAIRS = {  # start key, end key -> phase, stage
    ("tpu_init_start_time", "tpu_init_end_time"): ("hardware_setup", "tpu_initialization"),
    ("training_prep_start_time", "training_prep_end_time"): ("trainer_init", "training_preparation"),
    ("data_loading_start_time", "data_loading_end_time"): ("data_warmup", "data_loading"),
}
CUSTOM_TYPE, CUSTOM_START, CUSTOM_END = "custom_badput_event_type", "custom_badput_event_start_time", "custom_badput_event_end_time"
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
        raise TraceError(Problem(src, e.row, key, f"must be a number (seconds since the epoch or a duration), got {v!r}"))
    if key.endswith("_time") and not TS_MIN_MS <= v * 1000 <= TS_MAX_MS:
        raise TraceError(Problem(src, e.row, key, f"timestamp out of the plausible range 1990..2100: {v!r}"))
    return float(v)


def read_entries(path: Path) -> list[Entry]:
    """The entries of a JSON-lines file (``jsonPayload`` unwrapped); bad JSON is an input error."""
    src = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(Problem(src, None, None, f"cannot read entries: {exc}")) from None
    out, problems = [], []
    for row, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError as exc:
            problems.append(Problem(src, row, None, f"not a JSON object: {exc}"))
            continue
        if isinstance(d, dict) and isinstance(d.get("jsonPayload"), dict):
            d = d["jsonPayload"]
        if not isinstance(d, dict):
            problems.append(Problem(src, row, None, "each line must be a JSON object (one recorder entry)"))
            continue
        out.append(Entry(row, d))
    if problems:
        raise TraceError(problems)
    if not out:
        raise TraceError(Problem(src, None, None, "no entries in the file"))
    return out


def _import_job(job: str, entries: list[Entry], src: str, fr: FileReport) -> tuple[list[dict], list[dict]]:
    """Attempts and spans (epoch seconds) of one job from its entries, in file order."""
    starts = [(e.row, _num(e, JOB_START, src)) for e in entries if JOB_START in e.data]
    if not starts:
        raise TraceError(Problem(src, entries[0].row, JOB_START, f"job {job!r} has no job_start_time entry: its start is unknown"))
    starts.sort(key=lambda x: x[1])
    bounds = [t for _, t in starts]

    def attempt_of(t: float) -> int:
        k = -1
        for i, b in enumerate(bounds):
            if t >= b:
                k = i
        return k

    # collect timed items per attempt
    ends: dict[int, float] = {}
    last_seen: dict[int, float] = {}
    steps: dict[int, list[tuple[float, int, int]]] = {}
    raw_spans: list[tuple[str, str | None, float, float, int]] = []
    open_: dict[str, tuple[float, int]] = {}
    dropped_before: list[int] = []
    unknown: list[int] = []
    unmatched_end: dict[str, list[int]] = {}
    unmatched_start: dict[str, list[int]] = {}

    def seen(t: float, row: int) -> int:
        k = attempt_of(t)
        if k < 0:
            dropped_before.append(row)
        else:
            last_seen[k] = max(last_seen.get(k, -math.inf), t)
        return k

    for e in entries:
        d = e.data
        used = False
        if JOB_START in d:
            used = True
        if JOB_END in d:
            t = _num(e, JOB_END, src)
            k = seen(t, e.row)
            if k >= 0:
                ends[k] = max(ends.get(k, -math.inf), t)
            used = True
        if STEP_START in d:
            t = _num(e, STEP_START, src)
            s = d.get(STEP_COUNT)
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or abs(s) >= 2**53 or s != int(s):
                raise TraceError(Problem(src, e.row, STEP_COUNT, f"must be an integer step number, got {s!r}"))
            k = seen(t, e.row)
            if k >= 0:
                steps.setdefault(k, []).append((t, int(s), e.row))
            used = True
        for (ks, ke), (phase, stage) in PAIRS.items():
            if ks in d:
                if ks in open_:
                    unmatched_start.setdefault(ks, []).append(open_[ks][1])
                open_[ks] = (_num(e, ks, src), e.row)
                used = True
            elif ke in d:
                t = _num(e, ke, src)
                if ks in open_:
                    t0, row0 = open_.pop(ks)
                    raw_spans.append((phase, stage, t0, t, row0))
                    seen(t0, row0)
                    seen(t, e.row)
                else:
                    unmatched_end.setdefault(ke, []).append(e.row)
                used = True
        if CUSTOM_START in d or CUSTOM_END in d:
            ctype = str(d.get(CUSTOM_TYPE, "unknown")).lower()
            key = f"custom:{ctype}"
            if CUSTOM_START in d:
                if key in open_:
                    unmatched_start.setdefault(key, []).append(open_[key][1])
                open_[key] = (_num(e, CUSTOM_START, src), e.row)
            else:
                t = _num(e, CUSTOM_END, src)
                if key in open_:
                    t0, row0 = open_.pop(key)
                    raw_spans.append(("eval", ctype, t0, t, row0))
                    seen(t0, row0)
                    seen(t, e.row)
                else:
                    unmatched_end.setdefault(key, []).append(e.row)
            used = True
        et = d.get("event_type")
        if et in ("save", "restore", "emergency_restore"):
            keys = (CKPT_SAVE, CKPT_SAVE_FALLBACK) if et == "save" else (CKPT_RESTORE, CKPT_RESTORE_FALLBACK)
            pair = next((p for p in keys if d.get(p[0]) is not None and d.get(p[1]) is not None), None)
            if pair is None:
                raise TraceError(Problem(src, e.row, keys[0][0], f"checkpoint {et} record needs {keys[0][0]} and {keys[0][1]}"))
            t0, dur = _num(e, pair[0], src), _num(e, pair[1], src)
            phase = "checkpoint_save" if et == "save" else "checkpoint_load"
            raw_spans.append((phase, f"{et}:step {d.get('step')}", t0, t0 + dur, e.row))
            seen(t0, e.row)
            seen(t0 + dur, e.row)
            used = True
        if not used:
            unknown.append(e.row)
    for key, (t0, row0) in open_.items():
        unmatched_start.setdefault(key, []).append(row0)

    if dropped_before:
        fr.note("dropped", f"entry of job {job!r} dated before its first job_start_time", "belongs to no attempt", dropped_before)
    if unknown:
        fr.note("dropped", f"entry of job {job!r} with no recorder field", "not a goodput recorder or checkpoint entry", unknown)
    for key, rows in unmatched_start.items():
        fr.note("dropped", f"'{key}' start without an end", "the interval's length is unknown", rows)
    for key, rows in unmatched_end.items():
        fr.note("dropped", f"'{key}' end without a start", "the interval's length is unknown", rows)

    n = len(bounds)
    attempts: list[dict] = []
    for k in range(n):
        start = bounds[k]
        nxt = bounds[k + 1] if k + 1 < n else None
        if k in ends and (nxt is None or ends[k] <= nxt):
            end, reason = ends[k], ("completed" if nxt is None else "cancelled")
            if nxt is not None:
                fr.note("inferred", f"{job} attempt {k} end reason", "job_end_time recorded and another job_start follows: a planned stop, 'cancelled'")
        elif nxt is not None:
            end = min(max(last_seen.get(k, start), start), nxt)
            reason = "failure"
            fr.note("inferred", f"{job} attempt {k} end", "no job_end_time before the next job_start_time: ended at its last recorded instant, "
                    "as a failure (the entries cannot tell a failure from a preemption)", [starts[k][0]])
        else:
            end, reason = None, "running"
            fr.note("inferred", f"{job} attempt {k} end", "no job_end_time: still running (end left empty)", [starts[k][0]])
        attempts.append(dict(job_id=job, attempt=k, start=start, end=end, end_reason=reason))

    spans: list[dict] = []
    clipped = []
    for phase, stage, t0, t1, row in raw_spans:
        if t1 < t0:
            raise TraceError(Problem(src, row, "end", f"{phase} ends before it starts"))
        k = attempt_of(t0)
        if k < 0:
            continue
        a = attempts[k]
        hi = a["end"] if a["end"] is not None else t1
        if t1 > hi:
            clipped.append(row)
            t1 = hi
        if t1 > t0:
            spans.append(dict(job_id=job, attempt=k, phase=phase, stage=stage, start=t0, end=t1, cursor_start=None, cursor_end=None))
    if clipped:
        fr.note("clipped", f"{job}: interval running past its attempt's end", "cut at the attempt's end", clipped)

    rollback, unfinished = [], []
    for k, st in steps.items():
        st.sort()
        a = attempts[k]
        blocks = [(s["start"], s["end"]) for s in spans if s["attempt"] == k and s["phase"] in BLOCKING_PHASES]
        seq = list(st)
        for i, (t, s, row) in enumerate(seq):
            if i + 1 < len(seq):
                t_next, s_next = seq[i + 1][0], seq[i + 1][1]
                if s_next <= s:
                    rollback.append(seq[i + 1][2])
                    continue
            elif a["end"] is not None and a["end_reason"] in ("completed", "cancelled"):
                t_next, s_next = a["end"], s + 1
            else:
                unfinished.append(row)
                continue
            spans.extend(_train_pieces(job, k, t, t_next, float(s), float(s_next), blocks))
    if rollback:
        fr.note("inferred", f"{job}: step number not growing inside one attempt", "an in-process rollback: the step before it gets no train span", rollback)
    if unfinished:
        fr.note("inferred", f"{job}: last step of an attempt without job_end_time", "its end is unknown: no train span for it", unfinished)
    return attempts, spans


def _train_pieces(job: str, k: int, t0: float, t1: float, c0: float, c1: float, blocks: list[tuple[float, float]]) -> list[dict]:
    """``train`` spans for one step interval, cut around blocking spans; cursor linear in training time."""
    cuts = sorted((max(a, t0), min(b, t1)) for a, b in blocks if b > t0 and a < t1)
    pieces, t = [], t0
    for a, b in cuts:
        if a > t:
            pieces.append((t, a))
        t = max(t, b)
    if t < t1:
        pieces.append((t, t1))
    total = sum(b - a for a, b in pieces)
    out, done, c = [], 0.0, c0
    for a, b in pieces:
        done += b - a
        ce = c0 + (c1 - c0) * done / total
        out.append(dict(job_id=job, attempt=k, phase="train", stage="steps", start=a, end=b, cursor_start=c, cursor_end=ce))
        c = ce
    return out


def import_entries(path: str | Path, gpus: int = 1, synthetic: bool = False) -> tuple[TraceFrames, ImportReport]:
    """Import a recorder's entries (JSON lines): one job a ``job_name``.

    ``gpus`` is given to every job (the entries do not record it).  Set
    ``synthetic`` when the entries were generated rather than recorded from
    a real job; it is written to ``trace.json``.
    """
    path = Path(path)
    src = str(path)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise TraceError(Problem("--gpus", None, "gpus", f"must be an integer >= 1, got {gpus!r}"))
    report = ImportReport("goodput")
    fr = report.add_file(src)
    entries = read_entries(path)
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
            fr.note("inferred", "entries without job_name", f"the file holds one job; given to {names[0]!r}", [e.row for e in nameless])
        else:
            raise TraceError([Problem(src, e.row, JOB_NAME, "entry without job_name in a file holding several jobs") for e in nameless[:20]])
    if not names:
        raise TraceError(Problem(src, None, JOB_NAME, "no entry names its job (job_name)"))
    attempts, spans, jobs = [], [], []
    for job in names:
        a, s = _import_job(job, by_job[job], src, fr)
        attempts.extend(a)
        spans.extend(s)
        jobs.append(dict(job_id=job, model=job, gpus=gpus, source_file=path.name, synthetic=synthetic))
        fr.job_ids.append(job)
    fr.facts.update({"jobs": len(names), "attempts": len(attempts), "entries": len(entries)})
    if gpus == 1:
        fr.note("inferred", "gpus", "the entries do not record accelerators; every job has gpus = 1 (use --gpus)")
    metadata = {"synthetic": synthetic, "source": "ml-goodput-measurement recorder entries", "importer": "ettcore.importers.goodput",
                "source_files": [src]}
    return TraceFrames.from_rows(attempts, spans, jobs, metadata), report


class MemoryLogger:
    """An in-memory ``cloud_logger`` for ml-goodput-measurement (no Google Cloud, no network).

    ``GoodputRecorder`` writes entries into it and ``GoodputCalculator`` reads them
    back whole; ``entries`` can then be written as JSON lines for ``ett import goodput``.
    """

    def __init__(self) -> None:
        self.entries: list[dict] = []

    def write_cloud_logging_entry(self, entry: dict | None) -> None:
        if entry is not None:
            self.entries.append(dict(entry))

    def read_cloud_logging_entries(self, start_time=None, end_time=None, last_entry_info=None):
        return list(self.entries), (None, None)
