"""The one error type for bad input.

Every problem with a user's input is reported as a :class:`Problem` that names
the file, the row (1-based, counting data rows; ``None`` for a whole-file
problem) and the field.  :class:`InputError` carries one or more of them; the
``ett`` command prints one line per problem and exits with status 2.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    row: int | None
    field: str | None
    message: str
    table: str | None = None
    job_id: str | None = None

    def line(self) -> str:
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict:
        return asdict(self)


class InputError(ValueError):
    """Bad input: a trace, a log, a mapping or exclusion file, a command-line flag or a notebook parameter.

    ``problems`` lists every finding, each naming file, row and field."""

    def __init__(self, problems: list[Problem] | Problem):
        if isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        head = "; ".join(p.line() for p in self.problems[:3])
        more = f" (and {len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        super().__init__(head + more)


# How a user recovers a damaged store or DuckDB trace file: a store keeps nothing its sources do not hold
REBUILD = "; rebuild it from its sources (a store: ingest them again into a new store, ett ingest NEW SOURCE...)"


def io_cause(exc: BaseException) -> str:
    """Why a file could not be read or written, without the wording of the library that tried (DuckDB's ``IO Error:
    Could not write file "...": ``): ``the disk is full (no space left on device)`` for ENOSPC, else the operating
    system's reason (an ``OSError``'s, or the text after the message's last ``: ``)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "No space left on device" in text or getattr(exc, "errno", None) == 28:
        return "the disk is full (no space left on device)"
    if "not a valid DuckDB database file" in text:
        return "its header is not a DuckDB database's (another kind of file, or a damaged one)"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return text.rsplit(": ", 1)[-1]


def _shape(p: Problem) -> tuple:
    """What makes two problems 'the same problem': file, field and the message without its values.

    The message up to ``: `` (where a value follows), with the row's own job id and every number
    blanked out: ``unparsable or implausible timestamp: day-3`` and ``...: day-4`` are one kind,
    ``attempt is missing`` and ``attempt is not an integer: x`` are two.
    """
    msg = p.message.split(": ", 1)[0]
    if p.job_id:
        msg = msg.replace(p.job_id, "\u2026")
    return (p.file, p.field, re.sub(r"\d+(\.\d+)?", "#", msg))


def summarize_problems(problems: list[Problem], first: int = 5) -> list[str]:
    """Lines for people: each problem, except that beyond the ``first`` few of one kind (same file, field and message
    apart from its values, see :func:`_shape`) the rest are one line with their count.  Row-less problems are never
    merged."""
    counts: dict[tuple, int] = {}
    for p in problems:
        if p.row is not None:
            counts[_shape(p)] = counts.get(_shape(p), 0) + 1
    shown: dict[tuple, int] = {}
    lines = []
    for p in problems:
        if p.row is None:
            lines.append(p.line())
            continue
        k = _shape(p)
        shown[k] = shown.get(k, 0) + 1
        if shown[k] <= first:
            lines.append(p.line())
        if shown[k] == counts[k] and counts[k] > first:
            field = f", field '{p.field}'" if p.field else ""
            lines.append(
                f"{p.file}{field}: {counts[k] - first:,} more rows with the same problem ({k[2]}); "
                f"'ett validate --json' lists every one"
            )
    return lines


# The name before the input-error type covered more than traces; kept for code that catches it.
TraceError = InputError
