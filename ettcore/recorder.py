"""Record a training job's trace from inside the job (no PyTorch needed).

Drop-in use in a training loop::

    rec = Recorder(run_dir, job_id="my-job", attempt=0)
    rec.job(model="ranker", gpus=8, variant="baseline")
    rec.attempt_start()
    with rec.phase("trainer_init", stage="process_group_init"):
        ...
    with rec.phase("pt2_compile"):
        ...
    with rec.train_span(cursor=step) as span:
        for batch in data:
            train_step(batch)
            step += 1
            span.advance(step)            # cheap: a clock read and a compare
    rec.attempt_end("completed")
    rec.close(trace_dir=run_dir / "trace")   # Parquet trace of the whole run folder

Storage
    Each :class:`Recorder` appends JSON lines to its own file in the run folder
    (``<job>-a<attempt>-<writer>-<n>.jsonl``, created exclusively, never
    re-opened), so several processes (a supervisor writing attempt start and
    end, the attempt writing its spans) never interleave.  Every record is one
    ``os.write`` of a complete line on an ``O_APPEND`` descriptor: a process
    killed between records (``SIGKILL``) loses nothing it wrote.  A machine or
    disk failure in the middle of a write can leave a *torn* final line (no
    newline, or not valid JSON); :func:`read_records` detects it, reports it as
    a :class:`~ettcore.errors.Problem` and skips that one line; any other bad
    line is an input error (:class:`~ettcore.errors.TraceError`).
    ``fsync=True`` also forces each record to disk.

Records (one JSON object a line; ``t``/``start``/``end`` are epoch seconds)
    ``job``            job_id, model, gpus, labels
    ``attempt_start``  job_id, attempt, t
    ``attempt_end``    job_id, attempt, t, reason (completed|failure|preemption|cancelled)
    ``begin``          job_id, attempt, id, phase, stage, t [, cursor]   a span opened
    ``progress``       job_id, attempt, id, t, cursor                    an open train span's latest cursor
    ``span``           job_id, attempt, id, phase, stage, start, end [, cursor_start, cursor_end]  a span closed

Overhead
    :meth:`TrainSpan.advance` only stores the cursor and reads the clock; it
    writes a ``progress`` line at most every ``progress_interval_s`` seconds
    (default 1 s).  ``benchmarks/recorder_overhead.py`` measures the cost per
    step against a 10 ms step (target: under 1%).

Failure isolation
    The recorder never raises into the training loop: any error of its own
    (unwritable folder, full disk, a bad argument) is caught, counted in
    :attr:`Recorder.errors`, reported once through :mod:`warnings`, and the
    recorder carries on (later records are still attempted).  Exceptions from
    the user's code inside ``phase()`` are never swallowed.

Conversion
    :func:`convert` turns a run folder into a trace folder (``attempts``,
    ``spans``, ``jobs`` Parquet and ``trace.json``) and returns the notes it
    made: torn lines skipped, spans still open at a crash (closed at their last
    ``progress`` record for ``train``, else at the attempt's end), attempts
    without an end record.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .errors import Problem, TraceError

END_REASONS = ("completed", "failure", "preemption", "cancelled")
RECORD_KINDS = ("job", "attempt_start", "attempt_end", "begin", "progress", "span")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class RecorderWarning(RuntimeWarning):
    """Emitted (once per recorder) when the recorder hits an error of its own."""


# --------------------------------------------------------------------------- writing


class _Span:
    """A non-train phase span (context manager); records ``begin`` on entry, ``span`` on exit.

    Hooks that see a phase start and end in two different calls (a framework
    callback) use :meth:`open` and :meth:`close` instead, optionally with an
    explicit time ``t`` (epoch seconds on the recorder's clock), so that one
    phase can end at the very instant the next one starts.
    """

    __slots__ = ("_rec", "_phase", "_stage", "_id", "_start")

    def __init__(self, rec: "Recorder", phase: str, stage: str | None):
        self._rec, self._phase, self._stage = rec, phase, stage
        self._id = -1
        self._start = 0.0

    def open(self, t: float | None = None) -> "_Span":
        """Record the ``begin`` line (at ``t``, default now)."""
        rec = self._rec
        try:
            self._start = rec._clock() if t is None else float(t)
            self._id = rec._next_id()
            rec._emit({"k": "begin", "id": self._id, "phase": self._phase, "stage": self._stage, "t": self._start})
        except Exception as exc:  # noqa: BLE001 - the recorder must never stop training
            rec._fail(exc)
        return self

    def close(self, t: float | None = None) -> None:
        """Record the ``span`` line (ending at ``t``, default now)."""
        rec = self._rec
        try:
            rec._emit({"k": "span", "id": self._id, "phase": self._phase, "stage": self._stage, "start": self._start,
                       "end": rec._clock() if t is None else float(t)})
        except Exception as err:  # noqa: BLE001
            rec._fail(err)

    def __enter__(self) -> "_Span":
        return self.open()

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close()
        return False  # never swallow the user's exception


class TrainSpan:
    """An open ``train`` span.  Call :meth:`advance` after every step with the new data cursor.

    The span's productive/replay split is computed later from ``cursor_start``
    and ``cursor_end`` (trace spec section 3: progress is taken as linear in
    time within a span), so the cursor must only grow with new data (examples,
    batches or steps consumed).
    """

    __slots__ = ("_rec", "_id", "_start", "_cursor_start", "cursor", "_last_write", "_interval", "_closed")

    def __init__(self, rec: "Recorder", cursor: float):
        self._rec = rec
        self._id = -1
        self._start = 0.0
        self._cursor_start = cursor
        self.cursor = cursor
        self._last_write = 0.0
        self._interval = rec.progress_interval_s
        self._closed = False

    def __enter__(self) -> "TrainSpan":
        rec = self._rec
        try:
            self._start = self._last_write = rec._clock()
            self._id = rec._next_id()
            rec._emit({"k": "begin", "id": self._id, "phase": "train", "stage": None, "t": self._start, "cursor": self._cursor_start})
            rec._train = self
        except Exception as exc:  # noqa: BLE001
            rec._fail(exc)
        return self

    def advance(self, cursor: float) -> None:
        """Note that the data cursor now stands at ``cursor`` (cost: one clock read, one compare)."""
        self.cursor = cursor
        try:
            now = self._rec._clock()
            if now - self._last_write >= self._interval:
                self._last_write = now
                self._rec._emit({"k": "progress", "id": self._id, "t": now, "cursor": cursor})
        except Exception as exc:  # noqa: BLE001
            self._rec._fail(exc)

    def close(self) -> None:
        """Close the span at the current time and cursor (idempotent)."""
        if self._closed:
            return
        self._closed = True
        rec = self._rec
        try:
            if rec._train is self:
                rec._train = None
            rec._emit(
                {
                    "k": "span",
                    "id": self._id,
                    "phase": "train",
                    "stage": None,
                    "start": self._start,
                    "end": rec._clock(),
                    "cursor_start": self._cursor_start,
                    "cursor_end": self.cursor,
                }
            )
        except Exception as exc:  # noqa: BLE001
            rec._fail(exc)

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close()
        return False


def _job_and_attempt(job_id: str | None, attempt: int | None) -> tuple[str, int]:
    """The job id and attempt a recorder writes: as given, else from the scheduler's environment.

    Inside a Slurm job (:func:`ettcore.integrations.slurm.job_from_environment`)
    the job id is the one ``sacct`` shows and the attempt is ``SLURM_RESTART_COUNT``
    (0 on a first run).  Outside any scheduler the attempt defaults to 0.
    """
    if job_id is None or attempt is None:
        from .integrations.slurm import job_from_environment

        found = job_from_environment()
        if found is not None:
            job_id = found.job_id if job_id is None else job_id
            attempt = found.attempt if attempt is None else attempt
    if job_id is None:
        raise ValueError("Recorder needs a job_id: none given and none in the environment (SLURM_JOB_ID)")
    return job_id, 0 if attempt is None else attempt


class Recorder:
    """Append-only JSONL recorder for one writer of one attempt of one job.

    ``directory``: the run folder (created if missing).  ``job_id``, ``attempt``:
    what every record belongs to; where not given, they come from the scheduler's
    environment (:func:`_job_and_attempt`), else the attempt is 0 and a missing job
    id is a :class:`ValueError`.  ``writer``: a name for this writer's file
    (e.g. ``"supervisor"``, ``"trainer"``).  ``clock``: seconds since the Unix
    epoch (``time.time`` by default; all writers of one run must share it).
    ``fsync``: force every record to disk (survives power loss; slower).
    Thread-safe: records from several threads are written whole, one at a time.
    """

    def __init__(
        self,
        directory: str | Path,
        job_id: str | None = None,
        attempt: int | None = None,
        *,
        writer: str = "main",
        progress_interval_s: float = 1.0,
        clock: Callable[[], float] = time.time,
        fsync: bool = False,
    ) -> None:
        self.directory = Path(directory)
        job_id, attempt = _job_and_attempt(job_id, attempt)
        self.job_id = str(job_id)
        self.attempt = int(attempt)
        self.writer = writer
        self.progress_interval_s = float(progress_interval_s)
        self._clock = clock
        self._fsync = fsync
        self._lock = threading.Lock()
        self._ids = 0
        self._fd: int | None = None
        self._train: TrainSpan | None = None
        self._warned = False
        self.errors = 0
        self.last_error: BaseException | None = None
        self.path: Path | None = None
        self._prefix = '{"job_id":%s,"attempt":%d,' % (json.dumps(self.job_id), self.attempt)
        try:
            self._open()
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    # -- plumbing -------------------------------------------------------------------

    def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        stem = f"{_SAFE.sub('_', self.job_id)}-a{self.attempt:04d}-{_SAFE.sub('_', self.writer)}"
        for n in range(10_000):
            path = self.directory / f"{stem}-{n}.jsonl"
            try:
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            except FileExistsError:
                continue
            self.path = path
            return
        raise OSError(f"no free file name for {stem} in {self.directory}")

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def _emit(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            raise OSError("recorder file is not open")
        line = (self._prefix + json.dumps(record, separators=(",", ":"))[1:] + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, line)
            if self._fsync:
                os.fsync(self._fd)

    def _fail(self, exc: BaseException) -> None:
        self.errors += 1
        self.last_error = exc
        if not self._warned:
            self._warned = True
            try:
                warnings.warn(f"ettcore recorder error (training continues): {exc!r}", RecorderWarning, stacklevel=3)
            except Exception:  # noqa: BLE001 - e.g. warnings turned into errors
                pass

    def _safe(self, record: dict[str, Any]) -> None:
        try:
            self._emit(record)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    # -- public API -----------------------------------------------------------------

    def now(self) -> float:
        """The recorder's clock (epoch seconds)."""
        return self._clock()

    def job(self, model: str | None = None, gpus: int = 1, **labels: Any) -> None:
        """Describe the job (``jobs`` table row): model, GPUs held, any labels."""
        self._safe({"k": "job", "model": model, "gpus": gpus, "labels": labels})

    def attempt_start(self, t: float | None = None) -> None:
        """Hardware allocated to this attempt (``t`` defaults to now)."""
        try:
            self._emit({"k": "attempt_start", "t": self._clock() if t is None else float(t)})
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def attempt_end(self, reason: str, t: float | None = None) -> None:
        """Hardware released; ``reason`` is one of completed, failure, preemption, cancelled."""
        try:
            if reason not in END_REASONS:
                raise ValueError(f"end reason {reason!r} is not one of {END_REASONS}")
            if self._train is not None:
                self._train.close()
            self._emit({"k": "attempt_end", "t": self._clock() if t is None else float(t), "reason": reason})
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def phase(self, name: str, stage: str | None = None) -> _Span:
        """Context manager: a span of phase ``name`` (optionally a finer ``stage``) around the block."""
        return _Span(self, name, stage)

    def span(
        self,
        phase: str,
        start: float,
        end: float,
        *,
        stage: str | None = None,
        cursor_start: float | None = None,
        cursor_end: float | None = None,
    ) -> None:
        """Record an already finished span (e.g. one measured before the recorder existed)."""
        try:
            rec: dict[str, Any] = {"k": "span", "id": self._next_id(), "phase": phase, "stage": stage,
                                   "start": float(start), "end": float(end)}
            if cursor_start is not None or cursor_end is not None:
                rec["cursor_start"], rec["cursor_end"] = cursor_start, cursor_end
            self._emit(rec)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def train_span(self, cursor: float) -> TrainSpan:
        """Context manager: a ``train`` span starting at data cursor ``cursor``; call ``advance`` per step."""
        return TrainSpan(self, cursor)

    def advance(self, cursor: float) -> None:
        """Advance the open train span (same as ``TrainSpan.advance``); ignored when none is open."""
        span = self._train
        if span is not None:
            span.advance(cursor)

    def close(self, trace_dir: str | Path | None = None, **convert_kwargs: Any) -> "Conversion | None":
        """Close the file; with ``trace_dir``, also convert the whole run folder to a Parquet trace there.

        Conversion problems are recorder errors too (counted, warned), so this never raises.
        """
        if self._train is not None:
            self._train.close()
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError as exc:
                self._fail(exc)
        if trace_dir is None:
            return None
        try:
            return convert(self.directory, trace_dir, **convert_kwargs)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
            return None

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close()
        return False


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
    line anywhere else raises :class:`TraceError` naming file and row.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceError(Problem(str(path), None, None, f"cannot read recorder file: {exc}")) from None
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
            problems.append(Problem(str(path), row, None,
                                    f"torn final line ({why}; a crash mid-write): skipped, {len(line)} bytes", table="recorder"))
            continue
        if err:
            raise TraceError(Problem(str(path), row, None, err, table="recorder"))
        records.append(Record(str(path), row, data))
    return records, problems


def _need(rec: Record, key: str, kinds: tuple[type, ...], *, allow_none: bool = False) -> Any:
    value = rec.data.get(key)
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, kinds):
        names = "/".join(k.__name__ for k in kinds)
        raise TraceError(Problem(rec.file, rec.row, key, f"expected {names}, got {value!r}", table="recorder",
                                 job_id=rec.data.get("job_id") if isinstance(rec.data.get("job_id"), str) else None))
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
        raise TraceError(Problem(str(directory), None, None, "recorder folder does not exist or is not a folder"))
    files = sorted(p for p in directory.glob("*.jsonl") if p.is_file())
    if not files:
        raise TraceError(Problem(str(directory), None, None, "no recorder files (*.jsonl) in this folder"))
    return files


def _train_pieces(job_id: str, attempt: int, stage: str | None, points: list[tuple[float, float]]) -> list[dict[str, Any]]:
    """Consecutive train spans through the (time, cursor) points; points at one instant keep the last cursor."""
    merged: list[tuple[float, float]] = []
    for t, c in points:
        if merged and t <= merged[-1][0]:
            merged[-1] = (merged[-1][0], c)
        else:
            merged.append((t, c))
    if len(merged) == 1:
        merged.append(merged[0])
    return [{"job_id": job_id, "attempt": attempt, "phase": "train", "stage": stage, "start": a[0], "end": b[0],
             "cursor_start": a[1], "cursor_end": b[1]} for a, b in zip(merged, merged[1:])]


def collect(directory: str | Path, *, open_last_attempt: str = "running", split_train: bool = True,
            attempt_ends: dict[tuple[str, int], float] | None = None) -> Conversion:
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
                raise TraceError(Problem(rec.file, rec.row, "k", f"unknown record kind {kind!r}", table="recorder"))
            job_id = _need(rec, "job_id", (str,))
            if kind == "job":
                gpus = _need(rec, "gpus", (int,))
                if gpus < 1:
                    raise TraceError(Problem(rec.file, rec.row, "gpus", "gpus must be >= 1", table="recorder", job_id=job_id))
                labels = rec.data.get("labels") or {}
                if not isinstance(labels, dict):
                    raise TraceError(Problem(rec.file, rec.row, "labels", "labels must be an object", table="recorder", job_id=job_id))
                model = _need(rec, "model", (str,), allow_none=True)
                jobs[job_id] = {"job_id": job_id, "model": model or job_id, "gpus": gpus, **labels}
                continue
            attempt = _need(rec, "attempt", (int,))
            if attempt < 0:
                raise TraceError(Problem(rec.file, rec.row, "attempt", "attempt must be >= 0", table="recorder", job_id=job_id))
            key = (job_id, attempt)
            if kind == "attempt_start":
                t = float(_need(rec, "t", _NUM))
                if key in starts:
                    raise TraceError(Problem(rec.file, rec.row, "k", f"second attempt_start for attempt {attempt} "
                                             f"(first: {starts[key][1].file} row {starts[key][1].row})", table="recorder", job_id=job_id))
                starts[key] = (t, rec)
                seen(key, t)
            elif kind == "attempt_end":
                t = float(_need(rec, "t", _NUM))
                reason = _need(rec, "reason", (str,))
                if reason not in END_REASONS:
                    raise TraceError(Problem(rec.file, rec.row, "reason", f"end reason {reason!r} is not one of {END_REASONS}",
                                             table="recorder", job_id=job_id))
                if key in ends:
                    raise TraceError(Problem(rec.file, rec.row, "k", f"second attempt_end for attempt {attempt}", table="recorder", job_id=job_id))
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
                        raise TraceError(Problem(rec.file, rec.row, "cursor", "a train span needs a cursor", table="recorder", job_id=job_id))
                    open_spans[skey] = {"key": key, "phase": phase, "stage": _need(rec, "stage", (str,), allow_none=True),
                                        "start": t, "cursor": cursor, "last_t": t, "rec": rec, "points": [(t, cursor)]}
                    seen(key, t)
                elif kind == "progress":
                    t = float(_need(rec, "t", _NUM))
                    cursor = _need(rec, "cursor", _NUM)
                    o = open_spans.get(skey)
                    if o is None:
                        raise TraceError(Problem(rec.file, rec.row, "id", f"progress for span {span_id} that is not open",
                                                 table="recorder", job_id=job_id))
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
                        raise TraceError(Problem(rec.file, rec.row, "cursor_end" if cs is not None else "cursor_start",
                                                 "a train span needs cursor_start and cursor_end", table="recorder", job_id=job_id))
                    opened = open_spans.pop(skey, None)
                    stage = _need(rec, "stage", (str,), allow_none=True)
                    if phase == "train" and split_train and opened is not None:
                        points = [(start, cs)] + [p for p in opened["points"][1:] if start < p[0] < end] + [(end, ce)]
                        spans.extend(_train_pieces(job_id, attempt, stage, points))
                    else:
                        spans.append({"job_id": job_id, "attempt": attempt, "phase": phase, "stage": stage,
                                      "start": start, "end": end, "cursor_start": cs, "cursor_end": ce})
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
            problems.append(Problem(str(directory), None, "attempt_start",
                                    f"attempt {attempt} has no attempt_start record: starts at its earliest record", table="attempts", job_id=job_id))
        if key in ends:
            end, reason = ends[key][0], ends[key][1]
        elif attempt < last_attempt[job_id] or open_last_attempt == "failure":
            end, reason = last_t[key], "failure"
            problems.append(Problem(str(directory), None, "attempt_end",
                                    f"attempt {attempt} has no attempt_end record: taken as a failure at its last record", table="attempts", job_id=job_id))
        else:
            end, reason = None, "running"
            problems.append(Problem(str(directory), None, "attempt_end",
                                    f"attempt {attempt} has no attempt_end record: still running (null end)", table="attempts", job_id=job_id))
        attempts.append({"job_id": job_id, "attempt": attempt, "start": start, "end": end, "end_reason": reason, "_key": key})
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
                close_t, how = o["start"], how + f" ({o['start'] - close_t:.3f} s before the span opened): at its start, no length"
            cs = ce = None
        if o["phase"] == "train" and split_train:
            spans.extend(_train_pieces(job_id, attempt, o["stage"], o["points"]))
        else:
            spans.append({"job_id": job_id, "attempt": attempt, "phase": o["phase"], "stage": o["stage"],
                          "start": o["start"], "end": close_t, "cursor_start": cs, "cursor_end": ce})
        problems.append(Problem(rec.file, rec.row, "span", f"{o['phase']} span opened here was never closed: closed at {how}",
                                table="spans", job_id=job_id))

    for job_id in last_attempt:
        jobs.setdefault(job_id, {"job_id": job_id, "model": job_id, "gpus": 1})

    ts = pl.Datetime("us", "UTC")

    def to_ts(col: str) -> pl.Expr:
        return (pl.col(col) * 1_000_000).round(0).cast(pl.Int64).cast(ts)

    for a in attempts:
        del a["_key"]
    att_df = pl.DataFrame(attempts, schema={"job_id": pl.String, "attempt": pl.Int64, "start": pl.Float64,
                                            "end": pl.Float64, "end_reason": pl.String})
    att_df = att_df.with_columns(to_ts("start"), to_ts("end")).sort("job_id", "attempt")
    span_df = pl.DataFrame(spans, schema={"job_id": pl.String, "attempt": pl.Int64, "phase": pl.String, "stage": pl.String,
                                          "start": pl.Float64, "end": pl.Float64, "cursor_start": pl.Float64, "cursor_end": pl.Float64})
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
    from .trace_writer import write_trace

    conv = collect(directory, open_last_attempt=open_last_attempt, split_train=split_train)
    meta = {"source": f"ettcore.recorder run folder {Path(directory).name}",
            "recorder_notes": conv.note_lines(notes_relative_to)}
    meta.update(metadata or {})
    conv.out_dir = write_trace(out_dir, attempts=conv.attempts, spans=conv.spans, jobs=conv.jobs, metadata=meta)
    return conv


# --------------------------------------------------------------------------- CLI


def _cli(args: Any) -> int:
    try:
        conv = convert(args.run_dir, args.out_dir, open_last_attempt=args.open_last_attempt)
    except TraceError as exc:
        for p in exc.problems:
            print(p.line())
        return 2
    for line in conv.note_lines():
        print(f"note: {line}")
    print(f"wrote {conv.out_dir}: {conv.attempts.height} attempts, {conv.spans.height} spans, {conv.jobs.height} jobs")
    return 0


def register(subparsers: Any) -> None:
    """``ett from-recorder RUN_DIR OUT_DIR``: turn recorder JSONL into a Parquet trace folder."""
    p = subparsers.add_parser("from-recorder", help="convert a recorder run folder (JSONL) into a trace folder (Parquet)")
    p.add_argument("run_dir", help="folder of recorder *.jsonl files")
    p.add_argument("out_dir", help="trace folder to write (replaced atomically)")
    p.add_argument("--open-last-attempt", choices=("running", "failure"), default="running",
                   help="how to treat a job's last attempt that has no end record (default: running)")
    p.set_defaults(func=_cli)
