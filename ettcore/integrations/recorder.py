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
    line is an input error (:class:`~ettcore.errors.InputError`).
    ``fsync=True`` also forces each record to disk.

Records (one JSON object a line; ``t``/``start``/``end`` are epoch seconds)
    ``job``            job_id, model, gpus, labels
    ``attempt_start``  job_id, attempt, t
    ``attempt_end``    job_id, attempt, t, reason (completed|failure|preemption|cancelled)
                       [, exception, signal, exit_code]  what ended it, when known (the cause: docs/causes.md)
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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

# the record format is the converter's (it reads what this writes); the converter's module imports DuckDB and Polars
# only when it converts, so the writer stays light inside a training job
from ettcore.importers.recorder import END_REASONS, RECORD_KINDS  # noqa: F401  (RECORD_KINDS re-exported beside the writer)
from ettcore.integrations.rank_progress import RankProgress

if TYPE_CHECKING:
    from ettcore.importers.recorder import Conversion

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


EXCEPTION_CHARS = 500  # an end record keeps this much of an exception's text (its type and the message's start)


def exception_text(exc: str | BaseException) -> str:
    """``"Type: message"`` of an exception (a text is kept as it is), cut to :data:`EXCEPTION_CHARS` characters."""
    if isinstance(exc, BaseException):
        msg = str(exc)
        exc = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    return str(exc)[:EXCEPTION_CHARS]


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
            rec.fail(exc)
        return self

    def close(self, t: float | None = None) -> None:
        """Record the ``span`` line (ending at ``t``, default now)."""
        rec = self._rec
        try:
            rec._emit(
                {
                    "k": "span",
                    "id": self._id,
                    "phase": self._phase,
                    "stage": self._stage,
                    "start": self._start,
                    "end": rec._clock() if t is None else float(t),
                }
            )
        except Exception as err:  # noqa: BLE001
            rec.fail(err)

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
            rec._emit(
                {
                    "k": "begin",
                    "id": self._id,
                    "phase": "train",
                    "stage": None,
                    "t": self._start,
                    "cursor": self._cursor_start,
                }
            )
            rec._train = self
        except Exception as exc:  # noqa: BLE001
            rec.fail(exc)
        return self

    def advance(self, cursor: float) -> None:
        """Note that the data cursor now stands at ``cursor`` (cost: one clock read, one compare)."""
        self.cursor = cursor
        try:
            now = self._rec._clock()
            if self._rec.ranks is not None:
                self._rec.ranks.step(cursor, now)
            if now - self._last_write >= self._interval:
                self._last_write = now
                self._rec._emit({"k": "progress", "id": self._id, "t": now, "cursor": cursor})
        except Exception as exc:  # noqa: BLE001
            self._rec.fail(exc)

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
            rec.fail(exc)

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
        from ettcore.integrations.slurm import job_from_environment

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
        self.ranks: RankProgress | None = None  # this rank's last progress, once keep_rank_progress is called
        self._prefix = '{"job_id":%s,"attempt":%d,' % (json.dumps(self.job_id), self.attempt)
        try:
            self._open()
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)

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

    def fail(self, exc: BaseException) -> None:
        """Count an error of the recorder or of its caller (training continues); warn about the first one only."""
        self.errors += 1
        self.last_error = exc
        if not self._warned:
            self._warned = True
            try:
                warnings.warn(f"ettcore recorder error (training continues): {exc!r}", RecorderWarning, stacklevel=3)
            except Exception:  # noqa: BLE001 - e.g. warnings turned into errors
                pass

    @property
    def warned(self) -> bool:
        """Whether the one warning about errors was given (set it when another object gave it: one warning in all)."""
        return self._warned

    @warned.setter
    def warned(self, value: bool) -> None:
        self._warned = bool(value)

    def _safe(self, record: dict[str, Any]) -> None:
        try:
            self._emit(record)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)

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
            self.fail(exc)

    def attempt_end(
        self,
        reason: str,
        t: float | None = None,
        *,
        exception: str | BaseException | None = None,
        signal: int | None = None,
        exit_code: int | None = None,
    ) -> None:
        """Hardware released; ``reason`` is one of completed, failure, preemption, cancelled.

        What ended it, when known, goes into the record for the conversion to decide the interruption's cause
        (docs/causes.md): ``exception`` (an exception, or its ``"Type: message"`` text; kept to
        :data:`EXCEPTION_CHARS` characters), the ``signal`` number that ended it, the process's ``exit_code``.
        """
        try:
            if reason not in END_REASONS:
                raise ValueError(f"end reason {reason!r} is not one of {END_REASONS}")
            if self._train is not None:
                self._train.close()
            record: dict[str, Any] = {
                "k": "attempt_end",
                "t": self._clock() if t is None else float(t),
                "reason": reason,
            }
            if exception is not None:
                record["exception"] = exception_text(exception)
            if signal is not None:
                record["signal"] = int(signal)
            if exit_code is not None:
                record["exit_code"] = int(exit_code)
            self._emit(record)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)

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
            rec: dict[str, Any] = {
                "k": "span",
                "id": self._next_id(),
                "phase": phase,
                "stage": stage,
                "start": float(start),
                "end": float(end),
            }
            if cursor_start is not None or cursor_end is not None:
                rec["cursor_start"], rec["cursor_end"] = cursor_start, cursor_end
            self._emit(rec)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)

    def keep_rank_progress(self, rank: int | None = None, node: str | None = None) -> None:
        """Also keep this rank's last progress in the run folder (:mod:`ettcore.integrations.rank_progress`):
        every :meth:`TrainSpan.advance` notes it, a thread writes it at most every ``progress_interval_s``.  ``rank``
        defaults to ``RANK`` (0 without it), ``node`` to the host name."""
        try:
            rank = int(os.environ.get("RANK", "0")) if rank is None else int(rank)
            self.ranks = RankProgress(
                self.directory,
                self.job_id,
                self.attempt,
                rank,
                node=node,
                interval_s=self.progress_interval_s,
                clock=self._clock,
            )
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)

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
        if self.ranks is not None:
            self.ranks.close()
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError as exc:
                self.fail(exc)
        if trace_dir is None:
            return None
        try:
            from ettcore.importers.recorder import convert  # the converter reads DuckDB/Polars: loaded only here

            return convert(self.directory, trace_dir, **convert_kwargs)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)
            return None

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close()
        return False
