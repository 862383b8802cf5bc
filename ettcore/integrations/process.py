"""The training process as one attempt of a job: its ids, its start, how it ended.

A framework callback (:mod:`ettcore.integrations.lightning`,
:mod:`ettcore.integrations.huggingface`) holds one :class:`Attempt`: the
process is the attempt, so a restart (by hand, by a scheduler's requeue, by
``torchrun --max-restarts``) is the next attempt of the same job.

Ids, first found wins
    run folder  the ``run_dir`` argument; ``ETT_RUN_DIR``.
    job id      the ``job_id`` argument; ``ETT_JOB_ID`` (set for its workers by
                ``python -m ettcore.integrations.torchrun``); ``TORCHELASTIC_RUN_ID``;
                the run folder's name.
    attempt     the ``attempt`` argument; ``ETT_ATTEMPT`` (set by the torchrun
                wrapper for each worker group it starts); ``TORCHELASTIC_RESTART_COUNT``;
                else one more than the highest attempt of this job already in the
                run folder (0 in an empty one).
    rank        given by the framework; only global rank 0 records.

Start and end
    The attempt starts when the process started (the kernel's start time of
    this process, ``/proc/self/stat``, 10 ms ticks; elsewhere the time this
    module was imported) and ends when the process is gone.  No hook inside a
    process sees that instant (the interpreter's own finalization after
    ``atexit`` takes seconds once PyTorch is loaded, and ``SIGKILL`` runs
    nothing), so a small watcher process (:class:`ExitWatch`, started with
    the recording) waits for the training process to end and writes the
    attempt's end then: the reason the process reported at ``atexit`` (none:
    ``failure``) and, from ``atexit`` to the exit, a ``shutdown`` /
    ``interpreter_exit`` span.  Under the torchrun wrapper
    (``ETT_ATTEMPTS_BY=torchelastic-agent``) the elastic agent writes the
    attempts instead, from its own events.

End reason
    ``completed`` when the framework says training finished; ``preemption``
    when a preemption signal (``SIGTERM``, ``SIGUSR1``) arrived before training
    stopped; ``cancelled`` for ``SIGINT`` / ``KeyboardInterrupt``; otherwise
    ``failure`` (an exception, or an exit before training finished).  A signal
    whose default action would end the process at once is recorded first and
    then delivered again with its default action, so the process still dies by
    it.

What ended it
    The end record also keeps, when known, the exception that ended training
    (its type and message, from the framework's exception hook or
    ``sys.excepthook``) and the signal that arrived, so the conversion can
    decide the interruption's cause (docs/causes.md).  A process killed by
    ``SIGKILL`` says nothing: its cause is ``unknown``.

Failure isolation
    Every hook runs through :meth:`Attempt.guard` or catches its own errors:
    an error of ours is counted (:attr:`Attempt.errors`), reported once
    through :mod:`warnings` (:class:`~ettcore.integrations.recorder.RecorderWarning`), and
    training carries on.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable

from ettcore.integrations.phase_clock import PhaseClock
from ettcore.integrations.rank_progress import RankProgress
from ettcore.integrations.rank_timing import RankTiming
from ettcore.integrations.recorder import END_REASONS, Recorder, RecorderWarning, exception_text

ENV_RUN_DIR = "ETT_RUN_DIR"
ENV_JOB_ID = "ETT_JOB_ID"
ENV_ATTEMPT = "ETT_ATTEMPT"
ENV_ATTEMPTS_BY = "ETT_ATTEMPTS_BY"
AGENT = "torchelastic-agent"
PREEMPTION_SIGNALS = tuple(
    s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGUSR1", None)) if s is not None
)

_IMPORTED_AT = time.time()
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


# --------------------------------------------------------------------------- ids and times


def _boot_clock() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def wall_minus_boot(
    wall: Callable[[], float] = time.time, boot: Callable[[], float] = _boot_clock, tries: int = 8
) -> float:
    """The wall clock minus the time since boot (``CLOCK_BOOTTIME``), in seconds.

    The two clocks cannot be read at one instant: a process descheduled between the readings (a busy machine) would
    shift the result by however long it waited.  So the wall clock is read between two boot-clock readings, the
    wall clock is set against their midpoint (off by at most half their gap), and of ``tries`` such triples the one
    read closest together is kept.
    """
    best_gap, best = float("inf"), 0.0
    for _ in range(tries):
        b0 = boot()
        w = wall()
        b1 = boot()
        if b1 - b0 < best_gap:
            best_gap, best = b1 - b0, w - (b0 + b1) / 2
    return best


def process_start_time() -> float:
    """When this process started, in epoch seconds (Linux: the kernel's start time; elsewhere this module's import)."""
    try:
        raw = Path("/proc/self/stat").read_text()
        ticks = int(raw[raw.rindex(")") + 2 :].split()[19])  # field 22, starttime, in clock ticks since boot
        since_boot = ticks / os.sysconf("SC_CLK_TCK")
        return min(wall_minus_boot() + since_boot, _IMPORTED_AT)
    except (OSError, ValueError, IndexError, AttributeError):
        return _IMPORTED_AT


def resolve_run_dir(run_dir: str | os.PathLike | None) -> Path:
    value = run_dir if run_dir is not None else os.environ.get(ENV_RUN_DIR)
    if not value:
        raise ValueError(f"no run folder: pass run_dir or set {ENV_RUN_DIR}")
    return Path(value)


def _slurm_job():
    """The Slurm job this process runs in (``None`` outside Slurm, or when its variables are malformed)."""
    from ettcore.integrations.slurm import job_from_environment

    try:
        return job_from_environment()
    except ValueError:
        return None


def resolve_job_id(run_dir: Path, job_id: str | None = None) -> str:
    slurm = _slurm_job()
    for value in (job_id, os.environ.get(ENV_JOB_ID), os.environ.get("TORCHELASTIC_RUN_ID"), slurm and slurm.job_id):
        if value and value != "none":
            return str(value)
    return Path(run_dir).resolve().name


def recorded_attempts(run_dir: Path, job_id: str) -> list[int]:
    """Attempt numbers of ``job_id`` that already have recorder files in ``run_dir`` (from the file names)."""
    pattern = re.compile(rf"^{re.escape(_SAFE.sub('_', job_id))}-a(\d+)-.*\.jsonl$")
    found = []
    try:
        names = os.listdir(run_dir)
    except OSError:
        return []
    for name in names:
        m = pattern.match(name)
        if m:
            found.append(int(m.group(1)))
    return sorted(set(found))


def resolve_attempt(run_dir: Path, job_id: str, attempt: int | None = None) -> int:
    slurm = _slurm_job()
    for value in (
        attempt,
        os.environ.get(ENV_ATTEMPT),
        os.environ.get("TORCHELASTIC_RESTART_COUNT"),
        slurm and slurm.attempt,
    ):
        if value is not None and str(value).strip() != "":
            return int(value)
    seen = recorded_attempts(run_dir, job_id)
    return seen[-1] + 1 if seen else 0


def previous_attempt_end(run_dir: Path, job_id: str, attempt: int) -> float | None:
    """When attempt ``attempt - 1`` of ``job_id`` ended, as its exit watcher wrote it (``None`` if not found).

    A process restarted at once can start (by the kernel's clock, in 10 ms
    ticks) before the previous one's watcher saw it gone; the new attempt then
    starts at that end instead, so attempts never overlap.
    """
    if attempt <= 0:
        return None
    pattern = re.compile(rf"^{re.escape(_SAFE.sub('_', job_id))}-a{attempt - 1:04d}-.*-(exit|signal)-\d+\.jsonl$")
    ends = []
    try:
        names = [n for n in os.listdir(run_dir) if pattern.match(n)]
    except OSError:
        return None
    for name in names:
        try:
            for line in (Path(run_dir) / name).read_text(encoding="utf-8").splitlines():
                if '"attempt_end"' in line:
                    ends.append(float(json.loads(line)["t"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return max(ends) if ends else None


def attempts_by_agent() -> bool:
    """True when a torchrun wrapper (:mod:`ettcore.integrations.torchrun`) writes this job's attempts."""
    return os.environ.get(ENV_ATTEMPTS_BY) == AGENT


# --------------------------------------------------------------------------- the attempt


class Attempt:
    """One process = one attempt of one job, as a framework callback records it.

    Created with the callback (that instant ends the ``trainer_init``
    ``launch`` stage, which began at the process start).  Nothing is written
    before :meth:`start`, which the callback calls from the first hook that
    knows the process's rank; ranks other than 0 record nothing.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike | None = None,
        job_id: str | None = None,
        attempt: int | None = None,
        *,
        writer: str,
        framework: str,
        progress_interval_s: float = 1.0,
        fsync: bool = False,
        labels: dict[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.created = clock()
        self.process_start = min(process_start_time(), self.created)
        self.run_dir = resolve_run_dir(run_dir)
        self._job_arg, self._attempt_arg = job_id, attempt
        self.writer, self.framework = writer, framework
        self.labels = dict(labels or {})
        self.fsync = fsync
        self.clock = clock
        self.timeline = PhaseClock(None, progress_interval_s=progress_interval_s, clock=clock)
        self.recorder: Recorder | None = None
        self.job_id: str | None = None
        self.attempt: int | None = None
        self.started = False
        self.reason: str | None = None  # set when training ended; None while it runs
        self.ended_at: float | None = None
        self.signal: int | None = None
        self.exception: str | None = None  # the exception that ended training ("Type: message"), when one did
        self.finished = False
        self._own_errors = 0
        self._warned = False
        self._prev_excepthook: Any = None
        self._handlers: dict[int, tuple[Any, Any]] = {}
        self.watch: ExitWatch | None = None

    # ------------------------------------------------------------------ errors

    @property
    def errors(self) -> int:
        """Errors of the callback and its recorder so far (each one skipped, training went on)."""
        return self._own_errors + (self.recorder.errors if self.recorder is not None else 0)

    def error(self, exc: BaseException) -> None:
        """Count an error of ours; warn the first time; never raise."""
        if self.recorder is not None:
            self.recorder.fail(exc)
            return
        self._own_errors += 1
        if not self._warned:
            self._warned = True
            try:
                warnings.warn(
                    f"ettcore {self.framework} callback error (training continues): {exc!r}",
                    RecorderWarning,
                    stacklevel=3,
                )
            except Exception:  # noqa: BLE001 - warnings turned into errors
                pass

    def guard(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)``; an exception is counted and warned about, never raised."""
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - the callback must never stop training
            self.error(exc)

    # ------------------------------------------------------------------ start

    def start(
        self, *, rank: int = 0, model: str | None = None, gpus: int = 1, setup_stage: str | None = "trainer_setup"
    ) -> None:
        """Begin recording (rank 0): attempt start at the process start, the job row, the launch stage.

        ``setup_stage``: the ``trainer_init`` stage that runs from the
        callback's creation until the framework's next hook (``None``: the
        caller opens its own phases).
        """
        if self.started:
            return
        self.started = True
        if rank != 0:
            self.guard(self._keep_rank_progress, rank)
            return
        self.job_id = resolve_job_id(self.run_dir, self._job_arg)
        self.attempt = resolve_attempt(self.run_dir, self.job_id, self._attempt_arg)
        self.guard(self._keep_rank_progress, rank)
        rec = Recorder(
            self.run_dir,
            self.job_id,
            self.attempt,
            writer=self.writer,
            progress_interval_s=self.timeline.interval,
            clock=self.clock,
            fsync=self.fsync,
        )
        rec.warned = rec.warned or self._warned  # one warning in all
        self.recorder = rec
        self.timeline.rec = rec
        by_agent = attempts_by_agent()
        if not by_agent:
            before = previous_attempt_end(self.run_dir, self.job_id, self.attempt)
            if before is not None and before > self.process_start:
                self.process_start = min(before, self.created)
            rec.attempt_start(t=self.process_start)
        try:
            self.watch = ExitWatch(
                self.run_dir, self.job_id, self.attempt, self.writer, fsync=self.fsync, end=not by_agent
            )
        except Exception as exc:  # noqa: BLE001 - without it, the end is written at atexit
            self.error(exc)
        labels = {"framework": self.framework, **self.labels}
        model, gpus = labels.pop("model", model), labels.pop("gpus", gpus)  # given as labels: they win
        rec.job(model=model, gpus=max(int(gpus), 1), **labels)
        self.timeline.span("trainer_init", self.process_start, self.created, stage="launch")
        if setup_stage is not None:
            self.timeline.begin("trainer_init", setup_stage, t=self.created)
        self.timeline.watch_compiles()
        atexit.register(self._at_exit)
        self._prev_excepthook = sys.excepthook
        sys.excepthook = self._excepthook

    def _ids(self) -> tuple[str, int]:
        """This process's job id and attempt (rank 0's once it started; the same rules on every other rank)."""
        job_id = self.job_id or resolve_job_id(self.run_dir, self._job_arg)
        attempt = self.attempt if self.attempt is not None else resolve_attempt(self.run_dir, job_id, self._attempt_arg)
        return job_id, attempt

    def _keep_rank_progress(self, rank: int) -> None:
        """Every rank keeps its last progress in the run folder (:mod:`ettcore.integrations.rank_progress`)."""
        self.timeline.ranks = RankProgress(
            self.run_dir, *self._ids(), rank, interval_s=self.timeline.interval, clock=self.clock
        )

    def rank_timing(self, rank: int) -> RankTiming:
        """This rank's work and wait per window, in the run folder (:mod:`ettcore.integrations.rank_timing`)."""
        return RankTiming(self.run_dir, *self._ids(), rank, clock=self.clock)

    def watch_signals(self) -> None:
        """Chain a handler for the preemption signals and SIGINT (main thread only; call once training runs)."""
        if self.recorder is None or threading.current_thread() is not threading.main_thread():
            return
        for sig in PREEMPTION_SIGNALS + (signal.SIGINT,):
            try:
                prev = signal.getsignal(sig)
                if sig in self._handlers and prev is self._handlers[sig][0]:
                    continue
                handler = self._chained(sig, prev)
                signal.signal(sig, handler)
                self._handlers[sig] = (handler, prev)
            except (ValueError, OSError, RuntimeError) as exc:
                self.error(exc)

    def _chained(self, sig: int, prev: Any) -> Callable[[int, Any], None]:
        def handler(signum: int, frame: Any) -> None:
            try:
                if self.signal is None:
                    self.signal = signum
            except Exception:  # noqa: BLE001
                pass
            if callable(prev):
                prev(signum, frame)
                return
            if prev == signal.SIG_IGN:
                return
            # the default action ends the process now: write the end first, then let the signal do it
            try:
                self._finish_from_signal(signum)
            except Exception:  # noqa: BLE001
                pass
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        return handler

    # ------------------------------------------------------------------ end

    def _reason_for(self, exc: BaseException | None) -> str:
        if isinstance(exc, KeyboardInterrupt) or self.signal == getattr(signal, "SIGINT", None):
            return "cancelled"
        if self.signal in PREEMPTION_SIGNALS:
            return "preemption"
        return "failure"

    def ended(self, reason: str | None = None, exc: BaseException | None = None, t: float | None = None) -> None:
        """Training is over: ``reason`` (``completed``), or from ``exc`` and the signals seen.

        What follows until the process exits is the ``shutdown`` ``teardown`` stage.
        """
        if self.reason is not None or self.recorder is None:
            return
        self.reason = reason or self._reason_for(exc)
        if exc is not None:
            self.exception = exception_text(exc)
        t = self.clock() if t is None else t
        self.ended_at = t
        self.timeline.stop(t, crashed=self.reason != "completed")
        self.timeline.unwatch_compiles()
        self.timeline.begin("shutdown", "teardown", t)

    def training_completed(self) -> None:
        """The framework says training finished: it stopped at its last step (or the phase after it)."""
        last = self.timeline.last_boundary()
        self.timeline.train_end(last)
        self.ended("completed", t=last)

    def finish(self, t: float | None = None, *, at_exit: bool = False) -> None:
        """End the attempt at ``t`` (default now): close its spans and write its end.

        Called at interpreter exit (``at_exit``: the end is then written by
        the exit watcher when the process is gone); call it yourself when the
        process goes on after training (a notebook, a test): the attempt then
        ends at ``t``, and the call returns once the exit watcher has written
        that end and exited.
        """
        if self.timeline.ranks is not None:
            self.timeline.ranks.close()
        if self.finished or self.recorder is None:
            return
        self.finished = True
        t = self.clock() if t is None else t
        if self.reason is None:
            self.ended(None, None, t)
        self.timeline.stop(t)
        self._report_end(self.recorder, t, now=not at_exit)
        self.recorder.close()
        self._unhook()

    def _report_end(self, rec: Recorder, t: float, *, now: bool = False) -> None:
        """The end goes to the exit watcher (which writes it when the process is gone), else straight to ``rec``."""
        reason = self.reason or "failure"
        why = {"exception": self.exception, "signal": self.signal}
        if self.watch is not None:
            try:
                self.watch.report(reason, t, now=now, **why)
                return
            except OSError as exc:
                self.error(exc)
        if not attempts_by_agent():
            rec.attempt_end(reason, t=t, **why)

    def _finish_from_signal(self, signum: int) -> None:
        """The process is about to die by ``signum``: write its last spans through a fresh recorder.

        A signal handler may run while the main thread is inside a write of
        the recorder (holding its lock), so they go through a new recorder
        file.  Non-train spans still open are left to the conversion, which
        closes them at the attempt's end (with a note).
        """
        if self.finished or self.recorder is None:
            return
        self.finished = True
        t = self.clock()
        rec = Recorder(
            self.run_dir, self.job_id, self.attempt, writer=f"{self.writer}-signal", clock=self.clock, fsync=self.fsync
        )
        tl = self.timeline
        tl.hand_over(rec)
        if self.reason is None:
            self.reason = self._reason_for(None)
            tl.stop(t, crashed=self.reason != "completed")
        else:
            tl.drop_open()
        self._report_end(rec, t)
        rec.close()

    def _at_exit(self) -> None:
        try:
            self.finish(at_exit=True)
        except Exception as exc:  # noqa: BLE001
            self.error(exc)

    def _excepthook(self, exc_type: type, exc: BaseException, tb: Any) -> None:
        try:
            self.ended(None, exc)
        except Exception:  # noqa: BLE001
            pass
        (self._prev_excepthook or sys.__excepthook__)(exc_type, exc, tb)

    def _unhook(self) -> None:
        try:
            atexit.unregister(self._at_exit)
            if sys.excepthook == self._excepthook:
                sys.excepthook = self._prev_excepthook or sys.__excepthook__
            if threading.current_thread() is threading.main_thread():
                for sig, (handler, prev) in self._handlers.items():
                    if signal.getsignal(sig) is handler:  # nobody chained after us: put back what was there
                        signal.signal(sig, prev if prev is not None else signal.SIG_DFL)
            self._handlers.clear()
        except Exception as exc:  # noqa: BLE001
            self.error(exc)


# --------------------------------------------------------------------------- the exit watcher


class ExitWatch:
    """A watcher process that records the attempt's end at the instant this process ends.

    The training process reports its end reason (and when its ``atexit``
    ran) with :meth:`report`; the watcher waits for the process to be gone
    (``pidfd`` on Linux, else polling its parent id every 10 ms), then writes,
    through its own recorder file (writer ``<writer>-exit``), the
    ``shutdown``/``interpreter_exit`` span and ``attempt_end``.  A process
    that reported nothing (killed by ``SIGKILL``, ``os._exit``) ended in
    ``failure``.  With ``end=False`` (a worker under the torchrun wrapper,
    whose agent writes the attempts) it writes only the span.  The watcher
    ignores the usual termination signals, so a ``SIGTERM`` to the job's
    processes does not take it down first.
    """

    def __init__(
        self, run_dir: Path, job_id: str, attempt: int, writer: str, *, fsync: bool = False, end: bool = True
    ) -> None:
        from ettcore.config import PACKAGE_DIR

        r, w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(PACKAGE_DIR.parent)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        )
        cmd = [
            sys.executable,
            "-m",
            "ettcore.integrations.process",
            "--watch",
            str(os.getpid()),
            str(run_dir),
            job_id,
            str(attempt),
            writer,
            "1" if fsync else "0",
            "end" if end else "span",
        ]
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=r,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        finally:
            os.close(r)
        self._w = w

    def report(
        self,
        reason: str,
        t: float,
        attempt: int | None = None,
        *,
        now: bool = False,
        exception: str | None = None,
        signal: int | None = None,
    ) -> None:
        """Tell the watcher how this attempt ended and when its ``atexit`` ran.

        ``exception`` and ``signal``: what ended it, when known (they go into the end record).

        ``attempt``: the attempt that ends, when it is no longer the one the
        watcher was started for (the torchrun agent's later rounds).
        ``now``: the attempt ends at ``t`` although the process goes on (an
        explicit :meth:`Attempt.finish`): the watcher writes the end at once
        and exits.
        """
        a = -1 if attempt is None else int(attempt)
        why = {k: v for k, v in (("exception", exception), ("signal", signal)) if v is not None}
        tail = f" {json.dumps(why)}" if why else ""  # JSON escapes newlines: the report stays one line
        os.write(self._w, f"{reason} {t!r} {a} {'now' if now else 'exit'}{tail}\n".encode())
        if now:
            self._reap()

    def _reap(self, timeout_s: float = 30.0) -> None:
        """After a ``now`` report the watcher writes the end and exits: close its pipe and wait for it.

        The process goes on (a notebook, a test), so the watcher is waited for
        here, and the end is on disk when this returns.  One still running
        after ``timeout_s`` is left as it is (the garbage collector then warns
        that it is still running: something is wrong with it).
        """
        try:
            os.close(self._w)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass


REASONS = END_REASONS  # the end reasons a report line may name: the recorder's


def _parse_report(buf: bytes) -> tuple[str, float, int, str, dict[str, Any]] | None:
    """The last complete ``reason t attempt mode [{"exception": ..., "signal": ...}]`` line the process wrote, if
    any (the last item: what ended the attempt, the keyword arguments of its end record)."""
    lines = [ln for ln in buf.decode("utf-8", "replace").split("\n")[:-1] if ln.strip()]
    if not lines:
        return None
    words = lines[-1].split(maxsplit=4)
    try:
        if len(words) >= 4 and words[0] in REASONS and words[3] in ("now", "exit"):
            why = json.loads(words[4]) if len(words) == 5 else {}
            why = {k: why[k] for k in ("exception", "signal") if isinstance(why, dict) and why.get(k) is not None}
            return words[0], float(words[1]), int(words[2]), words[3], why
    except ValueError:
        pass
    return None


def _watch_main(argv: list[str]) -> int:
    pid, run_dir, job_id, attempt, writer = int(argv[0]), argv[1], argv[2], int(argv[3]), argv[4]
    fsync, write_end = argv[5] == "1", argv[6] == "end"
    for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        pidfd = -1  # already gone
    except (AttributeError, OSError):
        pidfd = None  # no pidfd here: poll the parent id
    buf, stdin_open, report = b"", True, None
    while pidfd != -1:
        waits = ([pidfd] if pidfd is not None else []) + ([0] if stdin_open else [])
        ready, _, _ = select.select(waits, [], [], None if pidfd is not None else 0.01)
        if 0 in ready:
            chunk = os.read(0, 4096)
            if chunk:
                buf += chunk
                report = _parse_report(buf) or report
                if report is not None and report[3] == "now":
                    break
            else:
                stdin_open = False  # the write end is closed: the process is exiting
        if (pidfd is not None and pidfd in ready) or (pidfd is None and os.getppid() != pid):
            break
        if pidfd is None and not stdin_open:
            time.sleep(0.01)
    t_exit = time.time()
    if report is None:  # the last words may have come with the exit
        try:
            os.set_blocking(0, False)
            buf += os.read(0, 1 << 16)
        except OSError:
            pass
        report = _parse_report(buf)
    reason, t_atexit, why = "failure", None, {}
    if report is not None:
        reason, t_atexit, why = report[0], report[1], report[4]
        attempt = report[2] if report[2] >= 0 else attempt
        if report[3] == "now":
            t_exit = t_atexit
    rec = Recorder(run_dir, job_id, attempt, writer=f"{writer}-exit", fsync=fsync)
    if t_atexit is not None and t_exit > t_atexit:
        rec.span("shutdown", t_atexit, t_exit, stage="interpreter_exit")
    if write_end:
        rec.attempt_end(reason, t=max(t_exit, t_atexit or t_exit), **why)
    rec.close()
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 9 and sys.argv[1] == "--watch":
        raise SystemExit(_watch_main(sys.argv[2:]))
    raise SystemExit(
        "usage: python -m ettcore.integrations.process --watch PID RUN_DIR JOB_ID ATTEMPT WRITER FSYNC end|span"
    )
