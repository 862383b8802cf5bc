"""torchrun / TorchElastic: the elastic agent's restarts of the worker group as attempts of one job.

Launch through this wrapper instead of ``torchrun`` (the torchrun arguments follow ``--``)::

    python -m ettcore.integrations.torchrun --run-dir runs/my-job [--job-id ID] -- \\
        --nproc-per-node 8 --max-restarts 3 train.py --lr 0.1

The wrapper is torchrun: it calls torchrun's own entry point
(``torch.distributed.run.main``) in this process, which becomes the elastic
agent, and listens to what the agent records about itself:

- its **metrics** (``torch.distributed.elastic.metrics.configure``): the
  duration and end time of the agent's rendezvous, worker start and worker
  stop (the ``@prof`` timings of ``_rendezvous``, ``_start_workers``,
  ``_stop_workers``), and the worker group's state each time the agent's
  monitor looks (``workers.<role>.failed`` / ``unhealthy`` / ``succeeded``,
  ``remaining_restarts``);
- its **events** (``torch.distributed.elastic.events``, whatever
  ``--event-log-handler`` names): a ``START`` per worker process started and
  the final state of each worker (exit code, error file).  Torch leaves their
  timestamp at 0, so each is kept with the time it was recorded, in
  ``torchelastic-events-<job>.json`` in the run folder (beside the recorder
  files, for reading why a worker failed; the trace does not need them).

From them it writes, with writer ``torchelastic-agent``, one attempt per
worker-group round (round ``k`` = attempt ``k``; ``TORCHELASTIC_RESTART_COUNT``
counts the same restarts, but not the membership changes that also start a
round):

======================================================  ===============================================
agent process start -> first rendezvous                 ``hardware_setup`` / ``agent_start``
the agent's rendezvous                                  ``hardware_setup`` / ``rendezvous``
the agent starting the worker processes                 ``hardware_setup`` / ``start_workers``
the monitor call that saw the failure -> workers        ``hardware_setup`` / ``stop_workers``; the
stopped (the monitor stops the group's other workers)   attempt ends there (``failure``), the next
                                                        one starts at that instant
worker group succeeded -> agent exit                    ``shutdown`` / ``agent_exit``
======================================================  ===============================================

The job's last attempt ends when the agent process is gone (its exit watcher,
:class:`~ettcore.integrations.process.ExitWatch`): ``completed``, ``failure``
(no restarts left), or ``preemption`` (the agent was signalled).  So the time
between a worker failure and the restart is in the trace as the agent's own
stop, rendezvous and start times, then the new workers' start-up.

The workers record their own phases on rank 0: with
:class:`ettcore.integrations.lightning.ETTCallback` or
:class:`ettcore.integrations.huggingface.ETTCallback` (nothing to configure:
the wrapper exports ``ETT_RUN_DIR``, ``ETT_JOB_ID``, ``ETT_ATTEMPT`` and
``ETT_ATTEMPTS_BY``), or, in a plain loop, with :func:`record_worker`.
Without the wrapper, plain ``torchrun`` still works with the callbacks: each
worker process is then the attempt (numbered by ``TORCHELASTIC_RESTART_COUNT``,
id ``TORCHELASTIC_RUN_ID``), without the agent's restart times.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ettcore.integrations.phase_clock import PhaseClock
from ettcore.integrations.process import (
    AGENT,
    ENV_ATTEMPT,
    ENV_ATTEMPTS_BY,
    ENV_JOB_ID,
    ENV_RUN_DIR,
    Attempt,
    ExitWatch,
    process_start_time,
    resolve_attempt,
    resolve_job_id,
    resolve_run_dir,
)
from ettcore.integrations.recorder import Recorder

WRITER = "torchelastic-agent"
EVENT_DESTINATIONS = ("null", "console", "dynamic_rendezvous")


def worker_ids(run_dir: str | os.PathLike | None = None, job_id: str | None = None) -> tuple[str, int]:
    """(job id, attempt) of this elastic worker, as the wrapper (or plain torchrun) numbers them."""
    rd = resolve_run_dir(run_dir)
    job = resolve_job_id(rd, job_id)
    return job, resolve_attempt(rd, job)


def record_worker(
    run_dir: str | os.PathLike | None = None,
    *,
    job_id: str | None = None,
    writer: str = "worker",
    model: str | None = None,
    progress_interval_s: float = 1.0,
    **labels: Any,
) -> PhaseClock:
    """A plain training loop's :class:`~ettcore.integrations.phase_clock.PhaseClock`, for every rank.

    Global rank 0 (``RANK``) records; on the other ranks the timeline does
    nothing, so the loop calls it unconditionally::

        tl = record_worker()                     # run folder and ids from the wrapper's environment
        with tl.phase("trainer_init", "process_group_init"):
            dist.init_process_group("gloo")
        tl.train_begin(step)
        for batch in data:
            ...
            step += 1
            tl.step(step)
        tl.train_end()

    As with the framework callbacks, the process is the attempt (see
    :class:`~ettcore.integrations.process.Attempt`): ``trainer_init`` /
    ``launch`` from the process start, the end at process exit, an uncaught
    exception ends training at the last step, and a preemption signal
    (``SIGTERM``, ``SIGUSR1``) ends it as a ``preemption`` (the handler is
    chained to the one in place; call this from the main thread).
    """
    attempt = Attempt(
        run_dir, job_id, None, writer=writer, framework="torch", progress_interval_s=progress_interval_s, labels=labels
    )
    attempt.start(
        rank=int(os.environ.get("RANK", "0")),
        model=model,
        gpus=int(os.environ.get("WORLD_SIZE", "1")),
        setup_stage=None,
    )
    attempt.watch_signals()  # a SIGTERM is recorded as a preemption before the process dies by it
    attempt.timeline.attempt = attempt  # keeps the attempt with its timeline
    return attempt.timeline


class AgentRecorder:
    """Turns the agent's metrics and events into attempts and spans (see the module's table)."""

    def __init__(self, run_dir: Path, job_id: str, *, role: str = "default", fsync: bool = False) -> None:
        self.run_dir, self.job_id, self.role, self.fsync = Path(run_dir), job_id, role, fsync
        self.started = process_start_time()
        self.lock = threading.Lock()
        self.attempt = 0
        self.rec = self._open(0, self.started)
        self.remaining: int | None = None
        self.failed_at: float | None = None
        self.restart_follows = False
        self.succeeded_at: float | None = None
        self.rendezvous_seen = False
        self.monitor_started: float | None = None
        self.events: list[dict[str, Any]] = []
        self.errors = 0
        self.watch: ExitWatch | None = None
        try:
            self.watch = ExitWatch(self.run_dir, job_id, 0, WRITER, fsync=fsync)
        except Exception:  # noqa: BLE001 - the end is then written at exit
            self.errors += 1
        os.environ[ENV_ATTEMPT] = "0"

    def _open(self, attempt: int, t: float) -> Recorder:
        rec = Recorder(self.run_dir, self.job_id, attempt, writer=WRITER, fsync=self.fsync)
        rec.attempt_start(t=t)
        return rec

    # ------------------------------------------------------------------ what the agent says

    def metric(self, name: str, value: float, t: float) -> None:
        with self.lock:
            if name.endswith(".duration.ms"):
                start = t - float(value) / 1000.0
                if name.endswith("._rendezvous.duration.ms"):
                    if not self.rendezvous_seen:
                        self.rendezvous_seen = True
                        self.rec.span("hardware_setup", self.started, start, stage="agent_start")
                    self.rec.span("hardware_setup", start, t, stage="rendezvous")
                elif name.endswith("._start_workers.duration.ms"):
                    self.rec.span("hardware_setup", start, t, stage="start_workers")
                elif name.endswith("._stop_workers.duration.ms"):
                    self._stopped(start, t)
                elif name.endswith("._monitor_workers.duration.ms"):
                    self.monitor_started = start
            elif name == f"workers.{self.role}.remaining_restarts":
                self.remaining = int(value)
            elif name in (f"workers.{self.role}.failed", f"workers.{self.role}.unhealthy") and value:
                if self.failed_at is None:  # from the start of the monitor call that found it (it stops the rest)
                    self.failed_at = self.monitor_started if self.monitor_started is not None else t
                    self.restart_follows = bool(self.remaining)
            elif name == f"workers.{self.role}.succeeded" and value:
                self.succeeded_at = t

    def _stopped(self, start: float, end: float) -> None:
        """The agent stopped the workers: after a failure, the attempt ends; a restart starts the next one."""
        self.rec.span(
            "hardware_setup", self.failed_at if self.failed_at is not None else start, end, stage="stop_workers"
        )
        if self.failed_at is not None and not self.restart_follows:
            return  # the last attempt: it ends with the agent process (see close)
        reason = "failure" if self.failed_at is not None else "preemption"  # else: a membership change
        self.rec.attempt_end(reason, t=end)
        self.rec.close()
        self.attempt += 1
        self.rec = self._open(self.attempt, end)
        self.failed_at = None
        os.environ[ENV_ATTEMPT] = str(self.attempt)

    def event(self, record: logging.LogRecord) -> None:
        """An agent event, kept with the time it was recorded and the attempt it belongs to."""
        import json

        try:
            data = json.loads(record.getMessage())
        except ValueError:
            return
        with self.lock:
            self.events.append(
                {
                    "t": record.created,
                    "attempt": self.attempt,
                    "name": data.get("name"),
                    "metadata": data.get("metadata"),
                }
            )

    # ------------------------------------------------------------------ the end

    def close(self, reason: str, exception: BaseException | None = None) -> None:
        """The agent is done: the last attempt ends with ``reason`` (``exception``: what torchrun raised, kept in
        the end record; a worker's failure is torchrun's ``ChildFailedError``, naming the worker's exit code)."""
        import json

        from ettcore.integrations.recorder import exception_text

        sig = getattr(exception, "sigval", None)  # torchrun's SignalException: the signal the agent received
        why = {
            "exception": exception_text(exception) if exception is not None else None,
            "signal": int(sig) if isinstance(sig, int) else None,
        }
        with self.lock:
            t = time.time()
            if self.events:
                name = f"torchelastic-events-{self.job_id.replace(os.sep, '_')}.json"
                (self.run_dir / name).write_text(json.dumps(self.events, indent=1) + "\n", encoding="utf-8")
            if self.succeeded_at is not None and reason == "completed":
                self.rec.span("shutdown", self.succeeded_at, t, stage="agent_exit")
            if self.watch is not None:
                try:
                    self.watch.report(reason, t, attempt=self.attempt, **why)  # written when the agent is gone
                except OSError:
                    self.rec.attempt_end(reason, t=t, **why)
            else:
                self.rec.attempt_end(reason, t=t, **why)
            self.rec.close()


class _MetricHandler:
    def __init__(self, agent: AgentRecorder) -> None:
        self.agent = agent

    def emit(self, metric_data: Any) -> None:
        try:
            self.agent.metric(metric_data.name, metric_data.value, metric_data.timestamp)
        except Exception:  # noqa: BLE001 - never disturb the agent
            self.agent.errors += 1


class _EventHandler(logging.Handler):
    def __init__(self, agent: AgentRecorder) -> None:
        super().__init__(logging.INFO)
        self.agent = agent

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.agent.event(record)
        except Exception:  # noqa: BLE001
            self.agent.errors += 1


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def _event_destination(torchrun_args: list[str]) -> str | None:
    for i, a in enumerate(torchrun_args):
        if a in ("--event-log-handler", "--event_log_handler") and i + 1 < len(torchrun_args):
            return torchrun_args[i + 1]
        if a.startswith(("--event-log-handler=", "--event_log_handler=")):
            return a.split("=", 1)[1]
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, theirs = _split(argv)
    ap = argparse.ArgumentParser(
        prog="python -m ettcore.integrations.torchrun",
        description="torchrun, with each restart of the worker group recorded as an attempt",
    )
    ap.add_argument("--run-dir", required=True, help="recorder folder of the job (workers record there too)")
    ap.add_argument("--job-id", default=None, help="job id (default: the run folder's name)")
    ap.add_argument("--role", default="default", help="the worker role torchrun reports metrics for (default: default)")
    ap.add_argument("--fsync", action="store_true", help="force every record to disk")
    args = ap.parse_args(ours)
    if not theirs:
        ap.error("give torchrun's arguments after --")

    from torch.distributed import run as torchrun
    from torch.distributed.elastic import metrics

    run_dir = Path(args.run_dir)
    job_id = resolve_job_id(run_dir, args.job_id)
    os.environ.update({ENV_RUN_DIR: str(run_dir.resolve()), ENV_JOB_ID: job_id, ENV_ATTEMPTS_BY: AGENT})
    agent = AgentRecorder(run_dir, job_id, role=args.role, fsync=args.fsync)
    metrics.configure(_MetricHandler(agent))
    handler = _EventHandler(agent)
    for dest in set(EVENT_DESTINATIONS) | {d for d in [_event_destination(theirs)] if d}:
        logging.getLogger(f"torchelastic-events-{dest}").addHandler(handler)
    reason, ended_by = "failure", None
    try:
        torchrun.main(theirs)
        reason = "completed"
    except BaseException as exc:
        ended_by = exc
        if type(exc).__name__ == "SignalException" or isinstance(exc, KeyboardInterrupt):
            reason = "cancelled" if isinstance(exc, KeyboardInterrupt) else "preemption"
        raise
    finally:
        agent.close(reason, ended_by)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
