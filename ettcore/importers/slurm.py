"""Import Slurm accounting (``sacct``) as an ETT trace, optionally joined with the recorder's in-job spans.

Inputs (either form, several files allowed; docs/slurm.md has the export commands):

- ``sacct --parsable2 --duplicates --allocations --format=...`` text: a header
  line naming the fields, then one ``|``-separated row per run.  Required
  fields: ``JobID``, ``JobIDRaw``, ``State``, ``Submit``, ``Start``, ``End``;
  used when present: ``JobName``, ``Partition``, ``Account``, ``QOS``,
  ``User``, ``ExitCode``, ``Eligible``, ``AllocTRES``, ``NodeList``, ``DBIndex``.
  Times as epoch seconds (``SLURM_TIME_FORMAT=%s``, recommended) or as
  sacct's zone-less local time, read in ``timezone``.
- ``sacct --json --duplicates`` (Slurm's openapi ``dbv0.0.38`` and later).

Mapping (each choice is also stated, per file, in the import report):

- **Jobs**: one ETT job per Slurm job, keyed by ``JobIDRaw``; its id is sacct's
  ``JobID`` (array tasks ``1234_7`` are jobs of their own, with
  ``array_job_id``/``array_task_id`` labels).  Labels: ``slurm_job_id``,
  ``job_name``, ``partition``, ``account``, ``qos``, ``user`` (a stable hash
  unless ``keep_users``), ``slurm_state`` (the last run's) and ``slurm_runs``.
  ``model`` is the job name (the recorder's model when it has one).
- **Runs**: ``--duplicates`` gives one row per run of a job (every requeue
  starts a new one; rows of different jobs interleave).  A job's rows are
  ordered by (``Submit``, ``Start``, ``End``); run *k* is attempt *k*, which is
  the ``SLURM_RESTART_COUNT`` the run saw (unset on the first run = 0).
- **Queue**: attempt 0 starts at the job's ``Submit``; a ``scheduling`` span
  (stage ``queue``) covers ``Submit -> Start``, so the queue before the first
  run is Time to Start.  A later run's attempt starts at its ``Start``: the gap
  after the previous run's ``End`` is re-queue time (``scheduling``), part of
  the recovery after an interruption.  A last row still pending (requeued,
  waiting) is an attempt of queue time only, ``running``, up to ``as_of``; one
  cancelled while pending is queue time up to its ``End``.
- **End reasons** (:data:`END_REASON`): ``COMPLETED`` -> completed;
  ``FAILED``, ``NODE_FAIL``, ``OUT_OF_MEMORY``, ``BOOT_FAIL``, ``DEADLINE`` ->
  failure; ``PREEMPTED`` -> preemption; ``REQUEUED`` -> preemption when the run
  was requeued from outside (``scontrol requeue``), failure when its own batch
  script failed and ``RequeueExit`` requeued it (text: a non-zero exit status in
  ``ExitCode``; JSON, whose job exit codes Slurm 22.05 reports as 0: the
  ``batch`` step's state ``FAILED``); ``CANCELLED`` -> cancelled; ``TIMEOUT`` ->
  failure by default (``timeout_as``; docs/slurm.md says why);
  ``RUNNING`` and other active states -> running (no end).
- **GPUs**: ``gres/gpu`` in ``AllocTRES`` (the largest over a job's runs), else
  ``gpus`` when given, else the import is refused.
- **Never ran**: a job none of whose rows has a ``Start`` (pending, or cancelled
  while pending) held no hardware and is left out, listed in the report.

With ``recorder_dir`` the recorder's spans (written inside the jobs, which pick
up ``SLURM_JOB_ID`` and ``SLURM_RESTART_COUNT``) are put into the matching
runs: Slurm gives the attempts and the queue, the recorder the phases inside
each run.  Slurm's times are whole seconds, so a span may stick out of its run
by up to ``clock_tolerance_s`` (default 2 s): it is clipped to the run (a train
span's cursor prorated) and counted in the report.  A span further out, or in a
run or job the accounting does not have, is left out and listed, never moved.

Bad input (a truncated file, an unknown state, a run without a start, a
duplicated row, runs of one job that overlap) is a
:class:`~ettcore.errors.InputError` naming file, line and field.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from datetime import timezone as dt_timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ettcore.causes import CauseMap, Signals, load_cause_map
from ettcore.errors import InputError, Problem
from ettcore.importers.frames import TraceFrames
from ettcore.importers.import_report import FileReport, ImportReport
from ettcore.trace.hostlist import expand_field, no_nodes
from ettcore.trace.instants import TS_MAX_MS, TS_MIN_MS
from ettcore.vocabulary import Vocabulary

if TYPE_CHECKING:
    import polars as pl

REQUIRED_FIELDS = ("JobID", "JobIDRaw", "State", "Submit", "Start", "End")
OPTIONAL_FIELDS = (
    "JobName",
    "Partition",
    "Account",
    "QOS",
    "User",
    "ExitCode",
    "Reason",
    "Eligible",
    "AllocTRES",
    "NodeList",
    "DBIndex",
)
# The --format list of the text export (docs/guides/slurm-daily.md, docs/slurm.md).
SACCT_FORMAT = ",".join(
    (
        "JobID",
        "JobIDRaw",
        "JobName",
        "Partition",
        "Account",
        "QOS",
        "User",
        "State",
        "ExitCode",
        "Reason",
        "Submit",
        "Eligible",
        "Start",
        "End",
        "AllocTRES",
        "NodeList",
        "DBIndex",
    )
)
# sacct -E: without an end far in the future, jobs cancelled before they became eligible are missed.
FAR_END = "2100-01-01T00:00:00"


def export_commands(start: str, end: str = FAR_END) -> dict[str, list[str]]:
    """The two documented exports as argument lists, by output file name.

    Run the text one with ``SLURM_TIME_FORMAT=%s`` in the environment (epoch
    seconds: no time zone to guess).  ``start``/``end`` are sacct times
    (``2026-01-01T00:00:00``, local time).  The JSON export keeps the job steps:
    without them a ``REQUEUED`` run's cause cannot be told (Slurm 22.05's JSON
    has no exit codes).
    """
    window = ["--starttime", start, "--endtime", end]
    return {
        "sacct.txt": [
            "sacct",
            "--allusers",
            "--duplicates",
            "--allocations",
            "--parsable2",
            f"--format={SACCT_FORMAT}",
            *window,
        ],
        "sacct.json": ["sacct", "--allusers", "--duplicates", "--json", *window],
    }


# Slurm job states -> trace end reasons.  None: still active (running, or waiting in the queue).
END_REASON: dict[str, str | None] = {
    "COMPLETED": "completed",
    "FAILED": "failure",
    "NODE_FAIL": "failure",
    "OUT_OF_MEMORY": "failure",
    "BOOT_FAIL": "failure",
    "DEADLINE": "failure",
    "SPECIAL_EXIT": "failure",
    "PREEMPTED": "preemption",
    "REQUEUED": "preemption",  # refined by the exit status (see the module doc)
    "REQUEUE_HOLD": "preemption",  # the same, held after the requeue
    "REQUEUE_FED": "preemption",
    "CANCELLED": "cancelled",
    "REVOKED": "cancelled",
    "TIMEOUT": "failure",  # timeout_as
    "RUNNING": None,
    "PENDING": None,
    "SUSPENDED": None,
    "COMPLETING": None,
    "CONFIGURING": None,
    "STAGE_OUT": None,
    "SIGNALING": None,
    "RESIZING": None,
    "STOPPED": None,
}
REQUEUE_STATES = ("REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED")
# States in which a run may never have started (no Start): it waited in the queue and ended there.
QUEUE_ONLY_STATES = (
    "PENDING",
    "CANCELLED",
    "REVOKED",
    "BOOT_FAIL",
    "DEADLINE",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "SPECIAL_EXIT",
)
UNKNOWN_TIMES = ("", "unknown", "none", "n/a")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_ARRAY_TASK = re.compile(r"^(\d+)_(\d+)$")
_ARRAY_PENDING = re.compile(r"^\d+_\[.*\]$")
_HET = re.compile(r"^(\d+)\+(\d+)$")
_GPU_TRES = re.compile(r"^gres/gpu(?::[^=]+)?$")


@dataclass
class Run:
    """One row of the accounting: one run of one job allocation."""

    src: str
    row: int  # line (text) or 1-based index in "jobs" (JSON)
    raw_id: str
    job_id: str
    state: str
    submit: float
    start: float | None
    end: float | None
    eligible: float | None = None
    name: str | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    user: str | None = None
    gpus: int | None = None
    gpu_type: str | None = None  # the typed gres/gpu name of AllocTRES (gres/gpu:h100=8 -> h100)
    exit_status: int | None = None  # the batch script's exit status (text form only)
    exit_signal: int | None = None  # the signal that ended it (ExitCode's part after ':'; text form only)
    reason: str | None = None  # sacct's Reason (text form only)
    batch_failed: bool | None = None  # the batch step's state was FAILED (JSON form, with steps)
    db_index: int | None = None
    array_job_id: str | None = None
    array_task_id: str | None = None
    allocated: bool | None = None  # False: no node was allocated (NodeList "None assigned"); None: not known
    nodes: str | None = None  # the NodeList in Slurm's range form (gpu[01-03,07]), checked to expand; None: none
    fields: dict[str, str] = field(default_factory=dict)  # field name in the source, for messages

    def where(self, name: str) -> str:
        return self.fields.get(name, name)


# --------------------------------------------------------------------------- reading


def _problem(src: str, row: int | None, fld: str | None, msg: str, job: str | None = None) -> Problem:
    return Problem(src, row, fld, msg, table="sacct", job_id=job)


def _parse_time(
    value: Any, src: str, row: int, fld: str, tz: dt_timezone | ZoneInfo, seen_zoneless: list[int]
) -> float | None:
    """Epoch seconds from sacct's text (epoch digits, or zone-less ISO local time) or JSON (int; 0 = unset)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(_problem(src, row, fld, f"not a time: {value!r}"))
    if isinstance(value, (int, float)):
        if value == 0:
            return None
        t = float(value)
    else:
        text = str(value).strip()
        if text.lower() in UNKNOWN_TIMES:
            return None
        if re.fullmatch(r"\d+(\.\d+)?", text):
            t = float(text)
            if t == 0:
                return None
        elif _ISO.match(text):
            try:
                t = datetime.fromisoformat(text).replace(tzinfo=tz).timestamp()
            except ValueError as exc:
                raise InputError(_problem(src, row, fld, f"not a valid time: {text!r} ({exc})")) from None
            seen_zoneless.append(row)
        else:
            raise InputError(
                _problem(
                    src,
                    row,
                    fld,
                    f"not a time sacct writes (epoch seconds, or YYYY-MM-DDTHH:MM:SS, 'Unknown'): {text!r}",
                )
            )
    if not math.isfinite(t) or not TS_MIN_MS <= t * 1000 <= TS_MAX_MS:
        raise InputError(_problem(src, row, fld, f"time out of the plausible range 1990..2100: {value!r}"))
    return t


def _state(value: Any, src: str, row: int, fld: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(_problem(src, row, fld, f"missing job state: {value!r}"))
    s = value.strip().split()[0].upper()  # "CANCELLED by 0" -> CANCELLED
    if s not in END_REASON:
        raise InputError(
            _problem(src, row, fld, f"unknown job state {value.strip()!r}; known: {', '.join(sorted(END_REASON))}")
        )
    return s


def _gpus_from_tres(text: str, src: str, row: int, fld: str) -> tuple[int | None, str | None]:
    """``gres/gpu`` count and GPU type of an AllocTRES string (``billing=1,cpu=1,gres/gpu:h100=8,node=1``): the
    untyped count, else the typed counts summed; the type is the typed names (``h100``; several joined by ``+`` in
    name order), None when only an untyped count is given."""
    untyped, typed, types = None, 0, set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise InputError(_problem(src, row, fld, f"not a TRES list (name=count,...): {text!r}"))
        name, count = part.split("=", 1)
        if not _GPU_TRES.match(name):
            continue
        try:
            n = int(count)
        except ValueError:
            raise InputError(_problem(src, row, fld, f"gres/gpu count is not an integer: {part!r}")) from None
        if n < 0:
            raise InputError(_problem(src, row, fld, f"negative gres/gpu count: {part!r}"))
        if name == "gres/gpu":
            untyped = n
        else:
            typed += n
            types.add(name.split(":", 1)[1])
    gpu_type = "+".join(sorted(types)) or None
    if untyped is not None:
        return untyped, gpu_type
    return typed or None, gpu_type


def _allocated(nodes: str) -> bool:
    """Whether a NodeList names allocated nodes (a job that never ran has ``None assigned``)."""
    return not no_nodes(nodes)


def _nodes(text: str | None, src: str, row: int, fld: str) -> str | None:
    """A run's node list as Slurm writes it (``gpu[01-03,07]``), checked to expand (:mod:`ettcore.trace.hostlist`);
    None when it names no node."""
    if no_nodes(text):
        return None
    text = text.strip()
    expand_field(text, src, row, fld, table="sacct")
    return text


def _exit_status(text: str, src: str, row: int, fld: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    m = re.fullmatch(r"(\d+):(\d+)", text)
    if not m:
        raise InputError(_problem(src, row, fld, f"not an exit code (status:signal): {text!r}"))
    return int(m.group(1))


def _exit_signal(text: str) -> int | None:
    """The signal part of an ExitCode ``status:signal`` (checked by :func:`_exit_status`)."""
    m = re.fullmatch(r"(\d+):(\d+)", text.strip())
    return int(m.group(2)) if m else None


def _ids(job_id: str, raw: str, src: str, row: int, fld: str) -> tuple[str | None, str | None]:
    m = _ARRAY_TASK.match(job_id)
    if m:
        return m.group(1), m.group(2)
    if not (job_id.isdigit() or _HET.match(job_id)):
        raise InputError(_problem(src, row, fld, f"not a job id sacct writes (1234, 1234_7, 1234+0): {job_id!r}"))
    return None, None


def _read_text(text: str, src: str, tz, fr: FileReport) -> list[Run]:
    lines = text.splitlines()
    if not lines or "|" not in lines[0]:
        raise InputError(
            _problem(
                src,
                1 if lines else None,
                None,
                "no header line of '|'-separated field names: export with --parsable2 (without --noheader)",
            )
        )
    head = lines[0].split("|")
    trailing = head[-1] == ""  # --parsable (not 2) ends every line with '|'
    if trailing:
        head = head[:-1]
    missing = [f for f in REQUIRED_FIELDS if f not in head]
    if missing:
        raise InputError(
            _problem(
                src,
                1,
                missing[0],
                f"header lacks the field(s) {', '.join(missing)}; "
                f"export with --format={','.join(REQUIRED_FIELDS + OPTIONAL_FIELDS)}",
            )
        )
    dup = sorted({f for f in head if head.count(f) > 1})
    if dup:
        raise InputError(_problem(src, 1, dup[0], "field named twice in the header"))
    fr.facts["fields"] = ",".join(head)
    absent = [f for f in OPTIONAL_FIELDS if f not in head]
    if absent:
        fr.note(
            "info",
            f"fields not in the export: {', '.join(absent)}",
            "the import does without them (labels left empty; "
            "without ExitCode a REQUEUED run counts as a preemption; without AllocTRES GPUs need --gpus)",
        )
    runs: list[Run] = []
    steps: list[int] = []
    pending_arrays: list[int] = []
    zoneless: list[int] = []
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        vals = line.split("|")
        if trailing and vals and vals[-1] == "":
            vals = vals[:-1]
        if len(vals) != len(head):
            raise InputError(
                _problem(
                    src,
                    lineno,
                    None,
                    f"{len(vals)} fields where the header has {len(head)} (a truncated line, or a '|' inside a value)",
                )
            )
        d = dict(zip(head, vals))
        job_id, raw = d["JobID"].strip(), d["JobIDRaw"].strip()
        if not job_id:
            raise InputError(_problem(src, lineno, "JobID", "empty job id"))
        if "." in job_id or "." in raw:
            steps.append(lineno)
            continue
        if _ARRAY_PENDING.match(job_id):
            pending_arrays.append(lineno)
            continue
        if not raw.isdigit():
            raise InputError(_problem(src, lineno, "JobIDRaw", f"not a job id: {raw!r}"))
        array_job, array_task = _ids(job_id, raw, src, lineno, "JobID")
        state = _state(d["State"], src, lineno, "State")
        submit = _parse_time(d["Submit"], src, lineno, "Submit", tz, zoneless)
        if submit is None:
            raise InputError(_problem(src, lineno, "Submit", "no submit time", job_id))
        opt = lambda k: (d.get(k) or "").strip() or None  # noqa: E731
        db = opt("DBIndex")
        if db is not None and not db.isdigit():
            raise InputError(_problem(src, lineno, "DBIndex", f"not an integer: {db!r}", job_id))
        gpus, gpu_type = _gpus_from_tres(d.get("AllocTRES", ""), src, lineno, "AllocTRES")
        runs.append(
            Run(
                src=src,
                row=lineno,
                raw_id=raw,
                job_id=job_id,
                state=state,
                submit=submit,
                start=_parse_time(d["Start"], src, lineno, "Start", tz, zoneless),
                end=_parse_time(d["End"], src, lineno, "End", tz, zoneless),
                eligible=_parse_time(d["Eligible"], src, lineno, "Eligible", tz, zoneless) if "Eligible" in d else None,
                name=opt("JobName"),
                partition=opt("Partition"),
                account=opt("Account"),
                qos=opt("QOS"),
                user=opt("User"),
                gpus=gpus,
                gpu_type=gpu_type,
                exit_status=_exit_status(d.get("ExitCode", ""), src, lineno, "ExitCode"),
                exit_signal=_exit_signal(d.get("ExitCode", "")),
                reason=None if opt("Reason") in (None, "None") else opt("Reason"),
                db_index=int(db) if db is not None else None,
                array_job_id=array_job,
                array_task_id=array_task,
                allocated=None if "NodeList" not in d else _allocated(d["NodeList"]),
                nodes=_nodes(d.get("NodeList"), src, lineno, "NodeList"),
            )
        )
    if steps:
        fr.note(
            "dropped",
            "job step rows (JobID with a '.')",
            "the allocation row carries the run; export with --allocations",
            steps,
        )
    if pending_arrays:
        fr.note(
            "dropped", "pending job-array rows (1234_[2-9])", "tasks not yet started are not jobs yet", pending_arrays
        )
    if zoneless:
        fr.note(
            "inferred",
            "zone-less times",
            f"read as local time in {tz}; export with SLURM_TIME_FORMAT=%s to avoid this",
            zoneless,
            count=len(set(zoneless)),
        )
    return runs


def _json_get(obj: Any, path: Sequence[str], src: str, row: int, prefix: str, required: bool = True) -> Any:
    cur = obj
    for i, key in enumerate(path):
        if not isinstance(cur, dict) or key not in cur:
            if not required:
                return None
            raise InputError(_problem(src, row, f"{prefix}.{'.'.join(path[: i + 1])}", "missing"))
        cur = cur[key]
    return cur


def _read_json(text: str, src: str, fr: FileReport) -> list[Run]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        line = min(exc.lineno, max(1, len(text.splitlines())))  # the end of a file ending in a newline is its last line
        raise InputError(
            _problem(
                src,
                line,
                None,
                f"not valid JSON (a truncated export?): {exc.msg} at line {exc.lineno} column {exc.colno}",
            )
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise InputError(_problem(src, None, "jobs", "not a sacct --json export: no 'jobs' list"))
    errors = doc.get("errors") or []
    if errors:
        raise InputError(
            _problem(src, None, "errors", f"sacct reported errors with this export: {json.dumps(errors)[:300]}")
        )
    version = ((doc.get("meta") or {}).get("Slurm") or {}).get("release")
    if version:
        fr.facts["slurm_release"] = version
    clusters = sorted({j.get("cluster") for j in doc["jobs"] if isinstance(j, dict) and j.get("cluster")})
    if len(clusters) > 1:
        raise InputError(
            _problem(
                src,
                None,
                "cluster",
                f"jobs of several clusters ({', '.join(clusters)}): export one cluster at a time (sacct -M NAME)",
            )
        )
    runs: list[Run] = []
    steps_missing: list[int] = []
    pending_arrays: list[int] = []
    tz = dt_timezone.utc
    zoneless: list[int] = []
    for i, j in enumerate(doc["jobs"], start=1):
        pre = f"jobs[{i - 1}]"
        if not isinstance(j, dict):
            raise InputError(_problem(src, i, pre, "a job must be an object"))
        g = lambda *path, required=True: _json_get(j, path, src, i, pre, required)  # noqa: E731
        raw = g("job_id")
        if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
            raise InputError(_problem(src, i, f"{pre}.job_id", f"not a job id: {raw!r}"))

        def whole(path: tuple[str, ...], none_ok: bool = True) -> int | None:
            v = g(*path, required=False)
            if v is None and none_ok:
                return None
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InputError(_problem(src, i, f"{pre}.{'.'.join(path)}", f"not a whole number >= 0: {v!r}"))
            return v

        array_job = whole(("array", "job_id")) or 0
        task = whole(("array", "task_id"))
        het_job, het_off = whole(("het", "job_id")) or 0, whole(("het", "job_offset"))
        if array_job and task is None:
            pending_arrays.append(i)
            continue
        if array_job:
            job_id, array_job_id, array_task_id = f"{array_job}_{task}", str(array_job), str(task)
        elif het_job and het_off is not None:
            job_id, array_job_id, array_task_id = f"{het_job}+{het_off}", None, None
        else:
            job_id, array_job_id, array_task_id = str(raw), None, None
        state = _state(g("state", "current"), src, i, f"{pre}.state.current")
        f = {k: f"{pre}.time.{k.lower()}" for k in ("Submission", "Start", "End", "Eligible")}
        submit = _parse_time(g("time", "submission"), src, i, f["Submission"], tz, zoneless)
        if submit is None:
            raise InputError(_problem(src, i, f["Submission"], "no submit time", job_id))
        untyped, typed, types = None, 0, set()
        allocated_tres = g("tres", "allocated", required=False) or []
        if not isinstance(allocated_tres, list):
            raise InputError(
                _problem(src, i, f"{pre}.tres.allocated", f"not a list of TRES: {allocated_tres!r}"[:200], job_id)
            )
        for t in allocated_tres:
            if (
                isinstance(t, dict)
                and t.get("type") == "gres"
                and isinstance(t.get("name"), str)
                and (t["name"] == "gpu" or t["name"].startswith("gpu:"))
            ):
                n = t.get("count")
                if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                    raise InputError(
                        _problem(src, i, f"{pre}.tres.allocated", f"gres/gpu count is not an integer: {n!r}", job_id)
                    )
                if t["name"] == "gpu":
                    untyped = n
                else:
                    typed += n
                    types.add(t["name"].split(":", 1)[1])
        gpus = untyped if untyped is not None else (typed or None)
        batch_failed = None
        steps = j.get("steps")
        if steps is not None and not isinstance(steps, list):
            raise InputError(_problem(src, i, f"{pre}.steps", f"not a list of steps: {steps!r}"[:200], job_id))
        if steps:
            for s in steps:
                name = ((s or {}).get("step") or {}).get("name") if isinstance(s, dict) else None
                if name == "batch":
                    st = s.get("state")
                    batch_failed = isinstance(st, str) and st.split()[0].upper() in ("FAILED", "OUT_OF_MEMORY")
        elif state in REQUEUE_STATES:
            steps_missing.append(i)

        def text_or_none(key: str) -> str | None:
            v = j.get(key)
            if v is None or isinstance(v, str):
                return (v or "").strip() or None
            raise InputError(_problem(src, i, f"{pre}.{key}", f"not a text: {v!r}"[:200], job_id))

        runs.append(
            Run(
                src=src,
                row=i,
                raw_id=str(raw),
                job_id=job_id,
                state=state,
                submit=submit,
                start=_parse_time(g("time", "start", required=False), src, i, f["Start"], tz, zoneless),
                end=_parse_time(g("time", "end", required=False), src, i, f["End"], tz, zoneless),
                eligible=_parse_time(g("time", "eligible", required=False), src, i, f["Eligible"], tz, zoneless),
                name=text_or_none("name"),
                partition=text_or_none("partition"),
                account=text_or_none("account"),
                qos=text_or_none("qos"),
                user=text_or_none("user"),
                gpus=gpus,
                gpu_type="+".join(sorted(types)) or None,
                batch_failed=batch_failed,
                array_job_id=array_job_id,
                array_task_id=array_task_id,
                allocated=_allocated(j["nodes"]) if isinstance(j.get("nodes"), str) else None,
                nodes=_nodes(j.get("nodes") if isinstance(j.get("nodes"), str) else None, src, i, f"{pre}.nodes"),
                fields={
                    "Submit": f["Submission"],
                    "Start": f["Start"],
                    "End": f["End"],
                    "State": f"{pre}.state.current",
                    "JobIDRaw": f"{pre}.job_id",
                    "AllocTRES": f"{pre}.tres.allocated",
                },
            )
        )
    if pending_arrays:
        fr.note(
            "dropped",
            "pending job-array records (array.task_id null)",
            "tasks not yet started are not jobs yet",
            pending_arrays,
        )
    if steps_missing:
        fr.note(
            "inferred",
            "REQUEUED run without its steps",
            "the export has no batch step (made with --allocations?) and "
            "sacct --json of Slurm 22.05 reports exit codes as 0: taken as a preemption; export without --allocations "
            "to tell a RequeueExit crash (failure) from an outside requeue",
            steps_missing,
        )
    fr.note(
        "info",
        "exit codes",
        "not read from JSON (Slurm 22.05 writes 0 for every job); a REQUEUED run's cause comes "
        "from its batch step's state",
    )
    return runs


def read_sacct(path: str | Path, fr: FileReport, timezone: str = "UTC") -> list[Run]:
    """The runs of one export (text or JSON, told apart by the first character)."""
    path = Path(path)
    src = fr.file
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(_problem(src, None, None, f"cannot read sacct export: {exc}")) from None
    if not text.strip():
        raise InputError(_problem(src, None, None, "empty sacct export"))
    if text.lstrip().startswith("{"):
        fr.facts["form"] = "sacct --json"
        return _read_json(text, src, fr)
    try:
        tz = dt_timezone.utc if timezone.upper() == "UTC" else ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(
            Problem("--timezone", None, "timezone", f"unknown time zone {timezone!r} (e.g. UTC, Europe/Paris)")
        ) from None
    fr.facts["form"] = "sacct --parsable2"
    return _read_text(text, src, tz, fr)


# --------------------------------------------------------------------------- building the trace


def user_label(user: str | None, keep: bool) -> str | None:
    """The user as a label: the name with ``keep``, else ``u-`` and 12 hex digits of its SHA-256 (stable, not
    reversible)."""
    if user is None or keep:
        return user
    return "u-" + hashlib.sha256(user.encode("utf-8")).hexdigest()[:12]


def _order(runs: list[Run]) -> list[Run]:
    inf = math.inf
    return sorted(
        runs,
        key=lambda r: (
            r.submit,
            r.start if r.start is not None else inf,
            r.end if r.end is not None else inf,
            r.src,
            r.row,
        ),
    )


def _end_reason(r: Run, timeout_as: str) -> str | None:
    reason = END_REASON[r.state]
    if r.state == "TIMEOUT":
        return timeout_as
    if r.state in REQUEUE_STATES:
        if (r.exit_status is not None and r.exit_status != 0) or r.batch_failed:
            return "failure"
    return reason


@dataclass
class _Job:
    raw_id: str
    job_id: str
    runs: list[Run]


def _check_duplicates(runs: list[Run]) -> None:
    seen: dict[tuple, Run] = {}
    seen_db: dict[int, Run] = {}
    problems = []
    for r in runs:
        key = (r.raw_id, r.submit, r.start, r.end, r.state)
        if key in seen:
            first = seen[key]
            problems.append(
                _problem(
                    r.src,
                    r.row,
                    r.where("JobIDRaw"),
                    f"duplicated row: job {r.job_id} run with the same submit, "
                    f"start, end and state as {first.src} line {first.row}",
                    r.job_id,
                )
            )
        else:
            seen[key] = r
        if r.db_index is not None:
            if r.db_index in seen_db and seen_db[r.db_index] is not seen.get(key):
                first = seen_db[r.db_index]
                problems.append(
                    _problem(
                        r.src, r.row, "DBIndex", f"DBIndex {r.db_index} also on {first.src} line {first.row}", r.job_id
                    )
                )
            seen_db.setdefault(r.db_index, r)
    if problems:
        raise InputError(problems[:50])


def _group(runs: list[Run]) -> list[_Job]:
    by: dict[str, list[Run]] = {}
    for r in runs:
        by.setdefault(r.raw_id, []).append(r)
    jobs = []
    for raw, rs in by.items():
        ids = sorted({r.job_id for r in rs})
        if len(ids) > 1:
            r = next(x for x in rs if x.job_id != rs[0].job_id)
            raise InputError(
                _problem(
                    r.src,
                    r.row,
                    "JobID",
                    f"JobIDRaw {raw} is JobID {rs[0].job_id!r} on {rs[0].src} line {rs[0].row} but {r.job_id!r} here",
                )
            )
        jobs.append(_Job(raw, ids[0], _order(rs)))
    return sorted(jobs, key=lambda j: (j.runs[0].submit, int(j.raw_id)))


def _queue_span(job_id: str, attempt: int, start: float, end: float) -> dict:
    """A ``scheduling`` span of stage ``queue`` (no cursor: :meth:`TraceFrames.from_rows` leaves it null)."""
    return dict(job_id=job_id, attempt=attempt, phase="scheduling", stage="queue", start=start, end=end)


def _waiting_attempt(
    job: _Job,
    k: int,
    r: Run,
    reason: str | None,
    *,
    last: bool,
    prev_end: float | None,
    as_of: float,
    report: ImportReport,
) -> tuple[dict, dict]:
    """Build stage: (attempt, queue span) of a run that never started, which must be the job's last (requeued and
    still waiting, or cancelled or failed while waiting): queue time from the submit (or the previous run's end) to
    its end, or to ``as_of`` while it waits.  A clock skew and a run still waiting are tallied in ``report``."""
    if r.state not in QUEUE_ONLY_STATES:
        raise InputError(_problem(r.src, r.row, r.where("Start"), f"a {r.state} run without a start time", job.job_id))
    if not last:
        raise InputError(
            _problem(
                r.src,
                r.row,
                r.where("Start"),
                "a run that never started, followed by another run of the same job",
                job.job_id,
            )
        )
    q0 = r.submit if prev_end is None else prev_end
    q1 = r.end if reason is not None else as_of
    if reason is not None and q1 is None:
        raise InputError(
            _problem(r.src, r.row, r.where("End"), f"a {r.state} row with neither start nor end", job.job_id)
        )
    if q1 < q0:
        what = "queue end before its start (clock skew, or --as-of before the requeue): zero queue time"
        report.tally("corrected", what, r.src, r.row, r.job_id)
        q1 = q0
    attempt = dict(
        job_id=job.job_id, attempt=k, start=q0, end=None if reason is None else q1, end_reason=reason or "running"
    )
    span = _queue_span(job.job_id, k, q0, q1)
    if reason is None:
        what = "still waiting in the queue: running, its queue time counted up to the as-of time"
        report.tally("inferred", what, r.src, r.row, r.job_id)
    return attempt, span


def _check_run(job: _Job, r: Run, reason: str | None, *, last: bool, prev_end: float | None) -> None:
    """Parse stage, one run that started: an active run followed by another, a run without an end, a run ending
    before it starts and a run overlapping the previous one are input errors."""
    if reason is None and not last:
        raise InputError(
            _problem(
                r.src,
                r.row,
                r.where("State"),
                f"still {r.state} but a later run of the same job "
                "follows (a runaway record: see sacctmgr show runawayjobs)",
                job.job_id,
            )
        )
    if reason is not None and r.end is None:
        raise InputError(_problem(r.src, r.row, r.where("End"), f"a {r.state} run without an end time", job.job_id))
    if r.end is not None and r.end < r.start:
        raise InputError(
            _problem(
                r.src,
                r.row,
                r.where("End"),
                f"the run ends ({r.end:.0f}) before it starts ({r.start:.0f})",
                job.job_id,
            )
        )
    if prev_end is not None and r.start < prev_end:
        raise InputError(
            _problem(
                r.src,
                r.row,
                r.where("Start"),
                f"the run starts before the previous run of the job ended "
                f"({r.start:.0f} < {prev_end:.0f}): overlapping runs (a reused job id?)",
                job.job_id,
            )
        )


def _first_queue(job: _Job, r: Run, report: ImportReport) -> tuple[float, list[dict]]:
    """Build stage, the job's first run ``r``: (the start of attempt 0, its queue span from submit to start, if any).
    A start before the submit (clock skew) is tallied in ``report``: the job then starts at its run's start."""
    a_start = r.submit
    if r.start < r.submit:
        what = "start before submit (clock skew): the job starts at its run's start"
        report.tally("corrected", what, r.src, r.row, r.job_id)
        a_start = r.start
    if r.start <= a_start:
        return a_start, []
    return a_start, [_queue_span(job.job_id, 0, a_start, r.start)]


def _cause(r: Run, reason: str | None, cause_map: CauseMap) -> str | None:
    """An interrupted run's cause, from its state, exit status and signal and Reason (None: not an interruption)."""
    return cause_map.classify(Signals("slurm", reason or "running", r.state, r.exit_status, r.exit_signal, r.reason))


def _build_job(
    job: _Job, report: ImportReport, *, timeout_as: str, as_of: float, cause_map: CauseMap
) -> tuple[list[dict], list[dict], dict[tuple[str, int], tuple[float, float | None]]]:
    """Build stage, one job: its attempts (run *k* is attempt *k*), its queue span(s) (epoch seconds) and each run's
    (start, end) by (job id, attempt).  Odd runs are tallied in ``report``."""
    attempts: list[dict] = []
    spans: list[dict] = []
    bounds: dict[tuple[str, int], tuple[float, float | None]] = {}
    prev_end: float | None = None
    for k, r in enumerate(job.runs):
        last = k == len(job.runs) - 1
        reason = _end_reason(r, timeout_as)
        if r.start is None:
            a, sp = _waiting_attempt(job, k, r, reason, last=last, prev_end=prev_end, as_of=as_of, report=report)
            a["cause"] = _cause(r, a["end_reason"] if a["end"] is not None else None, cause_map)
            attempts.append(a)
            spans.append(sp)
            break
        _check_run(job, r, reason, last=last, prev_end=prev_end)
        a_start = r.start
        if k == 0:
            a_start, queue = _first_queue(job, r, report)
            spans += queue
        end = r.end if reason is not None else None  # an active run's End is not its end
        attempts.append(
            dict(
                job_id=job.job_id,
                attempt=k,
                start=a_start,
                end=end,
                end_reason=reason or "running",
                cause=_cause(r, reason, cause_map),
                nodes=r.nodes,
            )
        )
        bounds[(job.job_id, k)] = (r.start, end)
        prev_end = r.end
    return attempts, spans, bounds


def _job_gpus(job: _Job, gpus: int | None, report: ImportReport) -> int | None:
    """Build stage: the GPUs of a job that ran: the largest gres/gpu count of its runs, else ``gpus`` (--gpus), else
    None (unknown).  Either inference is tallied in ``report``."""
    ran = [r for r in job.runs if r.start is not None]
    counts = [r.gpus for r in ran if r.gpus]
    if counts:
        if len(set(counts)) > 1:
            what = "runs of one job held different gres/gpu counts: the largest is used"
            report.tally("inferred", what, ran[0].src, ran[0].row, ran[0].job_id)
        return max(counts)
    if gpus is not None:
        report.tally(
            "inferred", f"no gres/gpu in AllocTRES: gpus = {gpus} (--gpus)", ran[0].src, ran[0].row, ran[0].job_id
        )
        return gpus
    return None


def _job_row(job: _Job, gpus: int, keep_users: bool) -> dict:
    """Build stage: the ``jobs`` row of a job that ran (its labels from its last run)."""
    last = job.runs[-1]
    return dict(
        job_id=job.job_id,
        model=last.name or job.job_id,
        gpus=gpus,
        slurm_job_id=job.raw_id,
        job_name=last.name,
        partition=last.partition,
        account=last.account,
        qos=last.qos,
        user=user_label(last.user, keep_users),
        array_job_id=last.array_job_id,
        array_task_id=last.array_task_id,
        slurm_state=last.state,
        slurm_runs=sum(1 for r in job.runs if r.start is not None),
        gpu_type=next((r.gpu_type for r in reversed(job.runs) if r.gpu_type), None),
    )


@dataclass
class _Built:
    """What the build stage made: the trace's rows, each run's (start, end) by (job id, attempt), and the jobs that
    never started (left out)."""

    attempts: list[dict] = field(default_factory=list)
    spans: list[dict] = field(default_factory=list)
    job_rows: list[dict] = field(default_factory=list)
    bounds: dict[tuple[str, int], tuple[float, float | None]] = field(default_factory=dict)
    never_ran: list[_Job] = field(default_factory=list)

    @property
    def kept(self) -> set[str]:
        """The ids of the jobs imported."""
        return {j["job_id"] for j in self.job_rows}


def _build(
    jobs: list[_Job],
    report: ImportReport,
    *,
    timeout_as: str,
    as_of: float,
    gpus: int | None,
    keep_users: bool,
    cause_map: CauseMap,
) -> _Built:
    """Build stage: attempts, spans and job rows of every job that ran; the jobs that never started set aside.
    A job without a GPU count (no gres/gpu and no ``gpus``) is an input error."""
    built = _Built()
    no_gpus: list[Run] = []
    for job in jobs:
        if all(r.start is None for r in job.runs):
            for r in job.runs:
                if r.state not in QUEUE_ONLY_STATES:
                    raise InputError(
                        _problem(r.src, r.row, r.where("Start"), f"a {r.state} run without a start time", job.job_id)
                    )
            built.never_ran.append(job)
            continue
        attempts, spans, bounds = _build_job(job, report, timeout_as=timeout_as, as_of=as_of, cause_map=cause_map)
        built.attempts += attempts
        built.spans += spans
        built.bounds.update(bounds)
        n_gpus = _job_gpus(job, gpus, report)
        if n_gpus is None:
            no_gpus.append(next(r for r in job.runs if r.start is not None))
            continue
        built.job_rows.append(_job_row(job, n_gpus, keep_users))
    if not any(r["gpu_type"] for r in built.job_rows):  # the label only where AllocTRES names a GPU type
        for r in built.job_rows:
            del r["gpu_type"]
    if no_gpus:
        raise InputError(
            [
                _problem(
                    r.src,
                    r.row,
                    r.where("AllocTRES"),
                    f"job {r.job_id}: no gres/gpu in AllocTRES, so its GPUs "
                    "are unknown; give --gpus N (e.g. --gpus 1 for CPU jobs)",
                    r.job_id,
                )
                for r in no_gpus[:20]
            ]
        )
    return built


def _check_options(paths: list[Path], timeout_as: str, gpus: int | None, clock_tolerance_s: float) -> None:
    """The options of :func:`import_sacct`, each checked (an input error naming the option)."""
    if not paths:
        raise InputError(Problem("sacct", None, None, "no sacct export given"))
    if timeout_as not in ("failure", "cancelled"):
        raise InputError(
            Problem("--timeout-as", None, "timeout_as", f"must be 'failure' or 'cancelled', got {timeout_as!r}")
        )
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
        raise InputError(Problem("--gpus", None, "gpus", f"must be an integer >= 1, got {gpus!r}"))
    if (
        isinstance(clock_tolerance_s, bool)
        or not isinstance(clock_tolerance_s, (int, float))
        or not 0 <= clock_tolerance_s < 3600
    ):
        raise InputError(
            Problem(
                "--clock-tolerance",
                None,
                "clock_tolerance_s",
                f"must be seconds in [0, 3600), got {clock_tolerance_s!r}",
            )
        )


def _file_name(p: Path, relative_to: str | Path | None) -> str:
    """``p`` as the report names it: relative to ``relative_to`` when it lies below it."""
    if relative_to is not None:
        try:
            return str(p.resolve().relative_to(Path(relative_to).resolve()))
        except ValueError:
            pass
    return str(p)


def _parse(paths: list[Path], report: ImportReport, name: Callable[[Path], str], timezone: str) -> list[Run]:
    """Parse stage: the runs of every export (one :class:`FileReport` a file, named by ``name``), checked for
    duplicates.  A run with a Start but no node allocated never started: its start is dropped, with a note."""
    runs: list[Run] = []
    for p in paths:
        fr = report.add_file(name(p))
        got = read_sacct(p, fr, timezone=timezone)
        fr.facts["rows"] = len(got)
        runs.extend(got)
    if not runs:
        raise InputError(Problem(report.files[0].file, None, None, "no job allocation rows in the export(s)"))
    _check_duplicates(runs)
    unallocated: dict[str, list[int]] = {}
    for r in runs:
        if r.allocated is False and r.start is not None:
            # sacct gives a job cancelled while pending a Start equal to its End, but no node: it never started
            r.start = None
            unallocated.setdefault(r.src, []).append(r.row)
    for src, rows in unallocated.items():
        report.file(src).note(
            "inferred",
            "a Start time but no node allocated (NodeList 'None assigned')",
            "sacct gives a job cancelled while waiting a Start equal to its End: it never started",
            rows,
        )
    return runs


def _note_file(fr: FileReport, runs: list[Run], timeout_as: str) -> None:
    """Note stage, one export: its rows by state, and how its REQUEUED and TIMEOUT runs were taken."""
    mine = [r for r in runs if r.src == fr.file]
    by_state: dict[str, int] = {}
    for r in mine:
        by_state[r.state] = by_state.get(r.state, 0) + 1
    fr.facts["rows by state"] = ", ".join(f"{k} {v}" for k, v in sorted(by_state.items()))
    requeued_fail = sum(1 for r in mine if r.state in REQUEUE_STATES and _end_reason(r, timeout_as) == "failure")
    requeued_pre = sum(1 for r in mine if r.state in REQUEUE_STATES and _end_reason(r, timeout_as) == "preemption")
    if requeued_fail or requeued_pre:
        fr.note(
            "inferred",
            "REQUEUED runs",
            f"{requeued_fail} requeued after their batch script failed (RequeueExit): "
            f"failure; {requeued_pre} requeued from outside: preemption",
        )
    if any(r.state == "TIMEOUT" for r in mine):
        fr.note(
            "inferred",
            "TIMEOUT runs",
            f"taken as {timeout_as} (--timeout-as; docs/slurm.md)",
            [r.row for r in mine if r.state == "TIMEOUT"],
        )


def _note(
    report: ImportReport,
    runs: list[Run],
    jobs: list[_Job],
    built: _Built,
    *,
    timeout_as: str,
    as_of: float,
    as_of_given: bool,
) -> None:
    """Note stage: the tallied notes, the jobs that never started, each export's facts and jobs, and the totals."""
    report.write_tallies()
    never_ran = built.never_ran
    for src in sorted({j.runs[0].src for j in never_ran}):
        mine = [j for j in never_ran if j.runs[0].src == src]
        shown = ", ".join(f"{j.job_id} ({j.runs[-1].state})" for j in mine[:20]) + (" ..." if len(mine) > 20 else "")
        report.file(src).note(
            "dropped",
            f"{len(mine)} job(s) that never started",
            f"held no hardware: {shown}",
            [r.row for j in mine for r in j.runs],
            count=len(mine),
        )
    files_of: dict[str, set[str]] = {}
    kept = built.kept
    for job in jobs:
        if job.job_id in kept:
            for r in job.runs:
                files_of.setdefault(r.src, set()).add(job.job_id)
    for fr in report.files:
        _note_file(fr, runs, timeout_as)
        fr.job_ids = sorted(files_of.get(fr.file, ()))
    facts = report.files[0].facts
    facts["jobs imported"] = len(built.job_rows)
    facts["attempts"] = len(built.attempts)
    facts["jobs never started (left out)"] = len(never_ran)
    if any(a["end_reason"] == "running" for a in built.attempts):
        facts["as-of (end of queue time of waiting jobs)"] = datetime.fromtimestamp(
            as_of, tz=dt_timezone.utc
        ).isoformat() + ("" if as_of_given else " (the export's latest time)")


def import_sacct(
    paths: Iterable[str | Path],
    *,
    recorder_dir: str | Path | None = None,
    gpus: int | None = None,
    keep_users: bool = False,
    timezone: str = "UTC",
    as_of: float | None = None,
    timeout_as: str = "failure",
    clock_tolerance_s: float = 2.0,
    relative_to: str | Path | None = None,
    cause_mapping: str | Path | None = None,
    causes_file: str | Path | None = None,
    vocabulary: Vocabulary | None = None,
) -> tuple[TraceFrames, ImportReport]:
    """Import sacct exports (text or JSON), optionally with a recorder run folder; see the module doc.

    ``as_of`` (epoch seconds): the end of queue time for jobs still waiting (default:
    the latest time in the exports).  ``relative_to``: report file names relative to
    this folder (for bundled data).  The stages: :func:`_parse` (the exports' runs), :func:`_build` (attempts,
    spans, jobs), :func:`_note` (the report; the report is the note collector every stage writes to).
    ``cause_mapping``: a user's rules before the shipped ones; ``causes_file`` (a user's causes file) or
    ``vocabulary`` (one read before): the causes those rules may name beside the package's
    (:func:`ettcore.causes.load_cause_map`).
    """
    paths = [Path(p) for p in paths]
    _check_options(paths, timeout_as, gpus, clock_tolerance_s)
    cause_map = load_cause_map(cause_mapping, causes_file, vocabulary)
    name = functools.partial(_file_name, relative_to=relative_to)
    report = ImportReport("slurm")
    runs = _parse(paths, report, name, timezone)
    jobs = _group(runs)
    as_of_given = as_of is not None
    if as_of is None:
        as_of = max(t for r in runs for t in (r.submit, r.start, r.end, r.eligible) if t is not None)
    built = _build(
        jobs, report, timeout_as=timeout_as, as_of=as_of, gpus=gpus, keep_users=keep_users, cause_map=cause_map
    )
    report.files[0].facts["interruptions by cause"] = cause_map.counts_line()
    _note(report, runs, jobs, built, timeout_as=timeout_as, as_of=as_of, as_of_given=as_of_given)
    metadata = {
        "synthetic": False,
        "source": "Slurm accounting (sacct)",
        "importer": "ettcore.importers.slurm",
        "source_files": [f.file for f in report.files],
        "clock_tolerance_s": clock_tolerance_s,
    }
    frames = TraceFrames.from_rows(built.attempts, built.spans, built.job_rows, metadata)
    if recorder_dir is not None:
        from ettcore.importers.recorder_join import join_recorder

        kept = built.kept
        kept_bounds = {k: v for k, v in built.bounds.items() if k[0] in kept}
        frames = join_recorder(
            frames, Path(recorder_dir), report, runs=kept_bounds, clock_tolerance_s=clock_tolerance_s, name=name
        )
    return frames, report


def runs_table(paths: Iterable[str | Path], *, timezone: str = "UTC") -> "pl.DataFrame":
    """Every run of the exports as the import numbers them: ``job_id``, ``attempt``, ``slurm_state``, ``exit_status``
    (text exports only), ``submit``, ``start``, ``end`` (epoch seconds); rows that never started have no attempt.

    For what the trace does not carry: the Slurm state behind each attempt's end reason
    (``NODE_FAIL`` or ``TIMEOUT`` are both ``failure``).
    """
    import polars as pl

    report = ImportReport("slurm")
    runs: list[Run] = []
    for p in paths:
        runs.extend(read_sacct(p, report.add_file(str(p)), timezone=timezone))
    _check_duplicates(runs)
    for r in runs:
        if r.allocated is False:
            r.start = None
    rows = []
    for job in _group(runs):
        for k, r in enumerate(job.runs):
            if r.start is not None:
                rows.append(
                    {
                        "job_id": job.job_id,
                        "attempt": k,
                        "slurm_state": r.state,
                        "exit_status": r.exit_status,
                        "submit": r.submit,
                        "start": r.start,
                        "end": r.end,
                    }
                )
    return pl.DataFrame(
        rows,
        schema={
            "job_id": pl.String,
            "attempt": pl.Int64,
            "slurm_state": pl.String,
            "exit_status": pl.Int64,
            "submit": pl.Float64,
            "start": pl.Float64,
            "end": pl.Float64,
        },
    )
