"""The Slurm job and attempt a process runs in, from the environment Slurm gives a batch job.

:class:`~ettcore.integrations.recorder.Recorder` calls :func:`job_from_environment` when it
is given no job id or no attempt, so spans recorded inside a Slurm job carry
the ids ``ett import slurm`` gives the same job and run:

- job id: ``SLURM_ARRAY_JOB_ID`` + ``_`` + ``SLURM_ARRAY_TASK_ID`` for an array
  task (``1234_7``, as ``sacct`` shows its JobID), else ``SLURM_JOB_ID``;
- attempt: ``SLURM_RESTART_COUNT``, the number of times Slurm requeued the job
  (preemption, ``RequeueExit``, node failure, ``scontrol requeue``).  Slurm
  leaves it unset on a job's first run, so unset means 0.  It equals the run's
  index among the job's ``sacct --duplicates`` rows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class SlurmJob:
    """What a Slurm batch job's environment says about it."""

    job_id: str  # the id sacct's JobID shows (array tasks: ARRAY_TASK)
    attempt: int  # SLURM_RESTART_COUNT, 0 when unset (first run)
    raw_job_id: str  # SLURM_JOB_ID (sacct's JobIDRaw)
    array_job_id: str | None = None
    array_task_id: str | None = None


def _int(env: Mapping[str, str], name: str) -> int | None:
    v = env.get(name, "").strip()
    if not v:
        return None
    try:
        n = int(v)
    except ValueError:
        raise ValueError(f"{name}={v!r} is not an integer") from None
    if n < 0:
        raise ValueError(f"{name}={v!r} is negative")
    return n


def job_from_environment(environ: Mapping[str, str] | None = None) -> SlurmJob | None:
    """The Slurm job of this process, or ``None`` outside Slurm (no ``SLURM_JOB_ID``).

    A malformed value (``SLURM_RESTART_COUNT=abc``) raises :class:`ValueError`
    naming the variable.
    """
    env = os.environ if environ is None else environ
    raw = env.get("SLURM_JOB_ID", "").strip()
    if not raw:
        return None
    _int(env, "SLURM_JOB_ID")
    array_job, array_task = env.get("SLURM_ARRAY_JOB_ID", "").strip(), env.get("SLURM_ARRAY_TASK_ID", "").strip()
    if array_job and array_task:
        _int(env, "SLURM_ARRAY_JOB_ID")
        _int(env, "SLURM_ARRAY_TASK_ID")
        job_id = f"{array_job}_{array_task}"
    else:
        job_id, array_job, array_task = raw, None, None
    return SlurmJob(
        job_id=job_id,
        attempt=_int(env, "SLURM_RESTART_COUNT") or 0,
        raw_job_id=raw,
        array_job_id=array_job or None,
        array_task_id=array_task or None,
    )
