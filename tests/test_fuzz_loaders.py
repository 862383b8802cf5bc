"""Fuzzing the trace loader: hostile traces end in a correct result or a clear error.

Every case starts from a valid trace (the bundled SYNTHETIC sample, or a small
SYNTHETIC trace drawn by :mod:`trace_strategies`), mutates it, writes it as CSV,
JSONL or Parquet, and runs ``load_trace`` + ``metric.job_summary``.  What a run
may end in, and what is asserted:

* a :class:`TraceError` whose every problem names a file of the trace; a problem
  about one row names that row (1-based, inside the file) and, unless the whole
  line is unreadable, the field;
* or a result, for which
  - ``trace.accounting`` holds for every table: ``read == used + rejected``,
    the reasons add up to ``rejected``, and ``read`` is the number of data rows
    written to the file (nothing dropped silently);
  - the rows of every job the mutation did not touch are used, and those jobs'
    numbers equal the unmutated trace's (a bad row costs only its own job);
  - every job whose rows were used is in the summary, every problem belongs to
    a mutated job, the other views run and each job's L2 matrix sums to its wall;
  - a mutation that must not change anything (rows shuffled, columns
    reordered, an unknown column added, the same data in another format) gives
    exactly the unmutated numbers;
* never any other exception.

Besides the hypothesis cases: ``ett summarize`` in a subprocess on a few bad
traces (exit status 2, one ``ett: file, row, field: message`` line a problem),
the seed corpus ``tests/bad_inputs/`` (each entry's expected file, row, field
and message are in its README), and regressions for what the fuzzers found.

Hypothesis settings keep the whole module near a minute on two cores;
``ETT_FUZZ_EXAMPLES`` (a factor, default 1) scales the number of cases and
``ETT_FUZZ_RANDOM=1`` explores new cases instead of the fixed derandomized set.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from ettcore import metric
from ettcore.config import PROJECT_ROOT, SAMPLE_TRACE
from ettcore.errors import Problem, TraceError
from ettcore.trace import SCHEMA, load_trace

# every load also runs the span checks the span store's screen skipped, and fails if they find a row (conftest.py)
pytestmark = pytest.mark.usefixtures("screen_guard")
try:  # tests/trace_strategies.py: random valid traces (shared with the metric property tests)
    from trace_strategies import traces
except ImportError:  # pragma: no cover - only while that module is not there
    traces = None

SCALE = float(os.environ.get("ETT_FUZZ_EXAMPLES", "1"))
RANDOM = os.environ.get("ETT_FUZZ_RANDOM") == "1"
ETT = [sys.executable, "-m", "ettcore.cli"]

TABLE_NAMES = ("jobs", "attempts", "spans")
FORMATS = ("csv", "jsonl", "parquet")

#: Messages of problems that concern a whole line that could not be read as a
#: record; such a problem names the row but cannot name a field.
WHOLE_LINE = ("not valid JSON", "not a JSON object", "not valid UTF-8")


def fuzz_settings(n: int) -> settings:
    return settings(
        max_examples=max(1, int(n * SCALE)),
        derandomize=not RANDOM,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
        print_blob=True,
    )


# ----------------------------------------------------------------------------- traces as plain rows


@dataclass
class Table:
    """One table as written: column names and rows of Python values.

    A value is ``None`` (empty), ``str``, ``int``, ``float``, ``bool`` or
    ``bytes`` (raw bytes written as they are: the way to put non-UTF-8 into a
    text file).
    """

    columns: list[str]
    rows: list[list[Any]]

    def col(self, name: str) -> int:
        return self.columns.index(name)

    def copy(self) -> "Table":
        return Table(list(self.columns), [list(r) for r in self.rows])


@dataclass
class Case:
    """A trace as tables, plus what the mutation did (for the assertions)."""

    tables: dict[str, Table]
    touched: set[str] = field(default_factory=set)  # job ids whose numbers may change
    neutral: bool = True  # the mutation must not change any number
    whole_table: bool = False  # the mutation hit every job (no per-job invariance)
    kept_same: bool = False  # a touched job that is not refused must keep its numbers (duplicated rows)
    note: str = ""

    def copy(self) -> "Case":
        return Case(
            {k: v.copy() for k, v in self.tables.items()},
            set(self.touched),
            self.neutral,
            self.whole_table,
            self.kept_same,
            self.note,
        )


def _read_csv_rows(path: Path) -> Table:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return Table(rows[0], [[v if v != "" else None for v in r] for r in rows[1:]])


def sample_case() -> Case:
    """The bundled sample trace (SYNTHETIC, hand-made) as plain rows."""
    return Case({t: _read_csv_rows(SAMPLE_TRACE / f"{t}.csv") for t in TABLE_NAMES})


def _iso(ms: int) -> str:
    d = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
    return d.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def generated_case(trace: dict, epoch: bool) -> Case:
    """A trace from :func:`trace_strategies.traces` as plain rows (timestamps ISO or epoch seconds)."""

    def ts(v):
        return None if v is None else (v / 1000 if epoch else _iso(v))

    att_cols = ["job_id", "attempt", "start", "end", "end_reason"]
    span_cols = ["job_id", "attempt", "phase", "stage", "start", "end", "cursor_start", "cursor_end"]
    tables = {
        "attempts": Table(
            att_cols,
            [[a["job_id"], a["attempt"], ts(a["start"]), ts(a["end"]), a["end_reason"]] for a in trace["attempts"]],
        ),
        "spans": Table(
            span_cols,
            [
                [
                    s["job_id"],
                    s["attempt"],
                    s["phase"],
                    s.get("stage"),
                    ts(s["start"]),
                    ts(s["end"]),
                    s.get("cursor_start"),
                    s.get("cursor_end"),
                ]
                for s in trace["spans"]
            ],
        ),
    }
    if trace.get("jobs"):
        tables["jobs"] = Table(
            ["job_id", "model", "gpus", "team"],
            [[j["job_id"], j["model"], j["gpus"], j["team"]] for j in trace["jobs"]],
        )
    return Case(tables)


# ----------------------------------------------------------------------------- writers


def _csv_cell(v: Any) -> bytes:
    if v is None:
        return b""
    if isinstance(v, bytes):
        return v
    s = str(v)
    if any(c in s for c in ',"\n\r') or s != s.strip() and s.strip() == "":
        s = '"' + s.replace('"', '""') + '"'
    return s.encode("utf-8")


def table_bytes(table: Table, fmt: str) -> bytes:
    """The bytes of one table file in ``csv`` or ``jsonl`` (raw ``bytes`` values kept as they are)."""
    if fmt == "csv":
        lines = [b",".join(_csv_cell(c) for c in table.columns)]
        lines += [b",".join(_csv_cell(v) for v in row) for row in table.rows]
        return b"\n".join(lines) + b"\n"
    out = []
    for row in table.rows:
        raw: dict[str, bytes] = {}
        obj = {}
        for i, (c, v) in enumerate(zip(table.columns, row)):
            if isinstance(v, bytes):
                token = f"\u2063RAW{i}\u2063"
                raw[json.dumps(token)] = b'"' + v.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
                obj[c] = token
            elif isinstance(v, float) and v != v:
                obj[c] = v  # json.dumps writes NaN / Infinity: not strict JSON, as some tools write it
            else:
                obj[c] = v
        line = json.dumps(obj).encode("utf-8")
        for token, rep in raw.items():
            line = line.replace(token.encode("utf-8"), rep)
        out.append(line)
    return b"\n".join(out) + (b"\n" if out else b"")


def _parquet_column(values: list[Any]) -> pa.Array:
    """A column with the values' natural type when they share one, else text (the wrong-type case)."""
    kinds = {type(v) for v in values if v is not None}
    if kinds == {bytes}:
        return pa.array(values, type=pa.binary())
    if kinds <= {bool}:
        return pa.array(values, type=pa.bool_() if kinds else pa.null())
    if kinds <= {int} and all(abs(v) < 2**63 for v in values if v is not None):
        return pa.array(values, type=pa.int64())
    if kinds <= {int, float} and all(isinstance(v, float) or abs(v) < 2**53 for v in values if v is not None):
        return pa.array([None if v is None else float(v) for v in values], type=pa.float64())
    return pa.array(
        [None if v is None else (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)) for v in values],
        type=pa.string(),
    )


def write_case(case: Case, folder: Path, fmt: str) -> Path:
    """Write every table of ``case`` into ``folder`` in format ``fmt``; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, table in case.tables.items():
        path = folder / f"{name}.{fmt}"
        if fmt == "parquet":
            cols = {c: _parquet_column([r[i] for r in table.rows]) for i, c in enumerate(table.columns)}
            pq.write_table(pa.table(cols) if cols else pa.table({}), path)
        else:
            path.write_bytes(table_bytes(table, fmt))
    (folder / "trace.json").write_text(
        json.dumps({"synthetic": True, "source": "tests/test_fuzz_loaders.py (mutated test trace)"})
    )
    return folder


# ----------------------------------------------------------------------------- the outcome checks


def assert_clear_error(exc: TraceError, trace_dir: Path, rows_written: dict[str, int] | None = None) -> None:
    """Every problem names a file of the trace; a row problem names a row inside the file and (mostly) a field."""
    assert exc.problems, "a TraceError without problems"
    for p in exc.problems:
        assert isinstance(p, Problem)
        assert p.file, f"problem names no file: {p}"
        assert Path(p.file).resolve().is_relative_to(trace_dir.resolve()), (
            f"problem names a file outside the trace: {p}"
        )
        if p.row is None:
            continue
        assert isinstance(p.row, int) and p.row >= 1, f"row must be 1-based: {p}"
        table = Path(p.file).name.split(".")[0]
        if rows_written is not None and table in rows_written and not any(w in p.message for w in WHOLE_LINE):
            assert p.row <= rows_written[table], f"row {p.row} is past the {rows_written[table]} rows of {p.file}: {p}"
        if not any(w in p.message for w in WHOLE_LINE):
            assert p.field, f"a row problem must name its field: {p}"


def assert_accounting(trace, case: Case | None) -> None:
    """read == used + rejected, reasons add up, read == rows written, untouched jobs' rows are used."""
    excluded = set(trace.excluded_jobs)
    for name, acc in trace.accounting.items():
        assert acc["read"] == acc["used"] + acc["rejected"], (name, acc)
        assert sum(acc["rejected_by_reason"].values()) == acc["rejected"], (name, acc)
        if case is None:
            continue
        table = case.tables.get(name)
        assert acc["read"] == (len(table.rows) if table else 0), (
            f"{name}: read {acc['read']} rows, {len(table.rows) if table else 0} written"
        )
        if table is None or "job_id" not in table.columns:
            continue
        j = table.col("job_id")
        sure = [r for r in table.rows if isinstance(r[j], str) and r[j] != "" and r[j] == r[j].strip()]
        expect_used = sum(1 for r in sure if r[j] not in excluded)
        unsure = len(table.rows) - len(sure)
        assert expect_used <= acc["used"] <= expect_used + unsure, (
            f"{name}: {acc['used']} rows used, expected {expect_used} (+ up to {unsure} with unusual job ids); "
            f"excluded {sorted(excluded)}"
        )


def exercise_views(trace, jobs: pl.DataFrame) -> None:
    """Every other view runs on the loaded trace too, and the L2 matrix adds up to each job's wall time."""
    l2 = metric.l2_matrix(trace)
    if jobs.height:
        sums = (
            l2.group_by("job_id")
            .agg(pl.col("seconds").sum().alias("l2_s"))
            .join(jobs.select("job_id", "wall_s"), on="job_id", how="right")
        )
        bad = sums.filter((pl.col("l2_s").fill_null(0) - pl.col("wall_s")).abs() > 1e-3)
        assert bad.height == 0, f"L2 matrix does not sum to wall: {bad}"
    metric.phase_busy(trace)
    fleet = metric.fleet_summary(trace)
    assert fleet.height <= 1
    if jobs.height:
        assert fleet["jobs"][0] == jobs.height
    metric.trend(trace, every="day")


def _summary(trace) -> pl.DataFrame:
    return metric.job_summary(trace).sort("job_id")


def outcome(path: Path, case: Case, baseline: pl.DataFrame | None, as_of_ms: int | None, strict: bool) -> str:
    """Run one case and assert what it may end in; returns ``"error"`` or ``"result"``."""
    rows_written = {n: len(t.rows) for n, t in case.tables.items()}
    try:
        t = load_trace(path, as_of=None if as_of_ms is None else as_of_ms / 1000, skip_invalid=not strict)
        jobs = _summary(t)
    except TraceError as exc:
        assert_clear_error(exc, path, rows_written)
        if not strict:
            # with --skip-invalid only whole-file (or unreadable-line) problems may still refuse the trace
            assert all(p.row is None or any(w in p.message for w in WHOLE_LINE) for p in exc.problems), exc
        return "error"
    assert_accounting(t, case)
    if strict:
        assert not t.problems and not t.excluded_jobs
    if as_of_ms is None:  # (an explicit as-of may leave out jobs that start after it, by definition)
        used_jobs = set(t.sql("SELECT DISTINCT job_id FROM clean_attempts")["job_id"].to_list())
        assert set(jobs["job_id"].to_list()) == used_jobs, "a job whose rows were used is missing from the summary"
    for p in t.problems:
        assert p.job_id is None or case.whole_table or p.job_id in case.touched, (
            f"a problem outside the mutated jobs: {p}"
        )
    exercise_views(t, jobs)
    if baseline is not None:
        cols = baseline.columns
        if case.neutral:
            assert_frame_equal(jobs.select(cols), baseline, check_exact=False, abs_tol=1e-6)
        elif not case.whole_table:
            excluded = set(t.excluded_jobs)
            keep = [
                j
                for j in baseline["job_id"].to_list()
                if j not in case.touched or (case.kept_same and j not in excluded)
            ]
            if keep:
                # (label columns may vanish when the jobs table loses every row: compare the columns both have)
                common = [c for c in cols if c in jobs.columns]
                assert_frame_equal(
                    jobs.filter(pl.col("job_id").is_in(keep)).select(common),
                    baseline.filter(pl.col("job_id").is_in(keep)).select(common),
                    check_exact=False,
                    check_dtypes=False,
                    abs_tol=1e-6,
                )
    return "result"


# ----------------------------------------------------------------------------- hostile values

HOSTILE_TEXT = [
    "",
    " ",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "1e400",
    "-1",
    "0",
    "1e308",
    "-0",
    "1.5",
    "2.0",
    " 7 ",
    "0x10",
    "1_000",
    "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00",
    "1970-01-01T00:00:00Z",
    "1989-12-31T23:59:59Z",
    "2100-01-01T00:00:01Z",
    "2026-13-45T25:61:61Z",
    "2026-01-05",
    "2026-01-05 01:00:00 Europe/Paris",
    "32503680000",
    "1767571200000",
    "now",
    "epoch",
    "infinity",
    "-infinity",
    "x'); DROP TABLE spans; --",
    "'; SELECT * FROM read_csv('/etc/passwd'); --",
    "../../etc/passwd",
    "*",
    "**/*.parquet",
    "[a-z]",
    "?",
    "{a,b}",
    "null",
    "NULL",
    "None",
    "true",
    "\x00",
    "tab\there",
    "line\nbreak",
    '"quoted"',
    "é漢字🚀",
    "\u202e",
    "a" * 100_000,
    "train",
    "running",
    "completed",
    "failure",
]
HOSTILE_BYTES = [b"\xff\xfe", b"caf\xe9", b"\x80", b"\xc3", b"ok\xed\xa0\x80"]


def hostile_values() -> st.SearchStrategy:
    return st.one_of(
        st.sampled_from(HOSTILE_TEXT),
        st.sampled_from(HOSTILE_BYTES),
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12),
    )


def _job_of(table: Table, row: list[Any]) -> str | None:
    if "job_id" not in table.columns:
        return None
    v = row[table.col("job_id")]
    return v if isinstance(v, str) else None


def _mark(case: Case, *values: Any) -> None:
    """Record job ids a mutation may affect: every text a mutated job_id might be read as."""
    for v in values:
        if v is None:
            continue
        if isinstance(v, bytes):
            case.touched.add(v.decode("utf-8", "replace"))
        case.touched.add(str(v))
        if isinstance(v, str):
            case.touched.add(v.strip())


# ----------------------------------------------------------------------------- fixtures: baselines


@pytest.fixture(scope="module")
def sample_baseline() -> tuple[pl.DataFrame, int]:
    """The sample's job summary at an explicit as-of (its latest stamp), the as-of every mutated copy is loaded with."""
    as_of = load_trace(SAMPLE_TRACE).as_of_ms
    return _summary(load_trace(SAMPLE_TRACE, as_of=as_of / 1000)), as_of


# ----------------------------------------------------------------------------- 1. one hostile cell


@fuzz_settings(30)
@given(data=st.data(), fmt=st.sampled_from(FORMATS), strict=st.booleans())
def test_hostile_cell(sample_baseline, data, fmt, strict):
    """Any value in any cell: a clear error or a result that costs only the mutated job."""
    baseline, as_of = sample_baseline
    case = sample_case()
    name = data.draw(st.sampled_from(TABLE_NAMES))
    table = case.tables[name]
    i = data.draw(st.integers(0, len(table.rows) - 1))
    c = data.draw(st.sampled_from(table.columns))
    _mark(case, _job_of(table, table.rows[i]))
    new = data.draw(hostile_values())
    table.rows[i][table.col(c)] = new
    case.neutral = False
    if c == "job_id":
        _mark(case, new)
    with tempfile.TemporaryDirectory() as d:
        outcome(write_case(case, Path(d) / "trace", fmt), case, baseline, as_of, strict)


# ----------------------------------------------------------------------------- 2. rows and columns moved


@st.composite
def structural(draw, case: Case) -> Case:
    """Shuffle, duplicate, delete, reorder or swap columns, add/drop a column, empty a table."""
    case = case.copy()
    name = draw(st.sampled_from(sorted(n for n, tb in case.tables.items() if tb.rows)))
    t = case.tables[name]
    kind = draw(
        st.sampled_from(
            [
                "shuffle",
                "reorder_columns",
                "extra_column",
                "duplicate_row",
                "delete_row",
                "swap_columns",
                "drop_column",
                "empty_table",
                "rename_column_case",
                "duplicate_job_rows",
            ]
        )
    )
    case.note = f"{kind} in {name}"
    rng = random.Random(draw(st.integers(0, 2**32)))
    if kind == "shuffle":
        rng.shuffle(t.rows)
    elif kind == "reorder_columns":
        order = list(range(len(t.columns)))
        rng.shuffle(order)
        t.columns = [t.columns[k] for k in order]
        t.rows = [[r[k] for k in order] for r in t.rows]
    elif kind == "extra_column":
        extra = draw(st.sampled_from(["notes", "x'); DROP TABLE spans; --", "*", "[a-z]", "Start", "phase_2"]))
        if extra.lower() in {c.lower() for c in t.columns}:
            # a name that differs from a column only in case is ambiguous (SQL names are case-insensitive):
            # may be refused
            case.neutral, case.whole_table = False, True
        t.columns.append(extra)
        for r in t.rows:
            r.append(draw(st.sampled_from(HOSTILE_TEXT[:40])))
    elif kind == "duplicate_row":
        row = list(t.rows[draw(st.integers(0, len(t.rows) - 1))])
        t.rows.insert(draw(st.integers(0, len(t.rows))), row)
        case.neutral = False
        _mark(case, _job_of(t, row))
        case.kept_same = True
    elif kind == "duplicate_job_rows":
        job = draw(st.sampled_from(sorted({_job_of(t, r) for r in t.rows} - {None})))
        t.rows += [list(r) for r in t.rows if _job_of(t, r) == job]
        case.neutral = False
        case.kept_same = True
        _mark(case, job)
    elif kind == "delete_row":
        i = draw(st.integers(0, len(t.rows) - 1))
        _mark(case, _job_of(t, t.rows[i]))
        del t.rows[i]
        case.neutral = False
    elif kind == "swap_columns":
        a, b = draw(st.lists(st.sampled_from(t.columns), min_size=2, max_size=2, unique=True))
        ia, ib = t.col(a), t.col(b)
        t.columns[ia], t.columns[ib] = b, a  # the header swapped, the data not: every row is now wrong
        case.neutral, case.whole_table = False, True
    elif kind == "drop_column":
        k = draw(st.integers(0, len(t.columns) - 1))
        del t.columns[k]
        for r in t.rows:
            del r[k]
        case.neutral, case.whole_table = False, True
    elif kind == "empty_table":
        t.rows = []
        case.neutral, case.whole_table = False, True
    elif kind == "rename_column_case":
        k = draw(st.integers(0, len(t.columns) - 1))
        fixed = t.columns[k] in {c for c, _ in SCHEMA[name]}
        t.columns[k] = t.columns[k].upper()
        if (
            not fixed
        ):  # a label keeps its own spelling, so the result's column is renamed; a fixed column is the same column
            case.neutral, case.whole_table = False, True
    return case


@fuzz_settings(25)
@given(data=st.data(), fmt=st.sampled_from(FORMATS), strict=st.booleans())
def test_structural_mutation(sample_baseline, data, fmt, strict):
    baseline, as_of = sample_baseline
    case = data.draw(structural(sample_case()))
    with tempfile.TemporaryDirectory() as d:
        got = outcome(write_case(case, Path(d) / "trace", fmt), case, baseline, as_of, strict)
    if case.neutral:
        assert got == "result", f"{case.note}: a harmless change was refused"


@pytest.mark.skipif(traces is None, reason="tests/trace_strategies.py is not available")
@fuzz_settings(12)
@given(
    trace=(traces(max_jobs=3, with_jobs_table=True) if traces else st.nothing()),
    epoch=st.booleans(),
    fmt=st.sampled_from(FORMATS),
    data=st.data(),
)
def test_generated_trace_mutations(trace, epoch, fmt, data):
    """Small generated (SYNTHETIC) traces: neutral changes keep the numbers; one bad cell costs one job."""
    case = generated_case(trace, epoch)
    # one explicit as-of for the baseline and every mutated copy: an hour after the latest stamp
    as_of = (
        max(
            v
            for rows in (trace["attempts"], trace["spans"])
            for r in rows
            for v in (r["start"], r["end"])
            if v is not None
        )
        + 3_600_000
    )
    with tempfile.TemporaryDirectory() as d:
        baseline = _summary(load_trace(write_case(case, Path(d) / "base", "parquet"), as_of=as_of / 1000))
        if data.draw(st.booleans()):
            mutated = data.draw(structural(case))
            outcome(write_case(mutated, Path(d) / "mut", fmt), mutated, baseline, as_of, strict=False)
            return
        cell = case.copy()
        name = data.draw(st.sampled_from(sorted(n for n, t in cell.tables.items() if t.rows)))
        t = cell.tables[name]
        i = data.draw(st.integers(0, len(t.rows) - 1))
        c = data.draw(st.sampled_from([c for c in t.columns if c != "job_id"]))
        t.rows[i][t.col(c)] = data.draw(hostile_values())
        cell.neutral = False
        _mark(cell, _job_of(t, t.rows[i]))
        outcome(write_case(cell, Path(d) / "cell", fmt), cell, baseline, as_of, strict=False)


# ----------------------------------------------------------------------------- 3. damaged bytes


@fuzz_settings(25)
@given(data=st.data(), fmt=st.sampled_from(FORMATS))
def test_damaged_file(sample_baseline, data, fmt):
    """Truncated files, inserted non-UTF-8 bytes, flipped bytes: a clear error or a consistent result."""
    baseline, as_of = sample_baseline
    case = sample_case()
    name = data.draw(st.sampled_from(TABLE_NAMES))
    kind = data.draw(
        st.sampled_from(["truncate", "insert_bytes", "flip_byte", "zero_length", "header_only", "nul_run"])
    )
    with tempfile.TemporaryDirectory() as d:
        folder = write_case(case, Path(d) / "trace", fmt)
        f = folder / f"{name}.{fmt}"
        raw = bytearray(f.read_bytes())
        if kind == "truncate":
            raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
        elif kind == "insert_bytes":
            k = data.draw(st.integers(0, len(raw)))
            raw[k:k] = data.draw(st.sampled_from(HOSTILE_BYTES + [b"\n", b'"', b",", b"\r", b"{"]))
        elif kind == "flip_byte":
            k = data.draw(st.integers(0, len(raw) - 1))
            raw[k] ^= data.draw(st.integers(1, 255))
        elif kind == "zero_length":
            raw = bytearray()
        elif kind == "header_only":
            raw = raw[: raw.index(b"\n") + 1] if fmt == "csv" else bytearray()
        elif kind == "nul_run":
            k = data.draw(st.integers(0, len(raw)))
            raw[k:k] = b"\x00" * data.draw(st.integers(1, 64))
        f.write_bytes(bytes(raw))
        try:
            t = load_trace(folder, as_of=as_of / 1000, skip_invalid=True)
            metric.job_summary(t)
        except TraceError as exc:
            assert_clear_error(exc, folder)
            return
        # rows may have changed in ways this test cannot predict; the books must still balance
        assert_accounting(t, None)
        if kind == "header_only" or kind == "zero_length" and fmt == "jsonl":
            assert t.accounting[name]["read"] == 0


# ---------------------------------------------------------------------------- 4. neutral rewrites give the same numbers


@fuzz_settings(12)
@given(fmt=st.sampled_from(FORMATS), seed=st.integers(0, 2**32), epoch=st.booleans(), parts=st.integers(1, 3))
def test_neutral_rewrite_same_numbers(sample_baseline, fmt, seed, epoch, parts):
    """Shuffled rows and columns, epoch-second timestamps, part files: exactly the sample's numbers."""
    baseline, _ = sample_baseline
    case = sample_case()
    rng = random.Random(seed)
    for t in case.tables.values():
        rng.shuffle(t.rows)
        order = list(range(len(t.columns)))
        rng.shuffle(order)
        t.columns = [t.columns[k] for k in order]
        t.rows = [[r[k] for k in order] for r in t.rows]
        if epoch:
            for c in ("start", "end"):
                if c in t.columns:
                    k = t.col(c)
                    for r in t.rows:
                        if r[k] is not None:
                            r[k] = datetime.fromisoformat(r[k].replace("Z", "+00:00")).timestamp()
    with tempfile.TemporaryDirectory() as d:
        folder = write_case(case, Path(d) / "trace", fmt)
        if fmt == "parquet" and parts > 1:
            df = pl.read_parquet(folder / "spans.parquet")
            (folder / "spans.parquet").unlink()
            (folder / "spans").mkdir()
            for k in range(parts):
                df[k::parts].write_parquet(folder / "spans" / f"part-{k}.parquet")
        assert outcome(folder, case, baseline, None, strict=True) == "result"


# ----------------------------------------------------------------------------- 5. the ett command


CLI_CASES = {
    # name: (table, mutate(bytes) -> bytes, expected exit status, text expected on stderr)
    "non_utf8": ("spans", lambda b: b.replace(b"trainer_init", b"trainer_\xffinit", 1), 2, "spans.csv, row 2"),
    "truncated": ("attempts", lambda b: b[: len(b) // 2], 2, "attempts.csv, row"),
    "nan_cursor": ("spans", lambda b: b.replace(b",0,100", b",NaN,100", 1), 2, "field 'cursor_start'"),
    "injection_job_id": (
        "jobs",
        lambda b: b.replace(b"worked-example", b"x'); DROP TABLE spans; --", 1),
        2,
        "unknown job worked-example",
    ),
    "far_future": (
        "attempts",
        lambda b: b.replace(b"2026-01-05T00:00:00Z", b"9999-01-05T00:00:00Z", 1),
        2,
        "attempts.csv, row 1, field 'start'",
    ),
}


@pytest.mark.parametrize("name", sorted(CLI_CASES))
def test_ett_summarize_exit_2(tmp_path, name):
    """`ett summarize` on a bad trace: exit 2, one line a problem naming file, row and field, no traceback."""
    table, mutate, rc, expect = CLI_CASES[name]
    folder = write_case(sample_case(), tmp_path / "trace", "csv")
    f = folder / f"{table}.csv"
    f.write_bytes(mutate(f.read_bytes()))
    p = subprocess.run(
        [*ETT, "summarize", str(folder), "--json"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert p.returncode == rc, p.stderr
    assert "Traceback" not in p.stderr
    assert expect in p.stderr, p.stderr
    assert p.stdout == ""
    for line in p.stderr.strip().splitlines():
        assert line.startswith("ett: " + str(folder)), line


def test_ett_summarize_skip_invalid_accounts(tmp_path):
    """--skip-invalid: the good jobs' numbers are reported and the JSON accounting balances."""
    case = sample_case()
    spans = case.tables["spans"]
    i = next(k for k, r in enumerate(spans.rows) if r[spans.col("job_id")] == "sample-preempted")
    spans.rows[i][spans.col("start")] = "not a time"
    folder = write_case(case, tmp_path / "trace", "csv")
    p = subprocess.run(
        [*ETT, "summarize", str(folder), "--json", "--skip-invalid"], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert "sample-preempted" not in {j["job_id"] for j in doc["jobs"]}
    assert {j["job_id"] for j in doc["jobs"]} == {"worked-example", "sample-running", "sample-startup-failure"}
    acc = doc["accounting"]
    n_preempted = sum(1 for r in spans.rows if r[spans.col("job_id")] == "sample-preempted")
    assert acc["spans"]["read"] == len(spans.rows)
    assert acc["spans"]["rejected"] == n_preempted
    assert acc["spans"]["read"] == acc["spans"]["used"] + acc["spans"]["rejected"]
    assert f"spans.csv, row {i + 1}, field 'start'" in p.stderr


def test_module_runs_as_ett():
    """The subprocess form used above is the installed ``ett`` entry point."""
    p = subprocess.run([*ETT, "--version"], capture_output=True, text=True, timeout=60, cwd=PROJECT_ROOT)
    assert p.returncode == 0 and p.stdout.startswith("ett ")


# --------------------------------------------------------------------------- 6. the seed corpus of hand-made bad inputs

BAD_INPUTS = Path(__file__).parent / "bad_inputs"


def readme_tables() -> list[list[dict]]:
    """The Markdown tables of ``tests/bad_inputs/README.md``, each as a list of dicts keyed by its header."""
    tables: list[list[dict]] = []
    header: list[str] | None = None
    for line in (BAD_INPUTS / "README.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip().replace("\x00", "|") for c in line.strip().strip("|").replace("\\|", "\x00").split("|")]
        if header is None:
            header = cells
            tables.append([])
        elif not set(line) <= set("|-"):
            tables[-1].append(dict(zip(header, cells)))
    return tables


def _entry(d: dict) -> dict:
    return {
        **d,
        "message": d["expected message"].strip("`"),
        "row": int(d["row"]) if d["row"] else None,
        "field": d["field"] or None,
    }


def corpus_entries() -> list[dict]:
    """Bad traces: the README table without an ``importer`` column."""
    return [_entry(d) for t in readme_tables() for d in t if "importer" not in d]


def log_corpus_entries() -> list[dict]:
    """Bad importer inputs (``logs/``): the README table with an ``importer`` column."""
    return [_entry(d) for t in readme_tables() for d in t if "importer" in d]


def test_corpus_readme_lists_every_entry():
    listed = {e["case"] for e in corpus_entries()}
    present = {p.name for p in BAD_INPUTS.iterdir() if p.name not in ("README.md", "logs")}
    assert listed == present
    assert len(listed) >= 30
    logs = {e["case"] for e in log_corpus_entries()}
    assert logs == {p.name for p in (BAD_INPUTS / "logs").iterdir()}
    assert len(logs) >= 10


@pytest.mark.parametrize("entry", corpus_entries(), ids=lambda e: e["case"])
def test_bad_input_corpus(entry):
    """Each hand-made bad trace is refused with the documented file, row, field and message."""
    path = BAD_INPUTS / entry["case"]
    with pytest.raises(TraceError) as info:
        metric.job_summary(load_trace(path))
    assert_clear_error(info.value, path)
    probs = [p for p in info.value.problems if entry["message"] in p.message]
    assert probs, f"expected {entry['message']!r} among {[p.line() for p in info.value.problems]}"
    if entry["file"]:
        assert any(Path(p.file).name == entry["file"] for p in probs), (
            f"no such problem names {entry['file']}: {[p.line() for p in probs]}"
        )
    assert any(p.row == entry["row"] and p.field == entry["field"] for p in probs), (
        f"expected row {entry['row']}, field {entry['field']}: {[p.line() for p in probs]}"
    )


@pytest.mark.parametrize(
    "case", ["non-utf8-csv", "injection-job-id", "truncated-parquet", "missing-column", "not-a-database.duckdb"]
)
def test_bad_input_corpus_cli(case, capsys):
    """`ett summarize` (in-process) on corpus entries: exit 2, one `ett: file, row, field: message` line a problem."""
    from ettcore.cli import main

    entry = next(e for e in corpus_entries() if e["case"] == case)
    capsys.readouterr()
    assert main(["summarize", str(BAD_INPUTS / case)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err and "Traceback" not in out.err
    lines = out.err.strip().splitlines()
    assert all(line.startswith("ett: " + str(BAD_INPUTS / case)) for line in lines), lines
    want = f", row {entry['row']}" if entry["row"] else ""
    assert any(want in line and entry["message"] in line for line in lines), lines


# ----------------------------------------------------------------------------- 7. regressions found by the fuzzers


def _csv_trace(folder: Path, attempts: list[str], spans: list[str]) -> Path:
    folder.mkdir(parents=True)
    (folder / "attempts.csv").write_text("job_id,attempt,start,end,end_reason\n" + "\n".join(attempts) + "\n")
    (folder / "spans.csv").write_text(
        "job_id,attempt,phase,stage,start,end,cursor_start,cursor_end\n" + "\n".join(spans) + "\n"
    )
    return folder


def test_huge_cursor_values_do_not_crash_the_metric(tmp_path):
    """Cursors of 1e13 (and 1e300) are finite numbers: the replay split must not overflow (clamped, then cast)."""
    for k, hw in enumerate(["10000000000000", "1e300"]):
        folder = _csv_trace(
            tmp_path / f"t{k}",
            [
                "j1,0,2026-01-05T00:00:00Z,2026-01-05T01:00:00Z,failure",
                "j1,1,2026-01-05T01:10:00Z,2026-01-05T03:00:00Z,completed",
            ],
            [
                f"j1,0,train,,2026-01-05T00:10:00Z,2026-01-05T00:50:00Z,0,{hw}",
                "j1,1,train,,2026-01-05T01:20:00Z,2026-01-05T02:50:00Z,0,1",
            ],
        )
        row = metric.job_summary(load_trace(folder)).row(0, named=True)
        # the second train span lies wholly below the high-water mark: all replay; productive = the first span, 40 min
        assert row["productive_s"] == pytest.approx(2400)
        assert row["wasted_training_s"] == pytest.approx(5400)
        assert row["wall_s"] == pytest.approx(3 * 3600)


def test_zero_length_last_attempt_is_not_dropped_silently(tmp_path):
    """A job whose only attempt has zero length: refused with a named row,
    or summarized (wall 0) - never just missing."""
    folder = _csv_trace(
        tmp_path / "t",
        [
            "j1,0,2026-01-05T00:00:00Z,2026-01-05T01:00:00Z,completed",
            "j2,0,2026-01-05T01:00:00Z,2026-01-05T01:00:00Z,failure",
        ],
        ["j1,0,train,,2026-01-05T00:10:00Z,2026-01-05T00:50:00Z,0,10"],
    )
    try:
        t = load_trace(folder)
    except TraceError as exc:
        assert any(p.row == 2 and Path(p.file).name == "attempts.csv" for p in exc.problems), exc
        return
    jobs = metric.job_summary(t)
    used_jobs = set(t.sql("SELECT DISTINCT job_id FROM clean_attempts")["job_id"].to_list())
    assert set(jobs["job_id"].to_list()) == used_jobs == {"j1", "j2"}
    assert metric.fleet_summary(t)["jobs"][0] == 2


@pytest.mark.parametrize(
    "label", ["ett_pct", "jobs", "wall_s", "status", "t0", "JOB_ID", "Model", "gpus_raw", "job_key"]
)
def test_label_named_like_a_computed_column(tmp_path, sample_baseline, label):
    """A jobs column named like a computed or fixed column: refused naming it, or a label usable by its own name."""
    baseline, _ = sample_baseline
    case = sample_case()
    jobs_t = case.tables["jobs"]
    jobs_t.columns.append(label)
    for k, r in enumerate(jobs_t.rows):
        r.append(f"L{k % 2}")
    folder = write_case(case, tmp_path / "t", "csv")
    try:
        t = load_trace(folder)
        jobs = _summary(t)
        groups = metric.fleet_summary(t, by=label)
    except TraceError as exc:
        assert any(
            Path(p.file).name == "jobs.csv" and p.field and p.field.lower() == label.lower() for p in exc.problems
        ), exc
        return
    assert label not in baseline.columns, f"label {label!r} is hidden behind the computed column of that name"
    assert_frame_equal(jobs.select(baseline.columns), baseline, check_exact=False, abs_tol=1e-6)
    assert sorted(groups[label].to_list()) == ["L0", "L1"] and groups["jobs"].sum() == 4
    assert sorted(jobs[label].to_list()) == ["L0", "L0", "L1", "L1"]


def test_part_files_with_conflicting_nested_types(tmp_path):
    """Two part files whose column types cannot be unified: a clear error naming a part file, not a DuckDB exception."""
    folder = write_case(sample_case(), tmp_path / "t", "csv")
    spans = pl.read_csv((folder / "spans.csv").read_bytes(), infer_schema=False)
    (folder / "spans.csv").unlink()
    (folder / "spans").mkdir()
    spans[:20].with_columns(pl.concat_list([pl.lit(1)]).alias("cursor_end")).write_parquet(
        folder / "spans" / "a.parquet"
    )
    spans[20:].with_columns(pl.struct(a=pl.lit(1)).alias("cursor_end")).write_parquet(folder / "spans" / "b.parquet")
    with pytest.raises(TraceError) as info:
        metric.job_summary(load_trace(folder))
    assert_clear_error(info.value, folder)
    assert any(Path(p.file).parent.name == "spans" or Path(p.file).name == "spans" for p in info.value.problems)


@pytest.mark.parametrize(
    "table,offset,seed,junk",
    [
        ("jobs", 7, None, b"\xff\xfe"),
        ("jobs", 30, None, b"\xff\xfe"),
        ("jobs", 4, None, b"\xff\xfe"),
        ("jobs", 338, None, b"caf\xe9"),
        ("jobs", 368, None, b"\xff\xfe"),
        ("spans", None, 3, b""),
        ("spans", None, 4, b""),
    ],
)
def test_damaged_parquet_pages(tmp_path, table, offset, seed, junk):
    """Bytes inserted into or flipped inside a Parquet file's data: a TraceError naming the file,
    never a DuckDB exception."""
    folder = write_case(sample_case(), tmp_path / "t", "parquet")
    f = folder / f"{table}.parquet"
    raw = bytearray(f.read_bytes())
    if offset is not None:
        raw[offset:offset] = junk
    else:
        rng = random.Random(seed)
        for _ in range(3):
            raw[rng.randrange(len(raw))] ^= rng.randrange(1, 256)
    f.write_bytes(bytes(raw))
    try:
        t = load_trace(folder, skip_invalid=True)
        jobs = metric.job_summary(t)
    except TraceError as exc:
        assert_clear_error(exc, folder)
        assert any(p.file == str(f) for p in exc.problems), exc
        return
    assert_accounting(t, None)  # (a flip that only changed values is a legitimate, if different, trace)
    exercise_views(t, jobs)


def test_non_utf8_csv_header(tmp_path):
    folder = write_case(sample_case(), tmp_path / "t", "csv")
    f = folder / "jobs.csv"
    f.write_bytes(b"job_\xffid" + f.read_bytes()[len(b"job_id") :])
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    assert_clear_error(info.value, folder)
    assert info.value.problems[0].file == str(f)


def test_every_help_text_renders(capsys):
    """`ett --help` and every subcommand's --help print and exit 0 (argparse %-formats help strings)."""
    from ettcore.cli import build_parser, main

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands = [[]] + [[name] for name in sub.choices]
    for name, sp in sub.choices.items():  # nested sub-commands (e.g. `ett import mlperf`)
        nested = [a for a in sp._actions if isinstance(a, argparse._SubParsersAction)]
        commands += [[name, n] for a in nested for n in a.choices]
    for argv in commands:
        with pytest.raises(SystemExit) as info:
            main([*argv, "--help"])
        assert info.value.code == 0, argv
        assert "usage: ett" in capsys.readouterr().out
