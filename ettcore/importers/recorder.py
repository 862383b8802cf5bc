"""Turn a recorder run folder (JSON lines written by :class:`ettcore.integrations.recorder.Recorder`) into a trace.

:func:`read_records` parses one recorder file; :func:`collect` gathers a run folder's records into the trace's
``jobs``, ``attempts`` and ``spans`` frames, closing what a crash left open; :func:`convert` writes them as a trace
folder and returns the notes it made (torn lines skipped, spans still open at a crash, closed at their last
``progress`` record for ``train``, else at the attempt's end; attempts without an end record).  The record kinds are
listed in :mod:`ettcore.integrations.recorder`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ettcore.errors import InputError, Problem

# The record format: the kinds of record a recorder file holds, and the end reasons of an attempt
END_REASONS = ("completed", "failure", "preemption", "cancelled")
RECORD_KINDS = ("job", "attempt_start", "attempt_end", "begin", "progress", "span")

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


def collect(
    directory: str | Path,
    *,
    open_last_attempt: str = "running",
    split_train: bool = True,
    attempt_ends: dict[tuple[str, int], float] | None = None,
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
    """
    import polars as pl

    if open_last_attempt not in ("running", "failure"):
        raise ValueError("open_last_attempt must be 'running' or 'failure'")
    directory = Path(directory)
    problems: list[Problem] = []
    jobs: dict[str, dict[str, Any]] = {}
    starts: dict[tuple[str, int], tuple[float, Record]] = {}
    ends: dict[tuple[str, int], tuple[float, str, Record]] = {}
    last_t: dict[tuple[str, int], float] = {}
    first_t: dict[tuple[str, int], float] = {}
    spans: list[dict[str, Any]] = []
    open_spans: dict[tuple[str, int], dict[str, Any]] = {}

    def seen(key: tuple[str, int], t: float) -> None:
        last_t[key] = max(last_t.get(key, t), t)
        first_t[key] = min(first_t.get(key, t), t)

    for path in _recorder_files(directory):
        records, torn = read_records(path)
        problems.extend(torn)
        for rec in records:
            kind = _need(rec, "k", (str,))
            if kind not in RECORD_KINDS:
                raise InputError(Problem(rec.file, rec.row, "k", f"unknown record kind {kind!r}", table="recorder"))
            job_id = _need(rec, "job_id", (str,))
            if kind == "job":
                gpus = _need(rec, "gpus", (int,))
                if gpus < 1:
                    raise InputError(
                        Problem(rec.file, rec.row, "gpus", "gpus must be >= 1", table="recorder", job_id=job_id)
                    )
                labels = rec.data.get("labels") or {}
                if not isinstance(labels, dict):
                    raise InputError(
                        Problem(
                            rec.file, rec.row, "labels", "labels must be an object", table="recorder", job_id=job_id
                        )
                    )
                model = _need(rec, "model", (str,), allow_none=True)
                jobs[job_id] = {"job_id": job_id, "model": model or job_id, "gpus": gpus, **labels}
                continue
            attempt = _need(rec, "attempt", (int,))
            if attempt < 0:
                raise InputError(
                    Problem(rec.file, rec.row, "attempt", "attempt must be >= 0", table="recorder", job_id=job_id)
                )
            key = (job_id, attempt)
            if kind == "attempt_start":
                t = float(_need(rec, "t", _NUM))
                if key in starts:
                    raise InputError(
                        Problem(
                            rec.file,
                            rec.row,
                            "k",
                            f"second attempt_start for attempt {attempt} "
                            f"(first: {starts[key][1].file} row {starts[key][1].row})",
                            table="recorder",
                            job_id=job_id,
                        )
                    )
                starts[key] = (t, rec)
                seen(key, t)
            elif kind == "attempt_end":
                t = float(_need(rec, "t", _NUM))
                reason = _need(rec, "reason", (str,))
                if reason not in END_REASONS:
                    raise InputError(
                        Problem(
                            rec.file,
                            rec.row,
                            "reason",
                            f"end reason {reason!r} is not one of {END_REASONS}",
                            table="recorder",
                            job_id=job_id,
                        )
                    )
                if key in ends:
                    raise InputError(
                        Problem(
                            rec.file,
                            rec.row,
                            "k",
                            f"second attempt_end for attempt {attempt}",
                            table="recorder",
                            job_id=job_id,
                        )
                    )
                ends[key] = (t, reason, rec)
                seen(key, t)
            else:
                span_id = _need(rec, "id", (int,))
                skey = (rec.file, span_id)
                if kind == "begin":
                    t = float(_need(rec, "t", _NUM))
                    phase = _need(rec, "phase", (str,))
                    cursor = _need(rec, "cursor", _NUM, allow_none=True)
                    if phase == "train" and cursor is None:
                        raise InputError(
                            Problem(
                                rec.file,
                                rec.row,
                                "cursor",
                                "a train span needs a cursor",
                                table="recorder",
                                job_id=job_id,
                            )
                        )
                    open_spans[skey] = {
                        "key": key,
                        "phase": phase,
                        "stage": _need(rec, "stage", (str,), allow_none=True),
                        "start": t,
                        "cursor": cursor,
                        "last_t": t,
                        "rec": rec,
                        "points": [(t, cursor)],
                    }
                    seen(key, t)
                elif kind == "progress":
                    t = float(_need(rec, "t", _NUM))
                    cursor = _need(rec, "cursor", _NUM)
                    o = open_spans.get(skey)
                    if o is None:
                        raise InputError(
                            Problem(
                                rec.file,
                                rec.row,
                                "id",
                                f"progress for span {span_id} that is not open",
                                table="recorder",
                                job_id=job_id,
                            )
                        )
                    o["cursor"], o["last_t"] = cursor, t
                    o["points"].append((t, cursor))
                    seen(key, t)
                else:  # span
                    start = float(_need(rec, "start", _NUM))
                    end = float(_need(rec, "end", _NUM))
                    phase = _need(rec, "phase", (str,))
                    cs = _need(rec, "cursor_start", _NUM, allow_none=True)
                    ce = _need(rec, "cursor_end", _NUM, allow_none=True)
                    if phase == "train" and (cs is None or ce is None):
                        raise InputError(
                            Problem(
                                rec.file,
                                rec.row,
                                "cursor_end" if cs is not None else "cursor_start",
                                "a train span needs cursor_start and cursor_end",
                                table="recorder",
                                job_id=job_id,
                            )
                        )
                    opened = open_spans.pop(skey, None)
                    stage = _need(rec, "stage", (str,), allow_none=True)
                    if phase == "train" and split_train and opened is not None:
                        points = [(start, cs)] + [p for p in opened["points"][1:] if start < p[0] < end] + [(end, ce)]
                        spans.extend(_train_pieces(job_id, attempt, stage, points))
                    else:
                        spans.append(
                            {
                                "job_id": job_id,
                                "attempt": attempt,
                                "phase": phase,
                                "stage": stage,
                                "start": start,
                                "end": end,
                                "cursor_start": cs,
                                "cursor_end": ce,
                            }
                        )
                    seen(key, start)
                    seen(key, end)

    # attempts: fill missing starts and ends
    keys = sorted(set(last_t))
    last_attempt: dict[str, int] = {}
    for job_id, attempt in keys:
        last_attempt[job_id] = max(last_attempt.get(job_id, attempt), attempt)
    attempts: list[dict[str, Any]] = []
    for key in keys:
        job_id, attempt = key
        if key in starts:
            start = starts[key][0]
        else:
            start = first_t[key]
            problems.append(
                Problem(
                    str(directory),
                    None,
                    "attempt_start",
                    f"attempt {attempt} has no attempt_start record: starts at its earliest record",
                    table="attempts",
                    job_id=job_id,
                )
            )
        if key in ends:
            end, reason = ends[key][0], ends[key][1]
        elif attempt < last_attempt[job_id] or open_last_attempt == "failure":
            end, reason = last_t[key], "failure"
            problems.append(
                Problem(
                    str(directory),
                    None,
                    "attempt_end",
                    f"attempt {attempt} has no attempt_end record: taken as a failure at its last record",
                    table="attempts",
                    job_id=job_id,
                )
            )
        else:
            end, reason = None, "running"
            problems.append(
                Problem(
                    str(directory),
                    None,
                    "attempt_end",
                    f"attempt {attempt} has no attempt_end record: still running (null end)",
                    table="attempts",
                    job_id=job_id,
                )
            )
        attempts.append(
            {"job_id": job_id, "attempt": attempt, "start": start, "end": end, "end_reason": reason, "_key": key}
        )
    end_of = {a["_key"]: a["end"] for a in attempts}

    for o in open_spans.values():
        rec: Record = o["rec"]
        job_id, attempt = o["key"]
        if o["phase"] == "train":
            close_t, how = o["last_t"], "its last progress record"
            cs, ce = rec.data.get("cursor"), o["cursor"]
        else:
            close_t = end_of.get(o["key"])
            how = "the attempt's end"
            if attempt_ends and o["key"] in attempt_ends and o["key"] not in ends:
                close_t, how = float(attempt_ends[o["key"]]), "the attempt's end in the scheduler's records"
            if close_t is None:
                close_t, how = last_t[o["key"]], "the attempt's last record"
            if close_t < o["start"]:  # an accounting's whole-second end can precede a span opened in its last second
                close_t, how = (
                    o["start"],
                    how + f" ({o['start'] - close_t:.3f} s before the span opened): at its start, no length",
                )
            cs = ce = None
        if o["phase"] == "train" and split_train:
            spans.extend(_train_pieces(job_id, attempt, o["stage"], o["points"]))
        else:
            spans.append(
                {
                    "job_id": job_id,
                    "attempt": attempt,
                    "phase": o["phase"],
                    "stage": o["stage"],
                    "start": o["start"],
                    "end": close_t,
                    "cursor_start": cs,
                    "cursor_end": ce,
                }
            )
        problems.append(
            Problem(
                rec.file,
                rec.row,
                "span",
                f"{o['phase']} span opened here was never closed: closed at {how}",
                table="spans",
                job_id=job_id,
            )
        )

    for job_id in last_attempt:
        jobs.setdefault(job_id, {"job_id": job_id, "model": job_id, "gpus": 1})

    ts = pl.Datetime("us", "UTC")

    def to_ts(col: str) -> pl.Expr:
        return (pl.col(col) * 1_000_000).round(0).cast(pl.Int64).cast(ts)

    for a in attempts:
        del a["_key"]
    att_df = pl.DataFrame(
        attempts,
        schema={
            "job_id": pl.String,
            "attempt": pl.Int64,
            "start": pl.Float64,
            "end": pl.Float64,
            "end_reason": pl.String,
        },
    )
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
    job_df = pl.DataFrame(list(jobs.values())).sort("job_id")
    return Conversion(att_df, span_df, job_df, problems)


def convert(
    directory: str | Path,
    out_dir: str | Path,
    *,
    open_last_attempt: str = "running",
    split_train: bool = True,
    metadata: dict[str, Any] | None = None,
    notes_relative_to: str | Path | None = None,
) -> Conversion:
    """Turn a recorder run folder into a trace folder (Parquet, written atomically).

    ``trace.json`` records the source and every note (torn lines skipped,
    spans closed at a crash, attempts without an end); ``metadata`` is merged
    into it (e.g. ``{"synthetic": False, "machine": ...}``); ``notes_relative_to``
    writes the notes' file names relative to that folder (for bundled data).
    """
    from ettcore.trace.writer import write_trace

    conv = collect(directory, open_last_attempt=open_last_attempt, split_train=split_train)
    meta = {
        "source": f"ettcore.recorder run folder {Path(directory).name}",  # as every converted trace says
        "recorder_notes": conv.note_lines(notes_relative_to),
    }
    meta.update(metadata or {})
    conv.out_dir = write_trace(out_dir, attempts=conv.attempts, spans=conv.spans, jobs=conv.jobs, metadata=meta)
    return conv
