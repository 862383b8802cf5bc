"""Each rank's last progress, kept in the run folder for live hang detection (:mod:`ettcore.metric.hangs`).

Only global rank 0 records the trace; every rank (rank 0 included) also keeps one small JSON file,
``progress/<job>-rank-NNNNN.json`` in the run folder (:func:`ettcore.importers.recorder.rank_progress_name`)::

    {"job_id": "j", "attempt": 0, "rank": 3, "node": "host-a", "step": 1200, "cursor": 1200, "t": 1769900000.25}

``step`` counts the steps of this attempt, ``cursor`` is the data cursor after the last one, ``t`` when it ended
(epoch seconds).  The training loop's hot path only stores those three values (:meth:`RankProgress.step`); a daemon
thread writes the file when they changed, at most once every ``interval_s`` (1 s), as a temporary file renamed into
place (a reader never sees half of one).  Because the writer is a thread, a rank blocked inside a collective (which
releases the interpreter's lock) still gets its very last step written within a second.  Errors are counted, never
raised into training.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Callable

from ettcore.importers.recorder import RANK_PROGRESS_DIR, rank_progress_name


def rank_head(job_id: str, attempt: int, rank: int, node: str | None) -> dict:
    """What every record a rank keeps in the run folder starts with: ``job_id, attempt, rank, node`` (the host name
    unless given)."""
    return {"job_id": str(job_id), "attempt": int(attempt), "rank": int(rank), "node": node or socket.gethostname()}


class RankProgress:
    """One rank's last progress, written by a daemon thread at most every ``interval_s`` seconds."""

    def __init__(
        self,
        run_dir: str | os.PathLike,
        job_id: str,
        attempt: int,
        rank: int,
        *,
        node: str | None = None,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(run_dir) / RANK_PROGRESS_DIR / rank_progress_name(job_id, rank)
        self.head = rank_head(job_id, attempt, rank, node)
        self.interval_s = float(interval_s)
        self.clock = clock
        self.steps = 0
        self.cursor: float = 0
        self.t = 0.0
        self.errors = 0
        self._written: tuple | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"ett-rank-progress-{rank}", daemon=True)
        self._thread.start()

    def step(self, cursor: float, t: float | None = None) -> None:
        """A step ended with the data cursor at ``cursor`` (the hot path: three stores and a clock read)."""
        self.t = self.clock() if t is None else t
        self.cursor = cursor
        self.steps += 1

    def flush(self) -> None:
        """Write the file now if the progress changed since the last write (never raises)."""
        state = (self.steps, self.cursor, self.t)
        if state == self._written or self.steps == 0:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            doc = {**self.head, "step": state[0], "cursor": state[1], "t": state[2]}
            tmp = self.path.with_name(f".tmp-{self.path.name}-{os.getpid()}")
            tmp.write_text(json.dumps(doc), encoding="utf-8")
            os.replace(tmp, self.path)
            self._written = state
        except Exception:  # noqa: BLE001 - never stop training
            self.errors += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.flush()

    def close(self) -> None:
        """Stop the thread and write the last progress."""
        self._stop.set()
        self.flush()
