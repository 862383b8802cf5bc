"""The cross-check against Slurm's own records: per job, values computed straight from ``sacct`` fields.

Written apart from :mod:`ettcore.importers.slurm` (plain ``csv`` parsing, rows
ordered by ``DBIndex`` as sacct stores them, not by the importer's time
ordering) and compared with the imported trace through the metric (per field:
from sacct; from the trace):

- runs: allocation rows of the job with a Start; attempts
- wall: last row's End - first row's Submit; ``job_summary.wall_s``
- queue per run: Start - Submit (first run), Start - previous End (later runs); the queue span of attempt 0, gaps
  between attempts
- end states: State of each row, by the rule below; ``attempts.end_reason``
- NoF (total, failure, preemption): rows ending in an interruption; ``job_summary.nof``, ``nof_failure``,
  ``nof_preemption``
- spans inside runs: each run's Start and End; every recorded span of the attempt

The rule for end states: COMPLETED completed; CANCELLED cancelled; PREEMPTED
preemption; REQUEUED preemption unless its ExitCode's status is non-zero
(RequeueExit), then failure; FAILED, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL,
DEADLINE, TIMEOUT failure.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

FAILURE = {"FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "TIMEOUT"}
FIELDS = ("runs", "wall_s", "queue_s", "end_states", "nof", "nof_failure", "nof_preemption")


@dataclass
class SacctJob:
    job_id: str
    rows: list[dict] = field(default_factory=list)

    @property
    def runs(self) -> list[dict]:
        # a run is a row with a Start on an allocated node (a job cancelled while waiting has Start = End,
        # "None assigned")
        return [
            r for r in self.rows if r["Start"] not in ("Unknown", "None", "") and r.get("NodeList") != "None assigned"
        ]

    def end_states(self) -> list[str]:
        out = []
        for r in self.runs:
            s = r["State"].split()[0]
            if s == "COMPLETED":
                out.append("completed")
            elif s == "CANCELLED":
                out.append("cancelled")
            elif s == "PREEMPTED":
                out.append("preemption")
            elif s == "REQUEUED":
                out.append("failure" if int(r["ExitCode"].split(":")[0]) != 0 else "preemption")
            elif s in FAILURE:
                out.append("failure")
            else:
                out.append("running")
        return out

    def expected(self) -> dict:
        runs = self.runs
        starts = [float(r["Start"]) for r in runs]
        ends = [float(r["End"]) for r in runs]
        queue = [starts[0] - float(runs[0]["Submit"])] + [starts[k] - ends[k - 1] for k in range(1, len(runs))]
        states = self.end_states()
        return {
            "runs": len(runs),
            "wall_s": ends[-1] - float(self.rows[0]["Submit"]),
            "queue_s": queue,
            "end_states": states,
            "nof": sum(s in ("failure", "preemption") for s in states),
            "nof_failure": states.count("failure"),
            "nof_preemption": states.count("preemption"),
        }


def read_sacct_text(path: Path) -> dict[str, SacctJob]:
    """Allocation rows by JobID (steps and pending array records skipped), each job's rows in DBIndex order."""
    text = Path(path).read_text(encoding="utf-8")
    jobs: dict[str, SacctJob] = {}
    for r in csv.DictReader(io.StringIO(text), delimiter="|"):
        if "." in r["JobID"] or "[" in r["JobID"]:
            continue
        jobs.setdefault(r["JobID"], SacctJob(r["JobID"])).rows.append(r)
    for j in jobs.values():
        j.rows.sort(key=lambda r: int(r["DBIndex"]))
    return jobs


def ended(job: SacctJob) -> bool:
    """Every row of the job has ended (the cross-check leaves running and waiting jobs out)."""
    return bool(job.runs) and all(
        r["End"] not in ("Unknown", "") and r["State"].split()[0] not in ("RUNNING", "PENDING") for r in job.rows
    )


def from_trace(trace_dir: Path) -> dict[str, dict]:
    """The same values read from an imported trace (its tables and :func:`ettcore.metric.job_summary`)."""
    from ettcore import metric
    from ettcore.trace import load_trace

    summary = {r["job_id"]: r for r in metric.job_summary(load_trace(trace_dir)).iter_rows(named=True)}
    secs = lambda c: pl.col(c).dt.epoch("ms") / 1000  # noqa: E731
    att = (
        pl.read_parquet(trace_dir / "attempts.parquet")
        .with_columns(secs("start"), secs("end"))
        .sort("job_id", "attempt")
    )
    spans = pl.read_parquet(trace_dir / "spans.parquet").with_columns(secs("start"), secs("end"))
    queue0 = {
        r["job_id"]: r["end"] - r["start"]
        for r in spans.filter((pl.col("phase") == "scheduling") & (pl.col("attempt") == 0)).iter_rows(named=True)
    }
    out = {}
    for job_id, a in att.group_by("job_id", maintain_order=True):
        a = a.sort("attempt")
        starts, ends = a["start"].to_list(), a["end"].to_list()
        s = summary[job_id[0]]
        out[job_id[0]] = {
            "runs": a.height,
            "wall_s": s["wall_s"],
            "queue_s": [queue0.get(job_id[0], 0.0)] + [starts[k] - ends[k - 1] for k in range(1, a.height)],
            "end_states": a["end_reason"].to_list(),
            "nof": s["nof"],
            "nof_failure": s["nof_failure"],
            "nof_preemption": s["nof_preemption"],
        }
    return out


def cross_check(sacct_text: Path, trace_dir: Path) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """Per field: (jobs compared, jobs equal); and one line per disagreement."""
    exp = {j: job.expected() for j, job in read_sacct_text(sacct_text).items() if ended(job)}
    got = from_trace(trace_dir)
    table = {f: [0, 0] for f in FIELDS}
    diffs = []
    for job_id, e in sorted(exp.items()):
        g = got.get(job_id)
        for f in FIELDS:
            table[f][0] += 1
            ok = g is not None and (
                g[f] == e[f] if not isinstance(e[f], (float, list)) or f == "end_states" else _close(g[f], e[f])
            )
            table[f][1] += ok
            if not ok:
                diffs.append(f"{job_id} {f}: sacct {e[f]!r}, trace {None if g is None else g[f]!r}")
    return {f: (n, k) for f, (n, k) in table.items()}, diffs


def _close(a, b, tol: float = 1e-3) -> bool:
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))
    return abs(a - b) <= tol


def run_bounds(sacct_text: Path) -> dict[tuple[str, int], tuple[float, float | None]]:
    """(job, run index) -> (Start, End or None) straight from the rows."""
    out = {}
    for job_id, job in read_sacct_text(sacct_text).items():
        for k, r in enumerate(job.runs):
            out[(job_id, k)] = (float(r["Start"]), None if r["End"] in ("Unknown", "") else float(r["End"]))
    return out


def spans_outside(
    trace_dir: Path, sacct_text: Path, tolerance_s: float = 0.0, spans: pl.DataFrame | None = None
) -> list[str]:
    """Spans (all but the queue spans) not inside their run's [Start - tol, End + tol];
    ``spans`` defaults to the trace's."""
    bounds = run_bounds(sacct_text)
    if spans is None:
        spans = pl.read_parquet(trace_dir / "spans.parquet")
    spans = spans.filter(pl.col("phase") != "scheduling").with_columns(
        (pl.col("start").dt.epoch("us") / 1e6).alias("s"), (pl.col("end").dt.epoch("us") / 1e6).alias("e")
    )
    bad = []
    for r in spans.iter_rows(named=True):
        b = bounds.get((r["job_id"], r["attempt"]))
        if b is None:
            bad.append(f"{r['job_id']} attempt {r['attempt']} {r['phase']}: no such run in sacct")
            continue
        lo, hi = b[0] - tolerance_s, (b[1] if b[1] is not None else float("inf")) + tolerance_s
        if r["s"] < lo - 1e-6 or r["e"] > hi + 1e-6:
            bad.append(
                f"{r['job_id']} attempt {r['attempt']} {r['phase']} [{r['s']:.3f}, {r['e']:.3f}] outside [{b[0]}, "
                f"{b[1]}]"
            )
    return bad


def format_table(table: dict[str, tuple[int, int]]) -> str:
    lines = ["| field | jobs compared | equal |", "|---|---|---|"]
    lines += [f"| {f} | {n} | {k} |" for f, (n, k) in table.items()]
    return "\n".join(lines)


def reference_input(trace_dir: Path) -> tuple[list[dict], list[dict], list[dict]]:
    """The trace's tables as :mod:`reference` (``tests/reference.py``) takes them (plain dicts, integer milliseconds),
    read by the loader."""
    from ettcore.trace import load_trace

    t = load_trace(trace_dir)
    jobs = t.sql("SELECT * FROM clean_jobs").to_dicts()
    attempts = t.sql(
        'SELECT job_id, attempt, start_ms AS start, end_ms AS "end", end_reason FROM clean_attempts'
    ).to_dicts()
    spans = t.sql(
        'SELECT job_id, attempt, phase, start_ms AS start, end_ms AS "end", cursor_start, cursor_end FROM clean_spans'
    ).to_dicts()
    return jobs, attempts, spans
