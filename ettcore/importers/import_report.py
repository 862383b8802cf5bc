"""The import report: what an importer dropped, merged, inferred or corrected, and why.

Every importer turns somebody else's log into a trace, and real logs are
messy.  Nothing an importer changes may go unsaid: each decision becomes a
:class:`Note` on the source file it concerns, and the report is written
beside the trace as ``import_report.json`` (machine-readable) and
``import_report.md`` (for people).

Note kinds:

- ``dropped``   a log line or event that did not reach the trace
- ``merged``    several log lines taken as one event (e.g. the same event
                printed by every rank)
- ``inferred``  a value the log does not state, and how it was obtained
- ``corrected`` a value the log states that the importer did not take as is
                (e.g. a wrong event type), with the value used instead
- ``clipped``   an interval cut to fit the attempt it belongs to
- ``info``      a fact about the import worth knowing (no change made)
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..atomic import write_text

KINDS: tuple[str, ...] = ("dropped", "merged", "inferred", "corrected", "clipped", "info")

REPORT_JSON = "import_report.json"
REPORT_MD = "import_report.md"


@dataclass
class Note:
    """One decision about one source file: ``kind`` (see :data:`KINDS`), ``what`` and ``why``.

    ``rows`` lists the 1-based line numbers of the source file it concerns
    (possibly abbreviated by the caller to the first few), ``count`` how many
    lines or events the note covers.
    """

    kind: str
    what: str
    why: str
    rows: list[int] = field(default_factory=list)
    count: int = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown note kind {self.kind!r}; expected one of {KINDS}")


@dataclass
class FileReport:
    """Everything the importer did with one source file, and the job(s) it produced."""

    file: str
    job_ids: list[str] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)

    def note(self, kind: str, what: str, why: str, rows: list[int] | None = None, count: int | None = None) -> None:
        """Add a note; ``rows`` are kept to the first 20 (``count`` keeps the total)."""
        rows = sorted(rows or [])
        self.notes.append(Note(kind, what, why, rows[:20], count if count is not None else max(1, len(rows))))

    def counts(self) -> dict[str, int]:
        c = Counter()
        for n in self.notes:
            c[n.kind] += n.count
        return {k: c.get(k, 0) for k in KINDS}


@dataclass
class ImportReport:
    """The report of one import run: the importer, its sources and one :class:`FileReport` a file."""

    importer: str
    files: list[FileReport] = field(default_factory=list)

    def add_file(self, file: str) -> FileReport:
        fr = FileReport(file)
        self.files.append(fr)
        return fr

    def as_dict(self) -> dict:
        return {
            "importer": self.importer,
            "files": [
                {**asdict(f), "counts": f.counts()}
                for f in self.files
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, sort_keys=False, default=str) + "\n"

    def to_markdown(self) -> str:
        """A readable version: one section a file, facts then notes grouped by kind."""
        out = [f"# Import report ({self.importer})", ""]
        total = Counter()
        for f in self.files:
            total.update(f.counts())
        out.append(f"{len(self.files)} source file(s). Totals: " + ", ".join(f"{k} {total.get(k, 0)}" for k in KINDS) + ".")
        out.append("")
        for f in self.files:
            out.append(f"## {f.file}")
            out.append("")
            if f.job_ids:
                out.append("Jobs: " + ", ".join(f"`{j}`" for j in f.job_ids))
                out.append("")
            for k, v in f.facts.items():
                out.append(f"- {k}: {v}")
            if f.facts:
                out.append("")
            for kind in KINDS:
                notes = [n for n in f.notes if n.kind == kind]
                if not notes:
                    continue
                out.append(f"**{kind}**")
                out.append("")
                for n in notes:
                    rows = ""
                    if n.rows:
                        shown = ", ".join(str(r) for r in n.rows)
                        rows = f" (line{'s' if len(n.rows) > 1 else ''} {shown}{', ...' if n.count > len(n.rows) else ''})"
                    cnt = f" x{n.count}" if n.count > 1 else ""
                    out.append(f"- {n.what}{cnt}{rows}: {n.why}")
                out.append("")
        return "\n".join(out).rstrip() + "\n"

    def write(self, directory: str | Path) -> tuple[Path, Path]:
        """Write ``import_report.json`` and ``import_report.md`` into ``directory`` (atomically each)."""
        directory = Path(directory)
        j, m = directory / REPORT_JSON, directory / REPORT_MD
        write_text(j, self.to_json())
        write_text(m, self.to_markdown())
        return j, m
