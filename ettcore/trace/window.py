"""What part of time a measurement counts: the analysis window (``--since``/``--until``) and exclusion windows.

The metric attributes every instant of every job's wall time exactly as always (``attributed_time``); a
:class:`Window` only says which of those instants are **measured**:

* the analysis window ``[since, until)`` (either end open; ISO-8601 times, ``Z`` allowed, or epoch seconds): an
  instant outside it is not counted, an instant inside keeps the attribution it has in the whole job (a job that
  started before ``since`` keeps its TTS or recovery classification);
* exclusion windows ``[start, end)`` (:class:`Exclusion`, read from a CSV or JSON file by :func:`read_exclusions`):
  planned maintenance, a known incident, a benchmark freeze.  An instant inside an exclusion that applies to the
  job (all jobs, one job id, or the jobs whose label has a value) is left out of wall time and of every bucket.
  Exclusions change what is counted, never how an instant is classified.

An interruption is counted where it happens (its attempt's end), under the same two rules.  See docs/metric.md,
"Windows and exclusions", for the edge cases.

The window reaches SQL as data only: :func:`register` writes ``ett_window`` (one row: ``since_ms``, ``until_ms``),
``ett_exclusions`` (one row an exclusion) and, once the jobs are known, :func:`match_jobs` writes
``ett_exclusion_jobs`` (which exclusion applies to which job key), every value bound.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import duckdb

from ettcore.errors import InputError, Problem
from ettcore.trace.instants import iso, parse_instant

EXCLUSION_FIELDS = ("start", "end", "reason", "job", "label")
_REQUIRED = ("start", "end", "reason")


@dataclass(frozen=True)
class Exclusion:
    """One exclusion window ``[start_ms, end_ms)``: why, and which jobs it applies to (all when both filters are
    empty)."""

    start_ms: int
    end_ms: int
    reason: str
    job_id: str | None = None  # only this job
    label: tuple[str, str] | None = None  # only jobs whose column (model, gpus or a jobs label) has this value, as text
    file: str = "--exclude"
    row: int | None = None

    def label_text(self) -> str | None:
        return None if self.label is None else f"{self.label[0]}={self.label[1]}"


@dataclass(frozen=True)
class Window:
    """The measured part of time: ``[since_ms, until_ms)`` (``None``: open) minus the exclusion windows."""

    since_ms: int | None = None
    until_ms: int | None = None
    exclusions: tuple[Exclusion, ...] = field(default_factory=tuple)

    @property
    def whole(self) -> bool:
        """True when every instant is measured (no window bound, no exclusion): the default path."""
        return self.since_ms is None and self.until_ms is None and not self.exclusions

    def as_dict(self) -> dict[str, Any]:
        """The window as plain data: bounds and exclusions, times as ISO-8601 UTC (``None``: open)."""
        return {
            "since": iso(self.since_ms),
            "until": iso(self.until_ms),
            "exclusions": [
                {
                    "start": iso(x.start_ms),
                    "end": iso(x.end_ms),
                    "reason": x.reason,
                    "job": x.job_id,
                    "label": x.label_text(),
                }
                for x in self.exclusions
            ],
        }


# ----------------------------------------------------------------------------- exclusion files


def _exclusion(raw: dict[str, Any], file: str, row: int) -> Exclusion:
    problems: list[Problem] = []
    unknown = sorted(k for k in raw if k not in EXCLUSION_FIELDS)
    for k in unknown:
        problems.append(Problem(file, row, str(k), f"unknown field; an exclusion has {', '.join(EXCLUSION_FIELDS)}"))
    times: dict[str, int] = {}
    for name in ("start", "end"):
        try:
            times[name] = parse_instant(raw.get(name), file, name, row)
        except InputError as exc:
            problems += exc.problems
    if len(times) == 2 and times["end"] <= times["start"]:
        problems.append(Problem(file, row, "end", "the exclusion must end after it starts"))
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        problems.append(Problem(file, row, "reason", "missing reason (say why the time is left out)"))
    job = raw.get("job")
    if job is not None and not isinstance(job, str):
        problems.append(Problem(file, row, "job", f"a job id must be text: {job!r}"))
    label = raw.get("label")
    parsed_label: tuple[str, str] | None = None
    if isinstance(label, dict) and len(label) == 1:
        ((key, value),) = label.items()
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            problems.append(Problem(file, row, "label", f"a label value must be text or a whole number: {value!r}"))
        else:
            parsed_label = (str(key), str(value))
    elif isinstance(label, str) and label != "":
        key, sep, value = label.partition("=")
        if not sep or not key.strip():
            problems.append(
                Problem(file, row, "label", f"a label filter reads column=value (for example team=ads): {label!r}")
            )
        else:
            parsed_label = (key.strip(), value)
    elif label not in (None, ""):
        problems.append(
            Problem(file, row, "label", f"a label filter reads column=value (for example team=ads): {label!r}")
        )
    if problems:
        raise InputError(problems)
    return Exclusion(times["start"], times["end"], reason.strip(), job or None, parsed_label, file, row)


def _rows_of(path: Path) -> list[tuple[int, dict[str, Any]]]:
    file = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(Problem(file, None, None, f"cannot read the exclusion file: {exc.strerror or exc}")) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(Problem(file, None, None, f"not valid UTF-8 (byte {exc.start})")) from None
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames or []
        problems = [
            Problem(
                file, None, c, "missing column (an exclusion file has start, end, reason; job and label are optional)"
            )
            for c in _REQUIRED
            if c not in header
        ]
        problems += [
            Problem(file, None, c, f"unknown column; an exclusion file has {', '.join(EXCLUSION_FIELDS)}")
            for c in header
            if c not in EXCLUSION_FIELDS
        ]
        if problems:
            raise InputError(problems)
        rows = []
        for i, rec in enumerate(reader, start=1):
            if None in rec:
                raise InputError(Problem(file, i, None, "more fields than the header names"))
            rows.append((i, {k: (None if v == "" else v) for k, v in rec.items()}))
        return rows
    if suffix == ".json":
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise InputError(Problem(file, None, None, f"not valid JSON: {exc}")) from None
        if isinstance(doc, dict) and set(doc) == {"exclusions"}:
            doc = doc["exclusions"]
        if not isinstance(doc, list):
            raise InputError(
                Problem(file, None, None, 'a JSON exclusion file holds a list of objects (or {"exclusions": [...]})')
            )
        rows = []
        for i, rec in enumerate(doc, start=1):
            if not isinstance(rec, dict):
                raise InputError(Problem(file, i, None, "an exclusion must be a JSON object"))
            rows.append((i, rec))
        return rows
    raise InputError(Problem(file, None, None, "an exclusion file is .csv or .json"))


def read_exclusions(path: str | Path) -> tuple[Exclusion, ...]:
    """Every exclusion of a CSV or JSON file (fields start, end, reason, optional job and label);
    all problems at once."""
    path = Path(path)
    out: list[Exclusion] = []
    problems: list[Problem] = []
    for row, raw in _rows_of(path):
        try:
            out.append(_exclusion(raw, str(path), row))
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    return tuple(out)


def make_window(since: Any = None, until: Any = None, exclude: Any = None) -> Window:
    """A :class:`Window` from user values: times as for ``--since``/``--until``,
    ``exclude`` a file path or Exclusions."""
    since_ms = None if since is None else parse_instant(since, "--since", "since")
    until_ms = None if until is None else parse_instant(until, "--until", "until")
    if since_ms is not None and until_ms is not None and until_ms <= since_ms:
        raise InputError(
            Problem("--until", None, "until", "the window must end after it starts (--until after --since)")
        )
    if exclude is None:
        exclusions: tuple[Exclusion, ...] = ()
    elif isinstance(exclude, (str, Path)):
        exclusions = read_exclusions(exclude)
    else:
        exclusions = tuple(exclude)
        if not all(isinstance(x, Exclusion) for x in exclusions):
            raise TypeError("exclude is a path to an exclusion file or a sequence of Exclusion")
    return Window(since_ms, until_ms, exclusions)


# ----------------------------------------------------------------------------- SQL tables


EXCLUSION_COLUMNS = (
    "exclusion_id BIGINT, start_ms BIGINT, end_ms BIGINT, reason VARCHAR, job_filter VARCHAR, label_filter VARCHAR"
)


def exclusion_rows(window: Window) -> list[tuple]:
    """The rows of ``ett_exclusions`` (columns :data:`EXCLUSION_COLUMNS`): one an exclusion,
    numbered from 0 in file order."""
    return [(i, x.start_ms, x.end_ms, x.reason, x.job_id, x.label_text()) for i, x in enumerate(window.exclusions)]


def register(con: duckdb.DuckDBPyConnection, window: Window) -> None:
    """``ett_window`` (one row) and ``ett_exclusions`` in a trace's DuckDB connection; values bound, never pasted."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_window AS SELECT $since::BIGINT AS since_ms, $until::BIGINT AS until_ms",
        {"since": window.since_ms, "until": window.until_ms},
    )
    con.execute(f"CREATE OR REPLACE TEMP TABLE ett_exclusions ({EXCLUSION_COLUMNS})")
    rows = exclusion_rows(window)
    if rows:
        con.executemany("INSERT INTO ett_exclusions VALUES (?, ?, ?, ?, ?, ?)", rows)
    con.execute("CREATE OR REPLACE TEMP TABLE ett_exclusion_jobs (exclusion_id BIGINT, job_key UBIGINT)")


def check_labels(window: Window, columns: Iterable[str]) -> None:
    """Refuse a label filter on a column the jobs do not have (naming the exclusion file, row and field)."""
    allowed = list(columns)
    problems = [
        Problem(
            x.file,
            x.row,
            "label",
            f"unknown column {x.label[0]!r} in the label filter; choose one of: {', '.join(allowed)}",
        )
        for x in window.exclusions
        if x.label is not None and x.label[0] not in allowed
    ]
    if problems:
        raise InputError(problems)


def match_conditions(
    x: Exclusion, quote: Callable[[str], str], text_type: str, marker: Callable[[str], str]
) -> tuple[str, dict]:
    """The WHERE condition over ``metric_jobs`` that selects the jobs an exclusion applies to, and its bound values.

    ``quote`` quotes a column name (already checked against the schema), ``text_type`` is the engine's text type,
    ``marker`` writes a named parameter marker (``$name`` for DuckDB, ``:name`` for Spark).
    """
    parts, params = [], {}
    if x.job_id is not None:
        parts.append(f"job_id = {marker('job')}")
        params["job"] = x.job_id
    if x.label is not None:
        parts.append(f"CAST({quote(x.label[0])} AS {text_type}) = {marker('value')}")
        params["value"] = x.label[1]
    return (" AND ".join(parts) or "true"), params


def match_jobs(con: duckdb.DuckDBPyConnection, window: Window, quote: Callable[[str], str]) -> None:
    """Fill ``ett_exclusion_jobs``: for each exclusion, the keys of the jobs (of ``metric_jobs``) it applies to."""
    con.execute("DELETE FROM ett_exclusion_jobs")
    for i, x in enumerate(window.exclusions):
        where, params = match_conditions(x, quote, "VARCHAR", lambda n: f"${n}")
        con.execute(
            f"INSERT INTO ett_exclusion_jobs SELECT $id, job_key FROM metric_jobs WHERE {where}", {"id": i, **params}
        )
