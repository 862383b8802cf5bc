"""Turn a recorder run folder (JSON lines written by :class:`ettcore.integrations.recorder.Recorder`) into a trace.

:func:`read_records` parses one recorder file; :func:`collect` gathers a run folder's records into the trace's
``jobs``, ``attempts`` and ``spans`` frames, closing what a crash left open; :func:`convert` writes them as a trace
folder, with each rank's work and wait windows as its ``rank_timing`` table where the run folder kept them
(:func:`read_rank_timing`), and returns the notes it made (torn lines skipped, spans still open at a crash, closed at
their last ``progress`` record for ``train``, else at the attempt's end; attempts without an end record).  The record
kinds are listed in :mod:`ettcore.integrations.recorder`.

Each interruption's cause (docs/causes.md) is decided here, from what its ``attempt_end`` record says ended it (the
optional ``exception``, ``signal`` and ``exit_code``), with a :class:`~ettcore.causes.CauseMap`; an interruption whose
record says nothing (a ``SIGKILL``, an attempt without an end record) is ``unknown``, a preemption ``preemption``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ettcore.errors import InputError, Problem
from ettcore.vocabulary import VOCABULARY, Vocabulary

if TYPE_CHECKING:  # the recorder (inside a training job) imports this module: the cause rules load only to convert
    from ettcore.causes import CauseMap

# The record format: the kinds of record a recorder file holds, and the end reasons an attempt's end record may name
# (the vocabulary's, but the open one: an attempt without an end record is open)
END_REASONS = VOCABULARY.closed_end_reasons
RECORD_KINDS = ("job", "attempt_start", "attempt_end", "begin", "progress", "span")
# Each rank's last progress: one small JSON object a rank, replaced atomically, in this folder of the run folder
RANK_PROGRESS_DIR = "progress"
RANK_PROGRESS_FIELDS = {
    "job_id": (str,),
    "attempt": (int,),
    "rank": (int,),
    "node": (str,),
    "step": (int,),
    "cursor": (int, float),
    "t": (int, float),
}


def rank_progress_name(job_id: str, rank: int) -> str:
    """The file name of one rank's last progress (inside :data:`RANK_PROGRESS_DIR`)."""
    return f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', job_id)}-rank-{int(rank):05d}.json"


def _typed_fields(doc: Any, fields: dict[str, tuple], file: str, row: int | None, what: str) -> dict[str, Any]:
    """``doc``'s ``fields`` when it is a JSON object holding each with one of its types (a bool is no number), else an
    input error naming the file, the row (a line; None for a whole file) and the field."""
    if not isinstance(doc, dict):
        raise InputError(Problem(file, row, None, f"not a {what}: not a JSON object"))
    for key, kinds in fields.items():
        v = doc.get(key)
        if isinstance(v, bool) or not isinstance(v, kinds):
            names = "/".join(k.__name__ for k in kinds)
            raise InputError(Problem(file, row, key, f"expected {names}, got {v!r}"))
    return {k: doc[k] for k in fields}


def read_rank_progress(directory: str | Path) -> list[dict[str, Any]]:
    """Every rank's last progress kept in a run folder (``progress/*-rank-*.json``; none: an empty list), each
    ``{job_id, attempt, rank, node, step, cursor, t}`` (``t``: epoch seconds of the rank's last step).  A file that is
    not such an object is an input error naming the file and the field."""
    folder = Path(directory) / RANK_PROGRESS_DIR
    out = []
    for path in sorted(folder.glob("*-rank-*.json")) if folder.is_dir() else []:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InputError(Problem(str(path), None, None, f"not a rank progress file: {exc}")) from None
        out.append(_typed_fields(doc, RANK_PROGRESS_FIELDS, str(path), None, "rank progress file"))
    return out


# Each rank's work and wait per window (who held a slow job back): one JSON line a window, appended by the rank
# (ettcore.integrations.rank_timing), in this folder of the run folder
RANK_TIMING_DIR = "timing"
RANK_TIMING_FIELDS = {
    "job_id": (str,),
    "attempt": (int,),
    "rank": (int,),
    "node": (str,),
    "start": (int, float),
    "end": (int, float),
    "steps": (int,),
    "work_s": (int, float),
    "wait_s": (int, float),
}


def rank_timing_name(job_id: str, rank: int) -> str:
    """The file name of one rank's windows (inside :data:`RANK_TIMING_DIR`)."""
    return f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', job_id)}-rank-{int(rank):05d}.jsonl"


def read_rank_timing(directory: str | Path) -> list[dict[str, Any]]:
    """Every rank's windows kept in a run folder (``timing/*-rank-*.jsonl``; none: an empty list), in file then line
    order, each ``{job_id, attempt, rank, node, start, end, steps, work_s, wait_s}`` (``start``, ``end``: epoch
    seconds).  A line that is not such an object is an input error naming the file, the line and the field; a last
    line cut short by a rank that died while appending it is left out (the rank's earlier windows stand)."""
    folder = Path(directory) / RANK_TIMING_DIR
    out = []
    for path in sorted(folder.glob("*-rank-*.jsonl")) if folder.is_dir() else []:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(Problem(str(path), None, None, f"not a rank timing file: {exc}")) from None
        lines = text.split("\n")
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except ValueError as exc:
                if n == len(lines):  # no newline after it: cut short while being written
                    continue
                raise InputError(Problem(str(path), n, None, f"not a rank timing line: {exc}")) from None
            out.append(_typed_fields(doc, RANK_TIMING_FIELDS, str(path), n, "rank timing line"))
    return out


# --------------------------------------------------------------------------- reading


@dataclass
class Record:
    """One parsed record with where it came from (file, 1-based line)."""

    file: str
    row: int
    data: dict[str, Any]


def read_records(path: str | Path) -> tuple[list[Record], list[Problem]]:
    """Parse one recorder file.

    Returns the records and the non-fatal problems: a torn final line (no
    trailing newline, or not a JSON object) is reported and skipped.  A bad
    line anywhere else raises :class:`InputError` naming file and row.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(Problem(str(path), None, None, f"cannot read recorder file: {exc}")) from None
    lines = raw.split(b"\n")
    complete_tail = raw.endswith(b"\n") or raw == b""
    if complete_tail:
        lines = lines[:-1]
    records: list[Record] = []
    problems: list[Problem] = []
    last = len(lines)
    for row, line in enumerate(lines, start=1):
        data: Any = None
        err = ""
        try:
            data = json.loads(line.decode("utf-8"))
            if not isinstance(data, dict):
                err = "line is not a JSON object"
        except (UnicodeDecodeError, ValueError) as exc:
            err = f"line is not valid JSON ({exc})"
        if row == last and (err or not complete_tail):
            why = err or "no final newline"
            problems.append(
                Problem(
                    str(path),
                    row,
                    None,
                    f"torn final line ({why}; a crash mid-write): skipped, {len(line)} bytes",
                    table="recorder",
                )
            )
            continue
        if err:
            raise InputError(Problem(str(path), row, None, err, table="recorder"))
        records.append(Record(str(path), row, data))
    return records, problems


def _need(rec: Record, key: str, kinds: tuple[type, ...], *, allow_none: bool = False) -> Any:
    value = rec.data.get(key)
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, kinds):
        names = "/".join(k.__name__ for k in kinds)
        raise InputError(
            Problem(
                rec.file,
                rec.row,
                key,
                f"expected {names}, got {value!r}",
                table="recorder",
                job_id=rec.data.get("job_id") if isinstance(rec.data.get("job_id"), str) else None,
            )
        )
    return value


_NUM = (int, float)


@dataclass
class Conversion:
    """What :func:`convert` produced: the trace tables (Polars), the output folder, and the notes."""

    attempts: Any
    spans: Any
    jobs: Any
    problems: list[Problem] = field(default_factory=list)
    out_dir: Path | None = None

    def note_lines(self, relative_to: str | Path | None = None) -> list[str]:
        """One line per note; with ``relative_to``, file names are given relative to that folder."""
        if relative_to is None:
            return [p.line() for p in self.problems]
        root = str(Path(relative_to)) + os.sep
        return [p.line().replace(root, "") for p in self.problems]


def _recorder_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise InputError(Problem(str(directory), None, None, "recorder folder does not exist or is not a folder"))
    files = sorted(p for p in directory.glob("*.jsonl") if p.is_file())
    if not files:
        raise InputError(Problem(str(directory), None, None, "no recorder files (*.jsonl) in this folder"))
    return files


def _train_pieces(
    job_id: str, attempt: int, stage: str | None, points: list[tuple[float, float]]
) -> list[dict[str, Any]]:
    """Consecutive train spans through the (time, cursor) points; points at one instant keep the last cursor."""
    merged: list[tuple[float, float]] = []
    for t, c in points:
        if merged and t <= merged[-1][0]:
            merged[-1] = (merged[-1][0], c)
        else:
            merged.append((t, c))
    if len(merged) == 1:
        merged.append(merged[0])
    return [
        {
            "job_id": job_id,
            "attempt": attempt,
            "phase": "train",
            "stage": stage,
            "start": a[0],
            "end": b[0],
            "cursor_start": a[1],
            "cursor_end": b[1],
        }
        for a, b in zip(merged, merged[1:])
    ]


def _bad(rec: Record, fld: str, msg: str, job_id: str | None = None) -> InputError:
    """An input error about one record: its file, line and field."""
    return InputError(Problem(rec.file, rec.row, fld, msg, table="recorder", job_id=job_id))


@dataclass
class _Records:
    """Parse stage: a run folder's records, typed and checked (a bad record is an input error naming file, line and
    field).  ``(job id, attempt)`` keys the attempts; ``(file, span id)`` the spans a ``begin`` opened."""

    split_train: bool
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # the ``job`` records: jobs rows
    starts: dict[tuple[str, int], tuple[float, Record]] = field(default_factory=dict)
    ends: dict[tuple[str, int], tuple[float, str, Record]] = field(default_factory=dict)  # (t, reason, record)
    ended_by: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)  # an end's exception/signal/exit
    first_t: dict[tuple[str, int], float] = field(default_factory=dict)  # each attempt's first and last instant
    last_t: dict[tuple[str, int], float] = field(default_factory=dict)
    spans: list[dict[str, Any]] = field(default_factory=list)  # closed spans (train split at its progress records)
    open_spans: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)  # begun, not (yet) closed

    def _seen(self, key: tuple[str, int], t: float) -> None:
        self.last_t[key] = max(self.last_t.get(key, t), t)
        self.first_t[key] = min(self.first_t.get(key, t), t)

    def add(self, rec: Record) -> None:
        """Take one record (kinds: :data:`RECORD_KINDS`)."""
        kind = _need(rec, "k", (str,))
        if kind not in RECORD_KINDS:
            raise _bad(rec, "k", f"unknown record kind {kind!r}")
        job_id = _need(rec, "job_id", (str,))
        if kind == "job":
            self._job(rec, job_id)
            return
        attempt = _need(rec, "attempt", (int,))
        if attempt < 0:
            raise _bad(rec, "attempt", "attempt must be >= 0", job_id)
        key = (job_id, attempt)
        if kind == "attempt_start":
            self._attempt_start(rec, key)
        elif kind == "attempt_end":
            self._attempt_end(rec, key)
        elif kind == "begin":
            self._begin(rec, key)
        elif kind == "progress":
            self._progress(rec, key)
        else:
            self._span(rec, key)

    def _job(self, rec: Record, job_id: str) -> None:
        gpus = _need(rec, "gpus", (int,))
        if gpus < 1:
            raise _bad(rec, "gpus", "gpus must be >= 1", job_id)
        labels = rec.data.get("labels") or {}
        if not isinstance(labels, dict):
            raise _bad(rec, "labels", "labels must be an object", job_id)
        model = _need(rec, "model", (str,), allow_none=True)
        self.jobs[job_id] = {"job_id": job_id, "model": model or job_id, "gpus": gpus, **labels}

    def _attempt_start(self, rec: Record, key: tuple[str, int]) -> None:
        t = float(_need(rec, "t", _NUM))
        if key in self.starts:
            first = self.starts[key][1]
            msg = f"second attempt_start for attempt {key[1]} (first: {first.file} row {first.row})"
            raise _bad(rec, "k", msg, key[0])
        self.starts[key] = (t, rec)
        self._seen(key, t)

    def _attempt_end(self, rec: Record, key: tuple[str, int]) -> None:
        t = float(_need(rec, "t", _NUM))
        reason = _need(rec, "reason", (str,))
        if reason not in END_REASONS:
            raise _bad(rec, "reason", f"end reason {reason!r} is not one of {END_REASONS}", key[0])
        if key in self.ends:
            raise _bad(rec, "k", f"second attempt_end for attempt {key[1]}", key[0])
        self.ends[key] = (t, reason, rec)
        why = {"exception": _need(rec, "exception", (str,), allow_none=True)}
        for fld in ("signal", "exit_code"):
            why[fld] = _need(rec, fld, (int,), allow_none=True)
            if why[fld] is not None and why[fld] < 0:
                raise _bad(rec, fld, f"{fld} must be >= 0", key[0])
        self.ended_by[key] = why
        self._seen(key, t)

    def _begin(self, rec: Record, key: tuple[str, int]) -> None:
        skey = (rec.file, _need(rec, "id", (int,)))
        t = float(_need(rec, "t", _NUM))
        phase = _need(rec, "phase", (str,))
        cursor = _need(rec, "cursor", _NUM, allow_none=True)
        if phase == "train" and cursor is None:
            raise _bad(rec, "cursor", "a train span needs a cursor", key[0])
        stage = _need(rec, "stage", (str,), allow_none=True)
        self.open_spans[skey] = {
            "key": key,
            "phase": phase,
            "stage": stage,
            "start": t,
            "cursor": cursor,
            "last_t": t,
            "rec": rec,
            "points": [(t, cursor)],
        }
        self._seen(key, t)

    def _progress(self, rec: Record, key: tuple[str, int]) -> None:
        span_id = _need(rec, "id", (int,))
        t = float(_need(rec, "t", _NUM))
        cursor = _need(rec, "cursor", _NUM)
        o = self.open_spans.get((rec.file, span_id))
        if o is None:
            raise _bad(rec, "id", f"progress for span {span_id} that is not open", key[0])
        o["cursor"], o["last_t"] = cursor, t
        o["points"].append((t, cursor))
        self._seen(key, t)

    def _span(self, rec: Record, key: tuple[str, int]) -> None:
        skey = (rec.file, _need(rec, "id", (int,)))
        start = float(_need(rec, "start", _NUM))
        end = float(_need(rec, "end", _NUM))
        phase = _need(rec, "phase", (str,))
        cs = _need(rec, "cursor_start", _NUM, allow_none=True)
        ce = _need(rec, "cursor_end", _NUM, allow_none=True)
        if phase == "train" and (cs is None or ce is None):
            fld = "cursor_end" if cs is not None else "cursor_start"
            raise _bad(rec, fld, "a train span needs cursor_start and cursor_end", key[0])
        opened = self.open_spans.pop(skey, None)
        stage = _need(rec, "stage", (str,), allow_none=True)
        if phase == "train" and self.split_train and opened is not None:
            points = [(start, cs)] + [p for p in opened["points"][1:] if start < p[0] < end] + [(end, ce)]
            self.spans.extend(_train_pieces(key[0], key[1], stage, points))
        else:
            self.spans.append(_span_row(key, phase, stage, start, end, cs, ce))
        self._seen(key, start)
        self._seen(key, end)


def _span_row(key: tuple[str, int], phase: str, stage: str | None, start: float, end: float, cs: Any, ce: Any) -> dict:
    """A span row of attempt ``key`` (job id, attempt)."""
    return {
        "job_id": key[0],
        "attempt": key[1],
        "phase": phase,
        "stage": stage,
        "start": start,
        "end": end,
        "cursor_start": cs,
        "cursor_end": ce,
    }


def _read_folder(directory: Path, split_train: bool, notes: list[Problem]) -> _Records:
    """Parse stage: every recorder file of ``directory``, in name order; torn final lines are noted in ``notes``."""
    recs = _Records(split_train)
    for path in _recorder_files(directory):
        records, torn = read_records(path)
        notes.extend(torn)
        for rec in records:
            recs.add(rec)
    return recs


def _attempt_note(directory: Path, fld: str, msg: str, job_id: str) -> Problem:
    return Problem(str(directory), None, fld, msg, table="attempts", job_id=job_id)


def _end_and_reason(
    recs: _Records, key: tuple[str, int], last_attempt: int, open_last_attempt: str, directory: Path, notes: list
) -> tuple[float | None, str]:
    """Build stage: (end, reason) of attempt ``key``: its ``attempt_end`` record; without one, a failure at its last
    record when a later attempt follows (or with ``open_last_attempt="failure"``), else running (noted)."""
    job_id, attempt = key
    if key in recs.ends:
        return recs.ends[key][0], recs.ends[key][1]
    if attempt < last_attempt or open_last_attempt == "failure":
        msg = f"attempt {attempt} has no attempt_end record: taken as a failure at its last record"
        notes.append(_attempt_note(directory, "attempt_end", msg, job_id))
        return recs.last_t[key], "failure"
    msg = f"attempt {attempt} has no attempt_end record: still running (null end)"
    notes.append(_attempt_note(directory, "attempt_end", msg, job_id))
    return None, "running"


def _attempts(
    recs: _Records, directory: Path, open_last_attempt: str, notes: list[Problem], cause_map: CauseMap
) -> list[dict[str, Any]]:
    """Build stage: the attempt rows, in (job, attempt) order; an attempt without ``attempt_start`` starts at its
    earliest record (noted), its end from :func:`_end_and_reason`, an interruption's cause from what its end record
    says ended it (``cause_map``)."""
    from ettcore.causes import Signals

    keys = sorted(set(recs.last_t))
    last_attempt: dict[str, int] = {}
    for job_id, attempt in keys:
        last_attempt[job_id] = max(last_attempt.get(job_id, attempt), attempt)
    attempts: list[dict[str, Any]] = []
    for key in keys:
        job_id, attempt = key
        if key in recs.starts:
            start = recs.starts[key][0]
        else:
            start = recs.first_t[key]
            msg = f"attempt {attempt} has no attempt_start record: starts at its earliest record"
            notes.append(_attempt_note(directory, "attempt_start", msg, job_id))
        end, reason = _end_and_reason(recs, key, last_attempt[job_id], open_last_attempt, directory, notes)
        cause = cause_map.classify(Signals("recorder", reason, **recs.ended_by.get(key, {})))
        row = {"job_id": job_id, "attempt": attempt, "start": start, "end": end, "end_reason": reason}
        attempts.append({**row, "cause": cause})
    return attempts


def _close_time(
    o: dict[str, Any], recs: _Records, end_of: dict, attempt_ends: dict[tuple[str, int], float] | None
) -> tuple[float, str]:
    """Build stage: (time, how said) a non-train span left open closes at: its attempt's end (the scheduler's, given
    in ``attempt_ends``, for an attempt without ``attempt_end``), else its attempt's last record; never before it
    opened."""
    key = o["key"]
    close_t, how = end_of.get(key), "the attempt's end"
    if attempt_ends and key in attempt_ends and key not in recs.ends:
        close_t, how = float(attempt_ends[key]), "the attempt's end in the scheduler's records"
    if close_t is None:
        close_t, how = recs.last_t[key], "the attempt's last record"
    if close_t < o["start"]:  # an accounting's whole-second end can precede a span opened in its last second
        how += f" ({o['start'] - close_t:.3f} s before the span opened): at its start, no length"
        close_t = o["start"]
    return close_t, how


def _close_open_spans(
    recs: _Records, end_of: dict, attempt_ends: dict[tuple[str, int], float] | None, notes: list[Problem]
) -> list[dict[str, Any]]:
    """Build stage: the spans a crash left open, closed (each noted): a ``train`` span at its last ``progress``
    record, any other by :func:`_close_time`."""
    spans: list[dict[str, Any]] = []
    for o in recs.open_spans.values():
        rec: Record = o["rec"]
        if o["phase"] == "train":
            close_t, how = o["last_t"], "its last progress record"
            cs, ce = rec.data.get("cursor"), o["cursor"]
        else:
            close_t, how = _close_time(o, recs, end_of, attempt_ends)
            cs = ce = None
        if o["phase"] == "train" and recs.split_train:
            spans.extend(_train_pieces(o["key"][0], o["key"][1], o["stage"], o["points"]))
        else:
            spans.append(_span_row(o["key"], o["phase"], o["stage"], o["start"], close_t, cs, ce))
        msg = f"{o['phase']} span opened here was never closed: closed at {how}"
        notes.append(Problem(rec.file, rec.row, "span", msg, table="spans", job_id=o["key"][0]))
    return spans


def _frames(attempts: list[dict], spans: list[dict], jobs: list[dict]) -> tuple[Any, Any, Any]:
    """Build stage: the attempts, spans and jobs tables (Polars, UTC microsecond timestamps), sorted."""
    import polars as pl

    ts = pl.Datetime("us", "UTC")

    def to_ts(col: str) -> pl.Expr:
        return (pl.col(col) * 1_000_000).round(0).cast(pl.Int64).cast(ts)

    a_schema = {
        "job_id": pl.String,
        "attempt": pl.Int64,
        "start": pl.Float64,
        "end": pl.Float64,
        "end_reason": pl.String,
    }
    if any(a.get("cause") is not None for a in attempts):  # the optional column, only when some attempt has one
        a_schema["cause"] = pl.String
    att_df = pl.DataFrame([{k: a.get(k) for k in a_schema} for a in attempts], schema=a_schema)
    att_df = att_df.with_columns(to_ts("start"), to_ts("end")).sort("job_id", "attempt")
    span_df = pl.DataFrame(
        spans,
        schema={
            "job_id": pl.String,
            "attempt": pl.Int64,
            "phase": pl.String,
            "stage": pl.String,
            "start": pl.Float64,
            "end": pl.Float64,
            "cursor_start": pl.Float64,
            "cursor_end": pl.Float64,
        },
    )
    span_df = span_df.with_columns(to_ts("start"), to_ts("end")).sort("job_id", "attempt", "start", "end")
    return att_df, span_df, pl.DataFrame(jobs).sort("job_id")


def collect(
    directory: str | Path,
    *,
    open_last_attempt: str = "running",
    split_train: bool = True,
    attempt_ends: dict[tuple[str, int], float] | None = None,
    cause_map: CauseMap | None = None,
) -> Conversion:
    """Read every recorder file in ``directory`` into trace tables (no files written).

    Rules, each applied with a note in ``problems``:

    - a torn final line of a file is skipped;
    - a span still open when its attempt died (``begin`` without ``span``) is
      closed at its last ``progress`` record if it is a ``train`` span (time
      after that is left unattributed: its cursor is unknown), otherwise at the
      attempt's end;
    - an attempt without ``attempt_start`` starts at its earliest record;
    - an attempt without ``attempt_end`` that is followed by a later attempt
      ended in ``failure`` at its last record; the job's last attempt without
      an end is ``running`` (null end) or, with ``open_last_attempt="failure"``,
      a failure at its last record.

    ``attempt_ends`` maps ``(job_id, attempt)`` to the attempt's end known from
    elsewhere (a scheduler's accounting, epoch seconds): a non-train span still
    open in such an attempt without an ``attempt_end`` record is closed there
    rather than at the attempt's last record (at its own start, with no length,
    when that end is before the span opened: Slurm's times are whole seconds).

    With ``split_train`` (the default) every ``progress`` record also splits
    its train span into consecutive pieces, so the data cursor is piecewise
    linear between records instead of linear over the whole span (the spec
    takes progress as linear within a span; slow first steps after a restart
    would otherwise bend the productive/replay boundary).

    Each interruption's cause comes from its end record's ``exception``, ``signal`` and ``exit_code`` through
    ``cause_map`` (default: the shipped rules, :func:`ettcore.causes.load_cause_map`).

    The stages: parse (:func:`_read_folder`), build (:func:`_attempts`, :func:`_close_open_spans`,
    :func:`_frames`); the notes go, in the order made, to one list, the conversion's ``problems``.
    """
    if open_last_attempt not in ("running", "failure"):
        raise ValueError("open_last_attempt must be 'running' or 'failure'")
    from ettcore.causes import load_cause_map

    directory = Path(directory)
    notes: list[Problem] = []
    recs = _read_folder(directory, split_train, notes)
    attempts = _attempts(recs, directory, open_last_attempt, notes, cause_map or load_cause_map())
    end_of = {(a["job_id"], a["attempt"]): a["end"] for a in attempts}
    spans = recs.spans + _close_open_spans(recs, end_of, attempt_ends, notes)
    jobs = dict(recs.jobs)
    for job_id, _ in sorted(set(recs.last_t)):
        jobs.setdefault(job_id, {"job_id": job_id, "model": job_id, "gpus": 1})
    return Conversion(*_frames(attempts, spans, list(jobs.values())), notes)


def convert(
    directory: str | Path,
    out_dir: str | Path,
    *,
    open_last_attempt: str = "running",
    split_train: bool = True,
    metadata: dict[str, Any] | None = None,
    notes_relative_to: str | Path | None = None,
    cause_mapping: str | Path | None = None,
    causes_file: str | Path | None = None,
    vocabulary: Vocabulary | None = None,
) -> Conversion:
    """Turn a recorder run folder into a trace folder (Parquet, written atomically).

    ``trace.json`` records the source and every note (torn lines skipped,
    spans closed at a crash, attempts without an end); ``metadata`` is merged
    into it (e.g. ``{"synthetic": False, "machine": ...}``); ``notes_relative_to``
    writes the notes' file names relative to that folder (for bundled data); ``cause_mapping``: a user's
    cause-mapping file, its rules tried before the shipped ones (docs/causes.md); ``causes_file`` (a user's causes
    file) or ``vocabulary`` (one read before): the causes those rules may name beside the package's
    (:func:`ettcore.causes.load_cause_map`).
    """
    from ettcore.causes import load_cause_map
    from ettcore.trace.writer import write_trace

    cause_map = load_cause_map(cause_mapping, causes_file, vocabulary)
    conv = collect(directory, open_last_attempt=open_last_attempt, split_train=split_train, cause_map=cause_map)
    meta = {
        "source": f"ettcore.recorder run folder {Path(directory).name}",  # as every converted trace says
        "recorder_notes": conv.note_lines(notes_relative_to),
    }
    ranks = read_rank_progress(directory)
    if ranks:  # each rank's last progress, for live hang detection (ettcore.metric.hangs)
        meta["rank_progress"] = ranks
    meta.update(metadata or {})
    windows = read_rank_timing(directory)
    conv.out_dir = write_trace(
        out_dir,
        attempts=conv.attempts,
        spans=conv.spans,
        jobs=conv.jobs,
        rank_timing=rank_timing_frame(windows) if windows else None,
        metadata=meta,
    )
    return conv


def rank_timing_frame(windows: list[dict[str, Any]]) -> Any:
    """The trace's ``rank_timing`` table (docs/trace-format.md) of the windows of :func:`read_rank_timing`: one row a
    window, ``start`` and ``end`` as UTC timestamps (microseconds), in job, attempt, rank and start order."""
    import polars as pl

    ts = pl.Datetime("us", "UTC")
    schema = {
        "job_id": pl.String,
        "attempt": pl.Int64,
        "rank": pl.Int64,
        "node": pl.String,
        "start": pl.Float64,
        "end": pl.Float64,
        "steps": pl.Int64,
        "work_s": pl.Float64,
        "wait_s": pl.Float64,
    }
    frame = pl.DataFrame([{k: w[k] for k in schema} for w in windows], schema=schema)
    return frame.with_columns(
        *((pl.col(c) * 1_000_000).round(0).cast(pl.Int64).cast(ts) for c in ("start", "end"))
    ).sort("job_id", "attempt", "rank", "start")
