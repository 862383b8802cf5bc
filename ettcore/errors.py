"""The one error type for bad input.

Every problem with a user's input is reported as a :class:`Problem` that names
the file, the row (1-based, counting data rows; ``None`` for a whole-file
problem) and the field.  :class:`TraceError` carries one or more of them; the
``ett`` command prints one line per problem and exits with status 2.
"""

from __future__ import annotations

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


class TraceError(ValueError):
    """Bad input.  ``problems`` lists every finding, each naming file, row and field."""

    def __init__(self, problems: list[Problem] | Problem):
        if isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        head = "; ".join(p.line() for p in self.problems[:3])
        more = f" (and {len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        super().__init__(head + more)
