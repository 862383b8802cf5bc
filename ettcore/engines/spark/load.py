"""Loading and checking a trace on Spark alone, for a trace given as a URI.

A trace named by a URI (``s3a://bucket/fleet``, ``hdfs://nn/traces/t1``,
``gs://...``, ``abfss://...``, ``file:///abs/path``) cannot be read by DuckDB, so
everything :func:`ettcore.trace.load_trace` does for a local path happens on
Spark here, with the same rules and the same results:

1. **Discovery** where Spark runs (:mod:`ettcore.engines.spark.files`: Hadoop's
   FileSystem API in the driver's JVM, or DataFrames on a Spark Connect server; no local file
   calls): ``jobs`` (optional), ``attempts`` and ``spans``, each
   ``<table>.parquet`` or a folder ``<table>/`` of Parquet part files (nested
   folders such as ``day=2026-01-05/`` are read, their values are not columns, as
   for a local trace; hidden and ``_``-prefixed paths are skipped); ``trace.json`` optional.  Only Parquet is read from
   a URI: CSV, JSONL and DuckDB files are refused with an error saying so.
2. ``raw_<table>`` views with ``_file`` (the file's URI as Spark's
   ``_metadata.file_path`` gives it, percent-encoded: ``file:/data/my%20trace/spans.parquet``)
   and ``_row`` (1-based row within the file, as DuckDB numbers Parquet rows),
   then ``typed_<table>`` with the loader's parsing rules
   (:func:`ettcore.engines.spark.typed_select`) and the same label columns.
3. The data checks of ``ettcore/sql/checks/`` translated to Spark SQL
   (:func:`ettcore.engines.spark.transpile.spark_sql`, which prefers a variant in
   ``ettcore/sql/spark/`` where one exists): each finding is a
   :class:`~ettcore.errors.Problem` naming file, row and field.  Without
   ``skip_invalid`` any finding raises :class:`~ettcore.errors.InputError`; with
   it the affected jobs are left out, as for a local trace.
4. ``clean_*``, ``ett_params`` (as-of and cut-off, the same defaults),
   ``ett_phases``, the row accounting and the not-started counts, all computed
   on Spark; then the metric's views (:mod:`ettcore.engines.spark`).

:func:`open_uri` returns a :class:`UriSparkTrace` for the functions of
:mod:`ettcore.engines.spark`; its ``trace`` (a :class:`UriTrace`) carries what
the ``ett`` command reads of a :class:`~ettcore.trace.Trace` (accounting,
excluded jobs, as-of, metadata), without a DuckDB connection.

Differences from a local trace: the URI is taken as Hadoop takes it (not
percent-decoded); a mapping file (``mapping``) is still a local file; part files
whose columns have different types (bigint in one, string in another) are
refused, where DuckDB unifies them; errors about a table's columns name its
folder rather than one part file; a very large or small number quoted in a
message is written as Spark writes it (``1.0E20`` where DuckDB writes ``1e+20``);
there is no DuckDB fingerprint to compare.

Reading ``s3a://``, ``gs://`` or ``abfss://`` needs that filesystem's Hadoop
connector on Spark's classpath (e.g. ``spark.jars.packages`` set to
``org.apache.hadoop:hadoop-aws:<Hadoop version>``) and its credentials in the
Spark configuration; both are the user's Spark setup.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ettcore.engines import spark as sp
from ettcore.engines.spark import files as spark_files
from ettcore.engines.spark.files import first_line
from ettcore.engines.spark.transpile import spark_sql
from ettcore.errors import InputError, Problem
from ettcore.phases import PhaseMap, load_phase_map
from ettcore.trace.checks import accounting_of, accounting_query
from ettcore.trace.load import (
    REQUIRED_TABLES,
    SUFFIXES,
    TABLES,
    TRAIN_COLUMNS,
    CheckedTrace,
    _refuse_reserved,
    is_uri,
    jobs_to_leave_out,
    label_columns,
    missing_columns,
    parse_as_of,
    schema_columns,
)
from ettcore.trace.options import TraceOptions
from ettcore.trace.queries import check_names
from ettcore.trace.window import make_window
from ettcore.vocabulary import VOCABULARY, Vocabulary

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Hadoop connector to suggest when a scheme has no FileSystem on the classpath ({v}: Spark's Hadoop version).
_CONNECTORS = {
    "s3a": "org.apache.hadoop:hadoop-aws:{v}",
    "gs": "com.google.cloud.bigdataoss:gcs-connector:<version>",
    "abfs": "org.apache.hadoop:hadoop-azure:{v}",
    "abfss": "org.apache.hadoop:hadoop-azure:{v}",
    "wasb": "org.apache.hadoop:hadoop-azure:{v}",
    "wasbs": "org.apache.hadoop:hadoop-azure:{v}",
}


# ----------------------------------------------------------------------------- discovery (ettcore.engines.spark.files)


@dataclass
class UriSource:
    table: str
    kind: str  # always parquet once discovered
    files: list[str]  # file URIs as Hadoop prints them, sorted
    location: str  # the table's file or folder, named by errors about the whole table


def _filesystem(spark: "SparkSession", uri: str) -> tuple[spark_files.Files, str]:
    """(the session's way to list and read files, ``uri`` qualified); a missing connector is a InputError that says
    what to add."""
    fs = spark_files.files(spark)
    try:
        return fs, fs.qualify(uri)
    except Exception as exc:  # py4j's Py4JJavaError, or IllegalArgumentException for a malformed URI
        if not type(exc).__module__.startswith(("py4j", "pyspark")):
            raise
        scheme = uri.split("://", 1)[0].lower()
        hint = ""
        if scheme in _CONNECTORS:
            package = _CONNECTORS[scheme].format(v=fs.hadoop_version())
            hint = (
                f"; add the Hadoop connector for {scheme}:// to Spark (e.g. spark.jars.packages={package}) and its "
                "credentials"
            )
        raise InputError(
            Problem(uri, None, None, f"Spark cannot open this URI: {first_line(exc)[:300]}{hint}")
        ) from None


def discover_uri(spark: "SparkSession", uri: str) -> tuple[list[UriSource], str | None]:
    """The Parquet tables of the trace folder at ``uri`` and its ``trace.json`` (None if absent).

    The same rules as :func:`ettcore.trace.discover`: a missing required table,
    a table given twice or a folder without ``.parquet`` files is an error; a
    table in another format is refused because only Parquet is read from a URI.
    """
    fs, root = _filesystem(spark, uri)
    try:
        kind = fs.kind(root)
        if kind is None:
            raise InputError(Problem(uri, None, None, "trace path does not exist"))
        if kind != "dir":
            raise InputError(
                Problem(
                    uri,
                    None,
                    None,
                    "a trace given as a URI must be a folder of Parquet tables (a DuckDB file is read from a local "
                    "path only)",
                )
            )
        entries = fs.entries(root)
    except InputError:
        raise
    except Exception as exc:
        if not type(exc).__module__.startswith(("py4j", "pyspark")):
            raise
        raise InputError(Problem(uri, None, None, f"Spark cannot list the trace: {first_line(exc)[:300]}")) from None

    sources: list[UriSource] = []
    for table in TABLES:
        found: list[tuple[str, str]] = []  # (kind, path)
        for suffix in SUFFIXES:
            e = entries.get(f"{table}{suffix}")
            if e is not None and not e.is_dir:
                found.append((suffix[1:], e.path))
        e = entries.get(table)
        if e is not None and e.is_dir:
            found.append(("folder", e.path))
        if len(found) > 1:
            names = ", ".join(name for _, name in found)
            raise InputError(Problem(uri, None, None, f"table '{table}' is given more than once: {names}"))
        if not found:
            if table in REQUIRED_TABLES:
                raise InputError(
                    Problem(
                        uri,
                        None,
                        None,
                        f"required table '{table}' not found ({table}.parquet or {table}/ of Parquet files)",
                    )
                )
            continue
        kind, name = found[0]
        if kind in ("csv", "jsonl"):
            raise InputError(
                Problem(
                    name,
                    None,
                    None,
                    f"a trace read from a URI must be Parquet ({table}.parquet or {table}/); "
                    f"{kind.upper()} is read from local paths only: convert the table to Parquet or copy the trace "
                    "locally",
                )
            )
        if kind == "parquet":
            sources.append(UriSource(table, "parquet", [name], name))
            continue
        try:
            files = [f for f in fs.files_under(name) if f.endswith(".parquet")]
        except Exception as exc:
            if not type(exc).__module__.startswith(("py4j", "pyspark")):
                raise
            raise InputError(
                Problem(name, None, None, f"Spark cannot list the folder of table '{table}': {first_line(exc)[:300]}")
            ) from None
        if not files:
            raise InputError(Problem(name, None, None, f"folder for table '{table}' holds no .parquet files"))
        sources.append(UriSource(table, "parquet", files, name))
    meta = entries.get("trace.json")
    return sources, (meta.path if meta is not None and not meta.is_dir else None)


def read_metadata(spark: "SparkSession", uri: str) -> dict:
    """``trace.json`` (or another JSON object file, such as a store mirror's pointer) read where Spark reads (bytes,
    decoded here), with the local loader's errors."""
    fs, path = _filesystem(spark, uri)
    data = fs.read(path)
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    try:
        metadata = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(Problem(uri, None, None, f"{name} is not valid JSON: {exc}")) from None
    if not isinstance(metadata, dict):
        raise InputError(Problem(uri, None, None, f"{name} must hold a JSON object"))
    return metadata


# ----------------------------------------------------------------------------- raw and typed layers


def _read(spark: "SparkSession", src: UriSource) -> "DataFrame":
    """``raw_<table>`` of one source; errors about its columns name the table's file or folder."""
    where = src.location
    try:
        df = sp.read_raw(spark, src.table, src.kind, src.files)
        names = df.columns[:-2]  # read_raw appends _file and _row
    except InputError:
        raise
    except Exception as exc:
        if not type(exc).__module__.startswith(("py4j", "pyspark")):
            raise
        why = first_line(exc)
        if "CANNOT_MERGE_SCHEMAS" in why:  # DuckDB unifies differing plain types; Spark refuses them
            why = (
                "its part files give a column different types (e.g. bigint in one, string in another); "
                "write them with one schema"
            )
        raise InputError(Problem(where, None, None, f"Spark cannot read table '{src.table}': {why[:300]}")) from None
    _refuse_reserved(where, names)
    if "_metadata" in (n.lower() for n in names):
        raise InputError(
            Problem(where, None, "_metadata", "reserved column name '_metadata' (Spark adds it); rename the column")
        )
    if not names:
        raise InputError(Problem(where, None, None, "Parquet file has no columns"))
    held = schema_columns(src.table, names)
    has_train = False
    if (
        src.table == "spans" and "phase" in held and set(TRAIN_COLUMNS) - set(held)
    ):  # rare: only then look for train spans
        has_train = df.filter(df[held["phase"]] == "train").limit(1).count() > 0
    missing = missing_columns(src.table, where, names, has_train=has_train)
    if missing:
        raise InputError(missing)
    return df


# ----------------------------------------------------------------------------- checks, as-of, accounting (Spark SQL)


def findings_query(has_jobs: bool) -> str:
    """Every check of ``ettcore/sql/checks/`` in Spark SQL, as one UNION ALL ordered like the DuckDB findings."""
    names = [n for n in check_names() if has_jobs or not n.startswith("jobs_")]
    union = "\nUNION ALL\n".join(
        f"SELECT table_name, _file, CAST(_row AS BIGINT) AS _row, field, job_id, message, '{n}' AS `check` "
        f"FROM ({spark_sql('checks/' + n)}) AS c{i}"
        for i, n in enumerate(names)
    )
    return f"SELECT * FROM ({union}) AS f ORDER BY _file, _row, field, message"


def run_checks(spark: "SparkSession", has_jobs: bool) -> list[Problem]:
    """The findings as Problems; also registered as ``ett_findings`` (read by the accounting)."""
    rows = spark.sql(findings_query(has_jobs)).collect()
    spark.createDataFrame(
        [tuple(r) for r in rows],
        "table_name string, _file string, _row bigint, field string, job_id string, message string, `check` string",
    ).createOrReplaceTempView("ett_findings")
    return [
        Problem(
            file=r["_file"],
            row=r["_row"],
            field=r["field"],
            message=r["message"],
            table=r["table_name"],
            job_id=r["job_id"],
        )
        for r in rows
    ]


_NOT_STARTED = """
SELECT (SELECT count(*) FROM clean_attempts AS t CROSS JOIN ett_params AS p WHERE t.start_ms >= p.cut_ms) AS attempts,
       (SELECT count(*) FROM clean_spans AS t CROSS JOIN ett_params AS p WHERE t.start_ms >= p.cut_ms) AS spans,
       (SELECT count(*) FROM (SELECT job_id FROM clean_attempts GROUP BY job_id
                              HAVING min(start_ms) >= (SELECT cut_ms FROM ett_params)) AS j) AS jobs
"""


def accounting(spark: "SparkSession", problems: list[Problem]) -> dict:
    """Per table: rows read, used, rejected and rejected by reason (``read == used + rejected``): the DuckDB loader's
    query (:func:`ettcore.trace.checks.accounting_query`) and its reading (``checks.accounting_of``)."""
    return accounting_of([tuple(r) for r in spark.sql(spark_sql(accounting_query(problems))).collect()])


# ----------------------------------------------------------------------------- the trace


@dataclass
class UriTrace(CheckedTrace):
    """What the ``ett`` command reads of a :class:`~ettcore.trace.Trace`,
    for a trace read and checked by Spark (``path``: the URI)."""


@dataclass
class UriSparkTrace(sp.SparkTrace):
    """A :class:`~ettcore.engines.spark.SparkTrace` whose inputs Spark read from a URI and checked itself."""

    raw: dict = field(default_factory=dict, repr=False)  # table -> raw DataFrame (schema read once)
    cut_ms: int | None = None

    def register_inputs(self) -> None:
        _register_inputs(self.spark, self.raw, self.trace.labels, self.trace.phase_map, self.trace.vocabulary)
        sp.register_clean(self.spark, self.trace.excluded_jobs)
        sp.register_params(self.spark, self.trace.as_of_ms, self.cut_ms)


def _register_inputs(
    spark: "SparkSession", raw: dict, labels: list[str], phase_map: PhaseMap, vocabulary: Vocabulary
) -> None:
    for table in TABLES:
        df = raw.get(table)
        if df is not None:
            df.createOrReplaceTempView(f"raw_{table}")
        sp.register_typed(spark, table, None if df is None else df.schema, labels if table == "jobs" else [])
    sp.register_phases(spark, phase_map, vocabulary)


def refuse_duckdb_options(opts: TraceOptions) -> None:
    """Refuse DuckDB's own options for an input Spark alone reads (a URI, a store's Parquet mirror)."""
    for name, flag in (("memory_limit", "--memory-limit"), ("temp_directory", "--temp-directory")):
        if name in opts.given():
            why = "is DuckDB's, and Spark alone reads this input (Spark's memory and spill folder: its configuration)"
            raise InputError(Problem(flag, None, name, why))


def open_uri(uri: str, spark: "SparkSession", options: TraceOptions | None = None, **given: Any) -> UriSparkTrace:
    """Read, check and prepare the Parquet trace at ``uri`` on ``spark`` (see the module docstring); ``options``
    (:class:`~ettcore.trace.options.TraceOptions`, or its fields as keyword arguments) as for a local trace, but
    ``memory_limit`` and ``temp_directory``, DuckDB's, which are refused.

    Raises :class:`InputError` listing every finding (file, row, field) unless
    ``skip_invalid``, which leaves out the affected jobs and records them in
    ``trace.accounting`` and ``trace.excluded_jobs``, as :func:`ettcore.trace.load_trace`.
    """
    opts = TraceOptions.of(options, **given)
    refuse_duckdb_options(opts)
    mapping, as_of, skip_invalid = opts.mapping, opts.as_of, opts.skip_invalid
    since, until, exclude = opts.since, opts.until, opts.exclude
    if not is_uri(uri):
        raise InputError(
            Problem(
                str(uri), None, None, "not a URI (scheme://...); a local path is loaded by ettcore.trace.load_trace"
            )
        )
    phase_map = load_phase_map(mapping)
    vocabulary = VOCABULARY if opts.causes_file is None else VOCABULARY.with_causes(opts.causes_file)
    as_of_ms = parse_as_of(as_of)
    window = make_window(since, until, exclude)
    sp.forget_active(spark)  # the views below replace those of any trace opened before in this session
    with sp.input_errors(uri):
        sources, meta_uri = discover_uri(spark, uri)
        raw = {src.table: _read(spark, src) for src in sources}
        jobs = next((src for src in sources if src.table == "jobs"), None)
        labels = (
            label_columns(raw["jobs"].columns[:-2], jobs.files[0], phase_map.all_components) if jobs is not None else []
        )
        _register_inputs(spark, raw, labels, phase_map, vocabulary)
        metadata = read_metadata(spark, meta_uri) if meta_uri is not None else {}
        trace = UriTrace(
            path=uri,
            phase_map=phase_map,
            as_of_ms=as_of_ms,
            labels=labels,
            sources=sources,
            metadata=metadata,
            window=window,
            vocabulary=vocabulary,
        )

        # the checks and the accounting read each typed table many times: parse the files once,
        # keep the result meanwhile
        typed = [spark.table(f"typed_{t}").persist() for t in TABLES]
        for t, df in zip(TABLES, typed):
            df.createOrReplaceTempView(f"typed_{t}")
        try:
            trace.problems = run_checks(spark, has_jobs="jobs" in raw)
            trace.excluded_jobs = jobs_to_leave_out(trace.problems, skip_invalid)
            sp.register_clean(spark, trace.excluded_jobs)
            # as for a local trace: without an explicit as-of, as-of is the latest instant and cut = as-of + 1 ms
            if trace.as_of_ms is None:
                # the DuckDB loader's query, sql/load/default_as_of.sql, over the clean jobs' spans as the metric reads
                # them (keyed_spans; registered again with the metric's views)
                spark.sql(spark_sql("metric/keyed_spans")).createOrReplaceTempView("keyed_spans")
                got = spark.sql(spark_sql("load/default_as_of")).collect()[0]["as_of_ms"]
                trace.as_of_ms = None if got is None else int(got)
                cut_ms = None if trace.as_of_ms is None else trace.as_of_ms + 1
            else:
                cut_ms = trace.as_of_ms
            sp.register_params(spark, trace.as_of_ms, cut_ms)
            trace.not_started = spark.sql(_NOT_STARTED).collect()[0].asDict()
            trace.accounting = accounting(spark, trace.problems)
        finally:
            for df in typed:
                df.unpersist()

        st = UriSparkTrace(spark=spark, trace=trace, verify=False, raw=raw, cut_ms=cut_ms)
        sp.register_trace(st)
    trace.spark_trace = st
    return st
