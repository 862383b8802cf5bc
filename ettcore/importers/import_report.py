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
- ``warning``   something the log says that is probably wrong, or that makes a
                number less certain, and what was done about it (also printed
                by ``ett import``)
- ``info``      a fact about the import worth knowing (no change made)

Besides the notes, each job gets a **time accounting** (:func:`time_accounting`):
every second of its wall time, split by where its attribution came from:
an explicit event of the log (both ends logged), an inference (named), no
span at all (unattributed), or the re-queue gap between attempts; and, outside
the wall time, time the log shows that did not reach the trace (dropped,
after the run's stop), with its length when the log gives it.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ettcore.atomic import write_text

KINDS: tuple[str, ...] = ("dropped", "merged", "inferred", "corrected", "clipped", "warning", "info")
EXPLICIT = "explicit"  # a span both of whose ends are logged events

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
    time_accounting: dict = field(default_factory=dict)  # job id -> {"wall_s", "rows", "outside"} (see time_accounting)
    _outside: dict = field(default_factory=dict, repr=False)

    def note(self, kind: str, what: str, why: str, rows: list[int] | None = None, count: int | None = None) -> None:
        """Add a note; ``rows`` are kept to the first 20 (``count`` keeps the total)."""
        rows = sorted(rows or [])
        self.notes.append(Note(kind, what, why, rows[:20], count if count is not None else max(1, len(rows))))

    def outside(
        self, job_id: str, category: str, what: str, seconds: float | None, rows: list[int] | None = None
    ) -> None:
        """Time the log shows for ``job_id`` that is not in its wall time (``category``: ``dropped`` or ``after stop``);
        ``seconds`` None when the log does not give the length."""
        self._outside.setdefault(job_id, []).append(
            {
                "category": category,
                "what": what,
                "seconds": None if seconds is None else round(float(seconds), 3),
                "lines": sorted(rows or [])[:20],
            }
        )

    def account(self, attempts: list[dict], spans: list[dict]) -> None:
        """Fill :attr:`time_accounting` for the jobs of ``attempts`` (see :func:`time_accounting`)."""
        for job, acc in time_accounting(attempts, spans).items():
            acc["outside"] = self._outside.get(job, [])
            self.time_accounting[job] = acc

    def counts(self) -> dict[str, int]:
        c = Counter()
        for n in self.notes:
            c[n.kind] += n.count
        return {k: c.get(k, 0) for k in KINDS}


@dataclass
class ImportReport:
    """The report of one import run: the importer, its sources and one :class:`FileReport` a file.

    It is the import's note collector: each stage of an importer (parse, build, note) notes through the
    :class:`FileReport` of the file concerned (:meth:`file`).  A note about single rows that may recur over many
    jobs and files (a clock skew, a correction) is tallied with :meth:`tally` as it is met and written by
    :meth:`write_tallies` as one note per kind, what and file.
    """

    importer: str
    files: list[FileReport] = field(default_factory=list)
    _tallies: dict = field(default_factory=dict, repr=False)  # (kind, what) -> [(file, row, job id)], first met first

    def add_file(self, file: str) -> FileReport:
        fr = FileReport(file)
        self.files.append(fr)
        return fr

    def file(self, file: str) -> FileReport:
        """The :class:`FileReport` of ``file`` (the last one added under that name)."""
        return next(fr for fr in reversed(self.files) if fr.file == file)

    def tally(self, kind: str, what: str, file: str, row: int, job_id: str) -> None:
        """Count a note about line ``row`` of ``file`` (a record of job ``job_id``), to be written by
        :meth:`write_tallies`."""
        self._tallies.setdefault((kind, what), []).append((file, row, job_id))

    def write_tallies(self) -> None:
        """Write the tallied notes: one per (kind, what), in the order first met, and file (sorted), with its lines
        and, as the why, its first ten jobs (sorted)."""
        for (kind, what), where in self._tallies.items():
            for file in sorted({f for f, _, _ in where}):
                rows = [row for f, row, _ in where if f == file]
                jobs = sorted({job for f, _, job in where if f == file})[:10]
                self.file(file).note(kind, what, f"job(s) {', '.join(jobs)}", rows)
        self._tallies.clear()

    def as_dict(self) -> dict:
        return {
            "importer": self.importer,
            "files": [
                {**{k: v for k, v in asdict(f).items() if not k.startswith("_")}, "counts": f.counts()}
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
        out.append(
            f"{len(self.files)} source file(s). Totals: " + ", ".join(f"{k} {total.get(k, 0)}" for k in KINDS) + "."
        )
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
                        rows = (
                            f" (line{'s' if len(n.rows) > 1 else ''} {shown}{', ...' if n.count > len(n.rows) else ''})"
                        )
                    cnt = f" x{n.count}" if n.count > 1 else ""
                    out.append(f"- {n.what}{cnt}{rows}: {n.why}")
                out.append("")
            for job, acc in f.time_accounting.items():
                out += _accounting_markdown(job, acc)
        return "\n".join(out).rstrip() + "\n"

    def warnings(self) -> list[str]:
        """One line a warning note, naming its file (``ett import`` prints them)."""
        return [f"{f.file}: {n.what}: {n.why}" for f in self.files for n in f.notes if n.kind == "warning"]

    def write(self, directory: str | Path) -> tuple[Path, Path]:
        """Write ``import_report.json`` and ``import_report.md`` into ``directory`` (atomically each)."""
        directory = Path(directory)
        j, m = directory / REPORT_JSON, directory / REPORT_MD
        write_text(j, self.to_json())
        write_text(m, self.to_markdown())
        return j, m


# ----------------------------------------------------------------------------- time accounting

ROW_CATEGORIES = ("explicit", "inferred", "no span", "between attempts")


def _wall(job_attempts: list[dict], job_spans: list[dict]) -> tuple[float, float]:
    """(T0, T1) of a job as the import sees it: a running last attempt lasts to its last recorded instant."""
    t0 = min(a["start"] for a in job_attempts)
    last = max(job_attempts, key=lambda a: a["start"])
    if last["end"] is not None:
        return t0, max(a["end"] for a in job_attempts if a["end"] is not None)
    ends = [s["end"] for s in job_spans if s["attempt"] == last["attempt"]]
    return t0, max([last["start"], *ends])


def time_accounting(attempts: list[dict], spans: list[dict]) -> dict[str, dict]:
    """Per job, every second of wall time by where its attribution comes from.

    ``spans`` carry ``how``: :data:`EXPLICIT` or the inference that produced them (a sentence).  Each instant of the
    wall time is counted once: covered by an explicit span; else by an inferred one (the one ending last names it);
    else inside an attempt with no span (``no span``: the metric's unattributed time); else between attempts (the
    re-queue gap, which the metric gives to scheduling).  The rows add up to ``wall_s``.  One sweep over the job's
    span boundaries (spans lie inside their attempts, attempts do not overlap).
    """
    by_job: dict[str, list[dict]] = {}
    for a in attempts:
        by_job.setdefault(a["job_id"], []).append(a)
    spans_of: dict[str, list[dict]] = {}
    for sp in spans:
        spans_of.setdefault(sp["job_id"], []).append(sp)
    out = {}
    for job, atts in by_job.items():
        atts = sorted(atts, key=lambda a: a["start"])
        js = sorted(spans_of.get(job, []), key=lambda sp: sp["start"])
        t0, t1 = _wall(atts, js)
        cuts = sorted(
            {
                t0,
                t1,
                *(x for a in atts for x in (a["start"], a["end"]) if x is not None and t0 <= x <= t1),
                *(x for sp in js for x in (sp["start"], sp["end"]) if t0 <= x <= t1),
            }
        )
        totals: dict[tuple[str, str], float] = {}
        nxt, k_att = 0, 0
        explicit_ends: list[float] = []  # min-heap of the ends of active explicit spans
        inferred: list[tuple[float, int]] = []  # max-heap (-end, index) of active inferred spans
        for a, b in zip(cuts, cuts[1:]):
            while nxt < len(js) and js[nxt]["start"] <= a:
                sp = js[nxt]
                if sp.get("how", EXPLICIT) == EXPLICIT:
                    heapq.heappush(explicit_ends, sp["end"])
                else:
                    heapq.heappush(inferred, (-sp["end"], nxt))
                nxt += 1
            while explicit_ends and explicit_ends[0] < b:
                heapq.heappop(explicit_ends)
            while inferred and -inferred[0][0] < b:
                heapq.heappop(inferred)
            while k_att + 1 < len(atts) and atts[k_att + 1]["start"] <= a:
                k_att += 1
            att = atts[k_att]
            inside = att["start"] <= a and (att["end"] is None or b <= att["end"])
            if not inside:
                key = ("between attempts", "re-queue gap between attempts (scheduling)")
            elif explicit_ends:
                key = ("explicit", "spans between two logged events")
            elif inferred:
                key = ("inferred", js[inferred[0][1]]["how"])
            else:
                key = ("no span", "inside an attempt, no span (unattributed)")
            totals[key] = totals.get(key, 0.0) + (b - a)
        rows = [
            {"category": c, "what": w, "seconds": round(v, 3)}
            for (c, w), v in sorted(totals.items(), key=lambda kv: (ROW_CATEGORIES.index(kv[0][0]), -kv[1]))
        ]
        out[job] = {"wall_s": round(t1 - t0, 3), "rows": rows}
    return out


def _accounting_markdown(job: str, acc: dict) -> list[str]:
    wall = acc["wall_s"]
    out = [
        f"**time accounting of `{job}`** (wall {wall:,.3f} s)",
        "",
        "| where the time's attribution comes from | what | seconds | share of wall |",
        "|---|---|---:|---:|",
    ]
    for r in acc["rows"]:
        share = f"{100 * r['seconds'] / wall:.2f} %" if wall > 0 else "-"
        out.append(f"| {r['category']} | {r['what']} | {r['seconds']:,.3f} | {share} |")
    for r in acc.get("outside", []):
        secs = "length not logged" if r["seconds"] is None else f"{r['seconds']:,.3f}"
        lines = f" (lines {', '.join(map(str, r['lines']))})" if r["lines"] else ""
        out.append(f"| {r['category']} (not in the wall time) | {r['what']}{lines} | {secs} | - |")
    out.append("")
    return out
