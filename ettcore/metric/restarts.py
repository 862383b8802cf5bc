"""Restarts that go nowhere: crash loops (reporting beside the metric; no figure of the metric changes).

NoF counts a job's interruptions and ``(1 + NoF)`` prices them; a **crash loop** is the pattern the count hides: a
job that restarts from the same checkpoint and crashes again, and again (a poison batch, a deterministic bug).  In the
trace's own fields: an attempt's **resume point** is the ``cursor_start`` of its first train span; a **crash** is an
interruption whose cause's group has the vocabulary's ``crash`` flag (``ettcore/defaults/causes.yaml``: a failure of
the job's own run, not a preemption or a time limit).  A crash loop is a run of at least two consecutive attempts of
one job, each a crash, each after the first resuming from the same point as the attempt before it: no progress was
saved in between.  An attempt with no train span made no progress: it continues a loop it follows, and starts none.
Its **restarts** are the attempts after its first, its **GPU-hours** those they held (the job's GPUs times their
time, to the as-of time), and it **began** at its first attempt's end (its first crash).

The definition, with a worked example, is in ``docs/metric.md`` ("Crash loops"); the query is
``ettcore/sql/metric/crash_loops.sql``; the plain-Python reference the property tests hold it to is
``reference_crash_loops`` in ``tests/reference.py``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ettcore import metric
from ettcore.order import in_natural_order


def crash_loops(trace: Any) -> pl.DataFrame:
    """One row a crash loop, in natural job order then by its first attempt: ``job_id, model, first_attempt,
    last_attempt, restarts, resume_cursor, began, last_crash, gpu_h``."""
    e = metric.engine_of(trace)
    e.prepare()
    return in_natural_order(e.run("metric/crash_loops"), "job_id", "first_attempt")
