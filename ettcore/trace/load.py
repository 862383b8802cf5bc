"""Reading a trace into DuckDB.

A trace is a folder holding ``jobs`` (optional), ``attempts``, ``spans`` and ``rank_timing`` (optional),
each as ``<table>.parquet``, ``<table>.csv``, ``<table>.jsonl`` or a folder of
Parquet files (``<table>/**/*.parquet``), or a DuckDB database file holding
tables of those names.  See ``docs/trace-format.md``.

Loading happens in three layers of DuckDB views, each named after what it holds:

``raw_<table>``
    the rows as read, plus ``_file`` (the file they came from) and ``_row``
    (1-based row within that file), so every finding can name file and row;
``typed_<table>``
    fixed columns with parsed values: timestamps as integer milliseconds since
    the Unix epoch (``start_ms``), integers, finite numbers; the raw text of each
    parsed field is kept beside it (``start_raw``) so a check can tell
    "missing" from "unparsable" (in ``typed_spans`` only where the value did not
    parse: the one place a check reads it); the typing rules, shared with the
    Spark engine, are in :mod:`ettcore.trace.typing`;
``clean_<table>``
    the typed rows of jobs that passed every check (see :mod:`ettcore.trace.checks`).

The spans are also read once into the span store (:mod:`ettcore.trace.span_store`), which screens them for the
span checks and which the attribution reads through ``keyed_spans`` (its rows of clean jobs).

The metric (:mod:`ettcore.metric`) reads only ``clean_*`` tables, ``keyed_spans`` and the two
small tables ``ett_params`` (the as-of time), ``ett_phases`` (the phase map) and ``ett_causes`` (the cause
vocabulary, :mod:`ettcore.causes`).
No user value is ever pasted into SQL text: file lists and parameters are bound,
column names are checked against the schema and quoted.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ettcore.errors import REBUILD, InputError, Problem, io_cause
from ettcore.phases import ALL_COMPONENTS, L1_STEMS, PhaseMap, load_phase_map
from ettcore.trace import check_cache, checks, memory, span_store
from ettcore.trace import typing as rules
from ettcore.trace.instants import parse_instant
from ettcore.trace.queries import sql
from ettcore.trace.window import Window, make_window
from ettcore.trace.window import register as register_window
from ettcore.vocabulary import CAUSE_TABLE_COLUMNS, VOCABULARY, Vocabulary

TABLES = VOCABULARY.tables
REQUIRED_TABLES = ("attempts", "spans")
SUFFIXES = (".parquet", ".csv", ".jsonl")

# (field, kind) of each table; kind decides how the raw value is parsed.
SCHEMA: dict[str, tuple[tuple[str, str], ...]] = {
    "jobs": (("job_id", "str"), ("model", "str"), ("gpus", "int")),
    "attempts": (
        ("job_id", "str"),
        ("attempt", "int"),
        ("start", "ts"),
        ("end", "ts"),
        ("end_reason", "str"),
        ("cause", "str"),  # optional (docs/trace-format.md): an interruption's cause, one of the vocabulary's
    ),
    "spans": (
        ("job_id", "str"),
        ("attempt", "int"),
        ("phase", "str"),
        ("stage", "str"),
        ("start", "ts"),
        ("end", "ts"),
        ("cursor_start", "num"),
        ("cursor_end", "num"),
    ),
    # optional: each rank's work and wait per window of its steps (who held a slow job back, docs/trace-format.md)
    "rank_timing": (
        ("job_id", "str"),
        ("attempt", "int"),
        ("rank", "int"),
        ("node", "str"),
        ("start", "ts"),
        ("end", "ts"),
        ("steps", "int"),
        ("work_s", "num"),
        ("wait_s", "num"),
    ),
}
_RESERVED = {"_file", "_row", "job_key"}
# Columns a table file must have (an empty value is a row problem; a missing column is one problem for the file).
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "jobs": ("job_id",),
    "attempts": ("job_id", "attempt", "start", "end", "end_reason"),
    "spans": ("job_id", "attempt", "phase", "start", "end"),
    "rank_timing": ("job_id", "attempt", "rank", "start", "end", "steps", "work_s", "wait_s"),
}
TRAIN_COLUMNS = ("cursor_start", "cursor_end")  # required in a spans file that holds train spans
# Names a jobs label may not take: internal keys and columns of the metric's per-job and per-group results (the L1
# columns here, and one ``<component>_s`` and ``<component>_gpu_h`` a component of the trace's phase map).
COMPUTED_COLUMNS = frozenset(
    ["job_key", "group_key", "status", "attempts", "t0", "t1", "jobs", "ett_pct", "ett_mean_pct"]
    + ["nof", *VOCABULARY.nof_columns, "cancelled"]
    + [f"{c}{suffix}" for c in L1_STEMS for suffix in ("_s", "_gpu_h") if c != "ttr_mean" or suffix == "_s"]
)


def computed_columns(components: tuple[str, ...] = ALL_COMPONENTS) -> frozenset[str]:
    """:data:`COMPUTED_COLUMNS` and the columns of ``components``."""
    return COMPUTED_COLUMNS | {f"{c}{suffix}" for c in components for suffix in ("_s", "_gpu_h")}


_GLOB_CHARS = set("*?[]{}")
RESERVED_COLUMNS = ("_file", "_row", "filename", "file_row_number", "rowid")


def _refuse_reserved(file: str, columns: list[str]) -> None:
    """Columns the loader adds itself may not appear in the data; duplicates are ambiguous."""
    seen: set[str] = set()
    for c in columns:
        if any(ord(ch) < 32 for ch in c):
            raise InputError(Problem(file, None, repr(c), "column name contains a control character (e.g. NUL)"))
        if c.lower() in RESERVED_COLUMNS:
            raise InputError(
                Problem(file, None, c, f"reserved column name {c!r} (the loader adds it); rename the column")
            )
        if c.lower() in seen:  # DuckDB compares column names without case
            raise InputError(
                Problem(file, None, c, f"column {c!r} appears more than once (names are compared without case)")
            )
        seen.add(c.lower())


def schema_columns(table: str, names: list[str]) -> dict[str, str]:
    """Each schema field of ``table`` -> the column of ``names`` that holds it.

    Column names are compared without case (``Start`` is the ``start`` column), the rule by which
    :func:`_refuse_reserved` refuses two spellings of one name and by which SQL resolves them.
    """
    by_lower = {n.lower().lstrip("\ufeff"): n for n in names}  # (a reader that keeps a byte-order mark in the header)
    return {col: by_lower[col] for col, _ in SCHEMA[table] if col in by_lower}


def _near_name(col: str, names: list[str], taken: set[str]) -> str | None:
    """A column of ``names`` that looks like a misspelling of ``col`` (not one holding another field), or None."""
    free = [n for n in names if n.lower() not in taken and n not in ("_file", "_row")]
    lower = {n.lower(): n for n in free}
    close = difflib.get_close_matches(col, list(lower), n=1, cutoff=0.6)
    if close:
        return lower[close[0]]
    contains = sorted((n for n in free if col in n.lower()), key=lambda n: (not n.lower().startswith(col), len(n)))
    return contains[0] if contains else None


def missing_columns(table: str, file: str, names: list[str], has_train: bool = False) -> list[Problem]:
    """One problem per required column that ``file`` lacks (compared without case), with a near name when one exists."""
    present = schema_columns(table, names)
    need = list(REQUIRED_COLUMNS[table]) + (list(TRAIN_COLUMNS) if table == "spans" and has_train else [])
    taken = {c for c, _ in SCHEMA[table]}
    out = []
    for col in need:
        if col in present:
            continue
        near = _near_name(col, names, taken)
        hint = f"; did you mean {near!r}?" if near else ""
        why = " (train spans need it)" if col in TRAIN_COLUMNS else ""
        out.append(
            Problem(
                file,
                None,
                col,
                f"required column {col!r} is missing{why}{hint} (columns: {', '.join(names) or 'none'})",
                table=table,
            )
        )
    return out


URI_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def is_uri(path: Any) -> bool:
    """True for ``scheme://...`` text (``s3a://bucket/t``, ``file:///abs/t``); a plain local path is not a URI."""
    return isinstance(path, str) and URI_PATTERN.match(path) is not None


def quote_ident(name: str) -> str:
    """Quote a column name that was read from the data's own schema."""
    return '"' + name.replace('"', '""') + '"'


def relation_kind(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """``'VIEW'`` or ``'TABLE'`` where the connection has a view or table ``name`` (of any attached database),
    else None."""
    kind = con.execute(
        "SELECT 'VIEW' FROM duckdb_views() WHERE view_name = $n UNION ALL SELECT 'TABLE' FROM duckdb_tables() "
        "WHERE table_name = $n",
        {"n": name},
    ).fetchall()
    return kind[0][0] if kind else None


@dataclass
class Source:
    table: str
    kind: str  # parquet | csv | jsonl | duckdb
    files: list[Path]


@dataclass
class CheckedTrace:
    """What every checked trace carries, whichever engine read it: findings, accounting, as-of, labels, metadata."""

    path: Any  # a local Path, or a URI string (read by Spark)
    phase_map: PhaseMap
    as_of_ms: int | None
    problems: list[Problem] = field(default_factory=list)
    excluded_jobs: list[str] = field(default_factory=list)
    accounting: dict = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    not_started: dict = field(default_factory=dict)  # rows/jobs starting at or after an explicit as-of (not measured)
    window: Window = field(default_factory=Window)  # the measured part of time: --since/--until minus exclusion windows
    sources: list = field(default_factory=list, repr=False)
    metadata: dict = field(default_factory=dict)
    latest_ms: int | None = None  # the trace's latest instant (the default as-of), once computed
    spark_trace: Any = field(default=None, repr=False)  # the trace opened on Spark (ettcore.engines), once opened
    # the vocabulary the trace is read with: the package's, or with a user's causes file (load_trace(causes_file=))
    vocabulary: Vocabulary = field(default=VOCABULARY, repr=False)

    @property
    def synthetic(self) -> bool:
        return bool(self.metadata.get("synthetic"))


@dataclass
class Attribution:
    """What the metric has prepared on a trace's connection (:func:`ettcore.metric.prepare`): the per-instant
    attribution in ``batches`` batches of jobs on a grid of ``grid_ms``, and whether the per-job table is made."""

    batches: int
    grid_ms: int
    job_metrics: bool = False


@dataclass(kw_only=True)
class Trace(CheckedTrace):
    """A loaded, checked trace: a DuckDB connection holding the views above."""

    con: duckdb.DuckDBPyConnection
    temp_directory: Path | None = None  # where DuckDB spills (and the span store's batch parts go), when given
    spans: span_store.SpanStore | None = field(
        default=None, repr=False
    )  # the typed spans, read once (built on first need)
    checks_known: bool = False  # the check cache knew this content passed every check (no span screen needed)
    spans_keyed: bool = False  # the span store is keyed to the clean jobs (keyed_spans registered)
    attribution: Attribution | None = field(default=None, repr=False)  # set by the metric; None: not prepared
    # metric views the trace's holder keeps computed for the default parameters (a fleet store's per-job results,
    # :mod:`ettcore.store`): view name -> SQL of the kept rows, used in place of the view's own query
    stored_views: dict[str, str] = field(default_factory=dict, repr=False)

    def span_store(self) -> span_store.SpanStore:
        """The trace's span store (:mod:`ettcore.trace.span_store`), built and keyed to the clean jobs on first need."""
        if self.spans is None:  # a trace whose checks are known (check cache) needs no screen
            self.spans = span_store.build(self.con, self, self.temp_directory, screened=not self.checks_known)
        if not self.spans_keyed:
            span_store.register_keyed(self.con, excluded=bool(self.excluded_jobs))
            self.spans_keyed = True
        return self.spans

    def sql(self, query: str, params: dict | list | None = None) -> pl.DataFrame:
        """Run a query against the trace's views; parameters are bound, never pasted."""
        return self.con.sql(query, params=params).pl()


# ----------------------------------------------------------------------------- discovery


def _holds_table(folder: Path, table: str) -> bool:
    return any((folder / f"{table}{suffix}").is_file() for suffix in SUFFIXES) or (folder / table).is_dir()


def _inner_trace_hint(path: Path, table: str) -> str:
    """``; the trace is in PATH/trace`` when a folder just inside ``path`` holds the missing table (the folder above a
    trace was given, e.g. ``data/slurm-fleet`` for ``data/slurm-fleet/trace``), else nothing."""
    try:
        inner = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    except OSError:
        return ""
    hits = [p for p in inner if _holds_table(p, table)]
    if not hits:
        return ""
    return "; a trace is in " + " and ".join(str(p) for p in hits[:3]) + ": give that folder"


def discover(path: Path) -> list[Source]:
    """Find the table files of a trace folder; an error names what is missing or ambiguous."""
    if not path.exists():
        raise InputError(Problem(str(path), None, None, "trace path does not exist"))
    if path.is_file():
        return [Source(t, "duckdb", [path]) for t in TABLES]
    sources: list[Source] = []
    for table in TABLES:
        found: list[Source] = []
        for suffix in SUFFIXES:
            f = path / f"{table}{suffix}"
            if f.is_file():
                found.append(Source(table, suffix[1:], [f]))
        folder = path / table
        if folder.is_dir():
            # skip hidden and underscore paths: in-progress output (Spark's _temporary/, our .tmp-*) is never read
            files = sorted(
                p
                for p in folder.rglob("*.parquet")
                if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts)
            )
            if not files:
                raise InputError(
                    Problem(str(folder), None, None, f"folder for table '{table}' holds no .parquet files")
                )
            found.append(Source(table, "parquet", files))
        if len(found) > 1:
            names = ", ".join(str(s.files[0]) for s in found)
            raise InputError(Problem(str(path), None, None, f"table '{table}' is given more than once: {names}"))
        if not found:
            if table in REQUIRED_TABLES:
                raise InputError(
                    Problem(
                        str(path),
                        None,
                        None,
                        f"required table '{table}' not found ({table}.parquet, .csv, .jsonl or {table}/)"
                        + _inner_trace_hint(path, table),
                    )
                )
            continue
        sources.append(found[0])
    return sources


# ----------------------------------------------------------------------------- raw layer


def _read_text_table(src: Source) -> pl.DataFrame:
    """CSV or JSONL read as text columns, with ``_file`` and ``_row``; a corrupt file or line is a Problem."""
    f = src.files[0]
    try:
        data = f.read_bytes()
    except OSError as exc:
        raise InputError(Problem(str(f), None, None, f"cannot read file: {exc}")) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        row = line - 1 if src.kind == "csv" else line
        if row < 1:
            raise InputError(Problem(str(f), None, None, "header line is not valid UTF-8")) from None
        raise InputError(Problem(str(f), row, None, "file is not valid UTF-8")) from None
    if text.startswith("\ufeff"):  # a byte-order mark ("CSV UTF-8" of spreadsheets): the encoding's, not data
        text = text[1:]
    if src.kind == "csv":
        header = next(csv.reader(io.StringIO(text.split("\n", 1)[0])), [])
        _refuse_reserved(str(f), header)
        try:
            df = pl.read_csv(text.encode(), infer_schema=False, has_header=True)
        except Exception as exc:  # polars raises several types for malformed CSV
            raise InputError(Problem(str(f), None, None, f"corrupt CSV: {str(exc).splitlines()[0]}")) from None
        if len(header) == df.width:
            df.columns = header  # polars keeps a quoted header's doubled quotes ("a""b"); the csv module unescapes them
        df = df.with_row_index("_row", offset=1)
    else:
        rows: list[dict] = []
        problems: list[Problem] = []
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                problems.append(Problem(str(f), i, None, f"line is not valid JSON ({exc.msg})", table=src.table))
                continue
            if not isinstance(obj, dict):
                problems.append(Problem(str(f), i, None, "line is not a JSON object", table=src.table))
                continue
            bad = [k for k in obj if str(k).lower() in RESERVED_COLUMNS]
            if bad:
                problems.append(
                    Problem(str(f), i, str(bad[0]), f"reserved key {bad[0]!r} (the loader adds it)", table=src.table)
                )
                continue
            ctrl = [k for k in obj if any(ord(ch) < 32 for ch in str(k))]
            if ctrl:
                problems.append(
                    Problem(str(f), i, repr(ctrl[0]), "key contains a control character (e.g. NUL)", table=src.table)
                )
                continue
            rec = {"_row": i}
            for k, v in obj.items():
                rec[str(k)] = None if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else str(v))
            rows.append(rec)
        if problems:
            raise InputError(problems)
        if rows:
            cols = list(dict.fromkeys(k for r in rows for k in r))
            _refuse_reserved(str(f), [c for c in cols if c != "_row"])  # e.g. 'start' on some lines, 'Start' on others
            df = pl.DataFrame(
                {c: [r.get(c) for r in rows] for c in cols},
                schema={c: (pl.UInt32 if c == "_row" else pl.Utf8) for c in cols},
            )
        else:
            df = pl.DataFrame({"_row": []}, schema={"_row": pl.UInt32})
    return df.with_columns(pl.lit(str(f)).alias("_file"), pl.col("_row").cast(pl.Int64))


def _arrow_kind(t: pa.DataType) -> str:
    """Plain types (text, numbers, timestamps) unify across part files; a nested type only with itself."""
    return f"nested {t}" if pa.types.is_nested(t) else "plain"


def _register_raw(con: duckdb.DuckDBPyConnection, src: Source) -> list[tuple[str, list[str]]]:
    """Create ``raw_<table>``; returns (file, column names) of each file read (a file without rows defines none)."""
    name = f"raw_{src.table}"
    if src.kind == "parquet":
        names: list[tuple[str, list[str]]] = []
        kinds: dict[str, tuple] = {}
        for f in src.files:
            try:
                schema = pq.read_schema(f)
            except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
                raise InputError(Problem(str(f), None, None, f"corrupt or unreadable Parquet file: {exc}")) from None
            _refuse_reserved(str(f), schema.names)
            if not schema.names:
                raise InputError(Problem(str(f), None, None, "Parquet file has no columns"))
            names.append((str(f), list(schema.names)))
            for col in schema.names:
                kind = _arrow_kind(schema.field(col).type)
                first = kinds.setdefault(col, (kind, f, schema.field(col).type))
                if first[0] != kind:
                    raise InputError(
                        Problem(
                            str(f), None, col, f"type {schema.field(col).type} differs from {first[2]} in {first[1]}"
                        )
                    )
        if any(_GLOB_CHARS & set(str(f)) for f in src.files):
            # DuckDB's reader treats every path as a glob pattern: read such files with pyarrow instead
            frames = []
            for f in src.files:
                df = pl.from_arrow(pq.read_table(f))
                frames.append(
                    df.with_row_index("_row", offset=1).with_columns(
                        pl.col("_row").cast(pl.Int64), pl.lit(str(f)).alias("_file")
                    )
                )
            df = pl.concat(frames, how="diagonal_relaxed")
            con.register(f"_arrow_{src.table}", df.to_arrow())
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM _arrow_{src.table}")
            return names
        try:
            rel = con.read_parquet([str(f) for f in src.files], filename=True, file_row_number=True, union_by_name=True)
        except duckdb.Error as exc:
            raise InputError(
                Problem(str(src.files[0].parent), None, None, f"cannot read Parquet files: {str(exc).splitlines()[0]}")
            ) from None
        cols = [c for c in rel.columns if c not in ("filename", "file_row_number")]
        rel = rel.project(
            ", ".join([quote_ident(c) for c in cols] + ['"filename" AS _file', '"file_row_number" + 1 AS _row'])
        )
        rel.create_view(name)
        return names
    if src.kind in ("csv", "jsonl"):
        df = _read_text_table(src)
        con.register(f"_arrow_{src.table}", df.to_arrow())
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM _arrow_{src.table}")
        cols = [c for c in df.columns if c not in ("_row", "_file")]
        return [] if src.kind == "jsonl" and df.height == 0 else [(str(src.files[0]), cols)]
    else:  # duckdb: the connection is the database itself
        tables = {
            r[0]
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                "AND schema_name = 'main'"
            ).fetchall()
        }
        if src.table not in tables:
            if src.table in REQUIRED_TABLES:
                raise InputError(
                    Problem(str(src.files[0]), None, None, f"required table '{src.table}' not found in the DuckDB file")
                )
            return []
        cols = [r[0] for r in con.execute(f"DESCRIBE main.{quote_ident(src.table)}").fetchall()]
        _refuse_reserved(f"{src.files[0]}:{src.table}", cols)
        sel = ", ".join([quote_ident(c) for c in cols] + ["$file AS _file", "rowid + 1 AS _row"])
        # a view cannot hold a bound parameter: keep the file name in a one-row table
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _duckdb_file AS SELECT $file::VARCHAR AS f", {"file": str(src.files[0])}
        )
        sel = sel.replace("$file", "(SELECT f FROM _duckdb_file)")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT {sel} FROM main.{quote_ident(src.table)}")
        return [(f"{src.files[0]}:{src.table}", cols)]


def _column_problems(con: duckdb.DuckDBPyConnection, table: str, files: list[tuple[str, list[str]]]) -> list[Problem]:
    """The required columns each file of ``table`` lacks; cursor columns only where the file holds train spans."""
    train_files: set[str] = set()
    if table == "spans" and any(set(TRAIN_COLUMNS) - set(schema_columns(table, names)) for _, names in files):
        # only when some file lacks a cursor column (rare): which files hold train spans?
        phase = next(
            (
                schema_columns(table, names).get("phase")
                for _, names in files
                if "phase" in schema_columns(table, names)
            ),
            None,
        )
        if phase is not None:
            train_files = {
                r[0]
                for r in con.execute(
                    f"SELECT DISTINCT _file FROM raw_spans WHERE {quote_ident(phase)} = 'train'"
                ).fetchall()
            }
        if files and files[0][0].endswith(":spans"):  # a DuckDB database: _file is the database file
            train_files = {files[0][0]} if train_files else set()
    return [p for f, names in files for p in missing_columns(table, f, names, has_train=f in train_files)]


# ----------------------------------------------------------------------------- typed layer


def _raw_types(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    return {r[0]: r[1].upper() for r in con.execute(f"DESCRIBE raw_{table}").fetchall()}


_NUMERIC_TYPE = re.compile(
    r"(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|REAL|DECIMAL\(\d+,\s*\d+\))"
)
_TIMESTAMP_TYPE = re.compile(r"(TIMESTAMP( WITH TIME ZONE)?|TIMESTAMP_(S|MS|NS|TZ)|DATE)")
_ZONED_TYPES = frozenset(["TIMESTAMP WITH TIME ZONE", "TIMESTAMP_TZ"])


_SMALL_INT_TYPES = frozenset(["TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT", "UINTEGER"])


def duckdb_source(dtype: str | None) -> str:
    """The class (:data:`ettcore.trace.typing.SOURCES`) of a column of DuckDB type ``dtype`` (None: absent)."""
    if dtype is None:
        return rules.ABSENT
    if dtype == "VARCHAR":
        return rules.TEXT
    if dtype in _SMALL_INT_TYPES:
        return rules.SMALL_INT
    if dtype == "BIGINT":
        return rules.BIG_INT
    if _NUMERIC_TYPE.fullmatch(dtype):
        return rules.NUMERIC
    if _TIMESTAMP_TYPE.fullmatch(dtype):
        return rules.ZONED_TIMESTAMP if dtype in _ZONED_TYPES else rules.TIMESTAMP
    return rules.OTHER


def label_columns(names: list[str], jobs_file: str, components: tuple[str, ...] = ALL_COMPONENTS) -> list[str]:
    """The jobs table's label columns (every column but the schema's and ``_file``/``_row``), in order.

    A label whose name, compared without case, is a schema column, a column the metric computes or ends in
    ``_raw`` is refused: it would be hidden by (or hide) that column.
    """
    known = {c for c, _ in SCHEMA["jobs"]}
    computed = computed_columns(components)
    taken = set(known)
    labels: list[str] = []
    for col in names:
        if col.lower() in known or col in ("_file", "_row"):  # a schema column in any case (``Model``) is that column
            continue
        low = col.lower()
        if low in taken or low in computed or low.endswith("_raw"):
            raise InputError(
                Problem(
                    jobs_file,
                    None,
                    col,
                    "label column collides with a column the loader or the metric uses"
                    " (names are compared without case); rename it",
                )
            )
        taken.add(low)
        labels.append(col)
    return labels


def _register_typed(
    con: duckdb.DuckDBPyConnection, table: str, present: bool, components: tuple[str, ...] = ALL_COMPONENTS
) -> list[str]:
    """Create ``typed_<table>``; returns the label columns (extra columns of ``jobs``)."""
    types = _raw_types(con, table) if present else {}
    held = schema_columns(table, list(types))
    parts = ["_file", "_row"] if present else ["NULL::VARCHAR AS _file", "NULL::BIGINT AS _row"]
    for col, kind in SCHEMA[table]:
        source = duckdb_source(types.get(held.get(col, "")))
        expr, raw = rules.typed_field(held.get(col, col), kind, source, rules.DUCKDB, quote_ident)
        parts.append(f"{expr} AS {quote_ident(rules.typed_name(col, kind))}")
        if kind != "str":
            if table == "spans":
                # the text of a span's field only where its value did not parse, the one place a check reads it
                # (casting tens of millions of valid numbers to text would cost as much as reading them)
                raw = f"(CASE WHEN ({expr}) IS NULL THEN {raw} END)"
            parts.append(f"{raw} AS {quote_ident(col + '_raw')}")
    labels: list[str] = []
    if table == "jobs" and present:
        jobs_file = con.execute("SELECT min(_file) FROM raw_jobs").fetchall()[0][0] or "jobs"
        labels = label_columns(list(types), jobs_file, components)
        parts += [quote_ident(col) for col in labels]
    src = f"raw_{table}" if present else "(SELECT 1) AS empty WHERE false"
    con.execute(f"CREATE OR REPLACE TEMP VIEW typed_{table} AS SELECT {', '.join(parts)} FROM {src}")
    return labels


# ----------------------------------------------------------------------------- the whole load


def _connect(
    sources: list[Source], memory_limit: str | None = None, temp_directory: str | Path | None = None
) -> duckdb.DuckDBPyConnection:
    if sources and sources[0].kind == "duckdb":
        f = sources[0].files[0]
        try:
            con = duckdb.connect(str(f), read_only=True)
        except duckdb.Error as exc:
            raise InputError(
                Problem(
                    str(f),
                    None,
                    None,
                    f"not a readable DuckDB database: {io_cause(exc)}{REBUILD}",
                )
            ) from None
    else:
        con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    apply_limits(con, memory_limit, temp_directory)
    return con


def apply_limits(
    con: duckdb.DuckDBPyConnection, memory_limit: str | None = None, temp_directory: str | Path | None = None
) -> None:
    """DuckDB's memory budget (:func:`ettcore.trace.memory.resolve`: never DuckDB's 80 % of the machine) and spill
    folder on ``con``; a value DuckDB refuses, or a spill folder that is an existing file, is an input error naming
    the flag."""
    limit, origin = memory.resolve(memory_limit)
    try:
        con.execute("SET memory_limit = $v", {"v": limit})
    except duckdb.Error as exc:
        raise InputError(
            Problem(origin, None, "memory_limit", f"{limit!r} not accepted by DuckDB: {str(exc).splitlines()[0]}")
        ) from None
    if temp_directory is None:
        return
    if Path(temp_directory).exists() and not Path(temp_directory).is_dir():
        raise InputError(
            Problem("--temp-directory", None, "temp_directory", f"{str(temp_directory)!r} is not a folder")
        )
    try:
        con.execute("SET temp_directory = $v", {"v": str(temp_directory)})
    except duckdb.Error as exc:
        raise InputError(
            Problem("--temp-directory", None, "temp_directory", f"not accepted by DuckDB: {str(exc).splitlines()[0]}")
        ) from None


def _register_phases(con: duckdb.DuckDBPyConnection, phase_map: PhaseMap, vocabulary: Vocabulary = VOCABULARY) -> None:
    rows = phase_map.rows()
    df = pl.DataFrame(
        {
            "phase_id": [r[0] for r in rows],
            "phase": [r[1] for r in rows],
            "component": [r[2] for r in rows],
            "owner": [r[3] for r in rows],
        },
        schema={"phase_id": pl.Int64, "phase": pl.Utf8, "component": pl.Utf8, "owner": pl.Utf8},
    ).with_columns((pl.col("phase") == "train").alias("is_train"))
    con.register("_arrow_phases", df.to_arrow())
    con.execute("CREATE OR REPLACE TEMP TABLE ett_phases AS SELECT * FROM _arrow_phases")
    register_causes(con, vocabulary)


def register_causes(con: duckdb.DuckDBPyConnection, vocabulary: Vocabulary = VOCABULARY) -> None:
    """The small table ``ett_causes``: the vocabulary's causes with ids, groups and the end reason each cause is
    derived from (:attr:`ettcore.vocabulary.Vocabulary.cause_rows`); the metric's SQL joins it (a trace and a store
    alike)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE ett_causes ({CAUSE_TABLE_COLUMNS})")
    con.executemany("INSERT INTO ett_causes VALUES (?, ?, ?, ?, ?)", list(vocabulary.cause_rows))


def _default_as_of(con: duckdb.DuckDBPyConnection) -> int | None:
    """The trace's latest instant: the latest start or end of a clean attempt or span (``keyed_spans``: the span
    store's), by ``sql/load/default_as_of.sql``, which Spark runs too."""
    row = con.execute(sql("load/default_as_of")).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def damaged_file(sources: list[Source]) -> str | None:
    """After DuckDB failed to decode a source: the first Parquet file pyarrow cannot decode either."""
    for src in sources:
        if src.kind != "parquet":
            continue
        for f in src.files:
            try:
                pq.read_table(f)
            except Exception:  # any decoding error names this file
                return str(f)
    return None


def parse_as_of(value: str | int | float | None) -> int | None:
    """An as-of time given by a user: ISO-8601 (zone-less = UTC) or epoch seconds -> ms."""
    return None if value is None else parse_instant(value, "--as-of", "as_of")


def jobs_to_leave_out(problems: list[Problem], skip_invalid: bool) -> list[str]:
    """Raise on any problem unless ``skip_invalid`` (a problem of no row, a whole-file one, always raises);
    otherwise the sorted ids of the jobs with a problem, which the metric leaves out."""
    fatal = [p for p in problems if p.row is None]
    if problems and (not skip_invalid or fatal):
        raise InputError(problems if not skip_invalid else fatal)
    return sorted({p.job_id for p in problems if p.job_id is not None})


def _prepare_clean(trace: Trace, skip_invalid: bool, known: dict | None = None) -> None:
    """Refuse or leave out what the checks found; create the clean views, the as-of parameters and the accounting.

    ``known``: the clean verdict of this very content (:mod:`ettcore.trace.check_cache`), whose row counts and latest
    instant stand for the queries that would count them again.
    """
    con = trace.con
    trace.excluded_jobs = jobs_to_leave_out(trace.problems, skip_invalid)
    checks.register_clean(con, trace.problems)
    if trace.spans is not None:  # built by the checks; with a known verdict it is built on first need (the metric's)
        trace.span_store()
    # as_of_ms clips running work; cut_ms is the exclusive bound on starts.  Without an explicit as-of,
    # as-of is the trace's latest instant and nothing that started is cut (cut = as-of + 1 ms).
    explicit = trace.as_of_ms is not None
    if not explicit:
        latest = known.get("latest_ms") if known else None
        if latest is None:
            trace.span_store()
        trace.as_of_ms = trace.latest_ms = _default_as_of(con) if latest is None else int(latest)
        cut_ms = None if trace.as_of_ms is None else trace.as_of_ms + 1
    else:
        cut_ms = trace.as_of_ms
        trace.span_store()  # the not-started spans are counted on it
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_params AS SELECT $as_of::BIGINT AS as_of_ms, $cut::BIGINT AS cut_ms",
        {"as_of": trace.as_of_ms, "cut": cut_ms},
    )
    if explicit:
        _count_not_started(con, trace)
    else:  # every start is at or before the latest instant, so before the cut: counting would find nothing
        trace.not_started = {"attempts": 0, "spans": 0, "jobs": 0}
    trace.accounting = known["accounting"] if known else checks.accounting(con, trace.problems)
    register_window(con, trace.window)


def leave_out(trace: Trace, table: str) -> None:
    """Leave the jobs of the temporary table ``table`` (a ``job_id`` column) out of ``clean_*`` and the metric's
    spans, as jobs with findings are left out: the metric then sees only the other jobs (a fleet store's refresh
    attributes only the jobs it replaces, :mod:`ettcore.store`).  ``table`` is a name this package's callers
    choose, never user text."""
    con = trace.con
    con.execute(
        f"INSERT INTO ett_excluded_jobs SELECT DISTINCT job_id FROM {table} EXCEPT SELECT job_id FROM ett_excluded_jobs"
    )
    checks.clean_views(con, anti=True)
    con.execute("DROP TABLE IF EXISTS ett_excluded_keys")  # span_store.register_keyed makes it again, with these
    trace.excluded_jobs = [r[0] for r in con.execute("SELECT job_id FROM ett_excluded_jobs ORDER BY 1").fetchall()]
    trace.spans_keyed = False
    trace.attribution = None


def _count_not_started(con: duckdb.DuckDBPyConnection, trace: Trace) -> None:
    """Rows and jobs that start at or after an explicit as-of (the cut): not measured, and said so."""
    trace.not_started = {
        table: con.execute(
            f"SELECT count(*) FROM {'clean_attempts' if table == 'attempts' else 'keyed_spans'} AS t, ett_params AS p "
            "WHERE t.start_ms >= p.cut_ms"
        ).fetchall()[0][0]
        for table in ("attempts", "spans")
    }
    trace.not_started["jobs"] = con.execute(
        "SELECT count(*) FROM (SELECT job_id FROM clean_attempts GROUP BY job_id "
        "HAVING min(start_ms) >= (SELECT cut_ms FROM ett_params))"
    ).fetchall()[0][0]


def load_trace(
    path: str | Path,
    mapping: str | Path | None = None,
    as_of: str | int | float | None = None,
    skip_invalid: bool = False,
    memory_limit: str | None = None,
    temp_directory: str | Path | None = None,
    since: str | int | float | None = None,
    until: str | int | float | None = None,
    exclude: Any = None,
    causes_file: str | Path | None = None,
    vocabulary: Vocabulary | None = None,
) -> Trace:
    """Open a trace, check it, and prepare the views the metric reads.

    Raises :class:`InputError` listing every problem (file, row, field) unless
    ``skip_invalid``, which leaves out the affected jobs and records them in
    ``trace.accounting`` and ``trace.excluded_jobs``.  Whole-file problems
    (unreadable, corrupt, missing table) always raise.  ``memory_limit`` (e.g.
    ``"2GB"``; default: ``ETT_MEMORY_LIMIT`` or 3 GB, see :mod:`ettcore.trace.memory`) caps DuckDB's memory; beyond it
    DuckDB spills to ``temp_directory``.
    ``since``/``until`` (times as for ``as_of``) and ``exclude`` (an exclusion file, CSV or JSON, or a sequence of
    :class:`~ettcore.trace.window.Exclusion`) set the measured part of time (:mod:`ettcore.trace.window`); the default
    measures every instant.  ``causes_file``: a user's causes file (:func:`ettcore.vocabulary.read_causes_file`)
    whose causes the trace's ``cause`` column may name, beside the vocabulary's; or ``vocabulary``, one read before
    (a fleet store's: :func:`ettcore.store.refresh.source_vocabulary`).
    """
    path = Path(path)
    phase_map = load_phase_map(mapping)
    if causes_file is not None:
        vocabulary = VOCABULARY.with_causes(causes_file)
    elif vocabulary is None:
        vocabulary = VOCABULARY
    as_of_ms = parse_as_of(as_of)
    window = make_window(since, until, exclude)
    sources = discover(path)
    # hashed before anything reads the files (a CSV is read whole just below): a file rewritten between this hash and
    # the one after the checks is never kept as clean, whichever content the checks saw
    read_files = [(src.table, f) for src in sources for f in src.files]
    key = check_cache.key(read_files, phase_map.rows(), vocabulary.digest) if check_cache.enabled() else None
    con = _connect(sources, memory_limit, temp_directory)
    present = set()
    column_problems: list[Problem] = []
    for src in sources:
        files = _register_raw(con, src)
        if con.execute(
            "SELECT count(*) FROM duckdb_views() WHERE view_name = $n", {"n": f"raw_{src.table}"}
        ).fetchall()[0][0]:
            present.add(src.table)
            column_problems += _column_problems(con, src.table, files)
    if column_problems:  # every row would fail: one problem per file and column instead
        raise InputError(column_problems)
    labels: list[str] = []
    for table in TABLES:
        got = _register_typed(con, table, table in present, phase_map.all_components)
        if table == "jobs":
            labels = got
    _register_phases(con, phase_map, vocabulary)
    metadata = {}
    meta_file = path / "trace.json" if path.is_dir() else None
    if meta_file is not None and meta_file.is_file():
        try:
            metadata = json.loads(meta_file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(Problem(str(meta_file), None, None, f"trace.json is not valid JSON: {exc}")) from None
        if not isinstance(metadata, dict):
            raise InputError(Problem(str(meta_file), None, None, "trace.json must hold a JSON object"))

    trace = Trace(
        path=path,
        con=con,
        phase_map=phase_map,
        as_of_ms=as_of_ms,
        labels=labels,
        metadata=metadata,
        sources=sources,
        temp_directory=None if temp_directory is None else Path(temp_directory),
        window=window,
        vocabulary=vocabulary,
    )
    known = check_cache.lookup(key)
    if known is not None and any(src.kind in ("csv", "jsonl") for src in sources):
        # text tables were read whole above: the verdict stands for them only if they still hold what was hashed
        # (a file rewritten between the hash and the read, as a live trace's may be, is checked as new content)
        known = known if check_cache.key(read_files, phase_map.rows(), vocabulary.digest) == key else None
    try:
        if known is not None:  # this very content passed every check before
            checks.register_no_findings(con)
            trace.checks_known = True
        else:
            # the spans are read and typed once, into the store; the span checks run only if its screen finds a row
            # they could reject (span_store.screen), and then on the rows as read, to name file, row and field
            trace.spans = span_store.build(con, trace, temp_directory)
            suspects = span_store.screen(trace.spans)
            trace.problems = checks.run_checks(con, has_jobs="jobs" in present, spans=suspects > 0)
        _prepare_clean(trace, skip_invalid, known)
    except (
        duckdb.Error
    ) as exc:  # data DuckDB cannot decode (e.g. a damaged Parquet page) surfaces on the first full read
        raise InputError(
            Problem(damaged_file(sources) or str(path), None, None, f"cannot read the data: {str(exc).splitlines()[0]}")
        ) from None
    if (
        known is None
        and key is not None
        and not trace.problems
        and check_cache.key(read_files, phase_map.rows(), vocabulary.digest) == key
    ):
        # kept only if the files still hold what was hashed before the checks read them
        check_cache.store(key, trace.accounting, trace.latest_ms)
    return trace
