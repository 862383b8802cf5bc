"""The ETT metric on Apache Spark: the same views, the same queries, the same frames.

How a trace gets onto Spark (``open_trace``):

1. The trace is first loaded and **checked by DuckDB** (:func:`ettcore.trace.load_trace`):
   every data check, the row accounting, the as-of time and the list of jobs
   left out by ``--skip-invalid`` come from there.  The checks stay DuckDB-only.
2. Spark reads the same files itself (Parquet files or part folders, CSV,
   JSONL; a DuckDB database file cannot be read by Spark) into ``raw_<table>``
   temp views, then builds ``typed_<table>`` with the same columns and the same
   parsing rules as the DuckDB loader (timestamps to integer milliseconds since
   the Unix epoch, zone-less = UTC; integers; finite numbers; plausible
   timestamps 1990..2100; one module, :mod:`ettcore.trace.typing`, writes the
   typing SQL of both engines), and ``clean_<table>``: the typed rows of the jobs
   the checks kept.  ``ett_params`` (as-of and cut-off) and ``ett_phases`` (the
   phase map) are copied from the DuckDB trace.
3. A fingerprint of each ``clean_<table>`` (row and job counts, sums of the
   parsed times modulo a prime, of the cursors, of text lengths) is computed on
   both engines and must agree; otherwise the two engines parsed the input
   differently and a :class:`InputError` says so instead of giving different
   numbers.
4. The metric queries of ``ettcore/sql/metric/`` are translated to Spark SQL
   (:mod:`ettcore.engines.spark.transpile`) and run unchanged in meaning, under the
   same view names: ``metric_jobs``, ``metric_attempts``, ``metric_spans``,
   ``attributed_time`` and ``job_metrics`` (all but ``metric_spans`` computed once and kept, their lineage cut:
   ``localCheckpoint``), then ``job_summary``,
   ``group_summary``, ``fleet_trend``...

Results come back as Polars frames with the DuckDB frames' columns and types
(timestamps as zone-less UTC), so callers cannot tell the engines apart.

A trace given as a **URI** (``s3a://``, ``hdfs://``, ``gs://``, ``abfss://``,
``file:///``...) cannot be read by DuckDB: :mod:`ettcore.engines.spark.load`
then does steps 1 and 2 on Spark alone (discovery through Hadoop's FileSystem
API, the same data checks translated to Spark SQL, as-of, accounting) for a
Parquet trace, with no fingerprint (there is no DuckDB side), and the same
step 4.  Reading an object store needs its Hadoop connector on Spark's
classpath and its credentials, both set in the Spark configuration (``conf``
of :func:`get_session`, ``spark-defaults.conf``, or ``PYSPARK_SUBMIT_ARGS``).

Temp views live in the Spark session: one trace is active per session at a
time; using a :class:`SparkTrace` after another trace was opened in the same
session registers its views again.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import shutil
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import polars as pl

from ettcore.engines.spark.transpile import duckdb_to_spark, spark_sql
from ettcore.errors import InputError, Problem
from ettcore.metric import check_by, group_columns
from ettcore.trace import typing as rules
from ettcore.trace.instants import DAY_MS
from ettcore.trace.load import SCHEMA, TABLES, Trace, discover, schema_columns
from ettcore.trace.window import EXCLUSION_COLUMNS, Window, check_labels, exclusion_rows, match_conditions
from ettcore.vocabulary import CAUSE_TABLE_COLUMNS, VOCABULARY, Vocabulary

if TYPE_CHECKING:  # pyspark is optional: imported only when Spark is used
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_MASTER = "local[*]"
# pyspark checks the pandas version when converting results and warns about pandas 3; the metric never uses pandas
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
_PRIME = 1_000_000_007  # fingerprint sums of millisecond times are taken modulo this, so they never overflow


# ----------------------------------------------------------------------------- session


def java_available() -> bool:
    """True when a ``java`` executable is found (``JAVA_HOME/bin/java`` or on ``PATH``)."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return True
    return shutil.which("java") is not None


def spark_available() -> bool:
    """True when both pyspark and Java are present (what the Spark engine and its tests need)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return java_available()


def connect_available() -> bool:
    """True when the Spark Connect client can run: pyspark with its ``connect`` extra (grpcio, zstandard...); no Java
    is needed on this side, the server runs Spark."""
    try:
        import pyspark.sql.connect.session  # noqa: F401  (checks the client's packages as it is imported)
    except Exception:  # ImportError, or pyspark's own error naming the missing package
        return False
    return True


def is_connect(master: str) -> bool:
    """True for a Spark Connect server's URL (``sc://host:port``): the session is a remote client, not a JVM here."""
    return master.startswith("sc://")


def master_endpoints(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs a ``spark://`` master (several when it has standby masters: ``spark://h1:7077,h2:7077``)
    or a Spark Connect URL (``sc://host:port/;param=value``; port 15002 when left out) is reached at; none for
    other masters (``local[...]``, ``yarn``, ``k8s://...``), which Spark itself reaches."""
    if master.startswith("spark://"):
        hosts, default = master[len("spark://") :].split("/", 1)[0].split(","), 7077
    elif is_connect(master):
        hosts, default = [master[len("sc://") :].split("/", 1)[0]], 15002
    else:
        return []
    out = []
    for h in (h.strip() for h in hosts):
        host, sep, port = h.rpartition(":") if not h.endswith("]") else (h, "", "")  # [::1] alone: no port
        if not sep:
            host, port = h, ""
        if not port.isdigit() and port:
            raise InputError(Problem("--spark-master", None, "spark_master", f"{master}: {port!r} is not a port"))
        out.append((host.strip("[]"), int(port) if port else default))
    return out


def check_reachable(master: str, timeout_s: float = 10.0) -> None:
    """Refuse, in one line naming it, a ``spark://`` master or Spark Connect server that does not accept a connection
    (Spark would otherwise retry for a minute, then fail or wait without a word)."""
    import socket

    endpoints = master_endpoints(master)
    why = ""
    for host, port in endpoints:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            return
        except OSError as exc:
            why = exc.strerror or str(exc) or type(exc).__name__
    if endpoints:
        kind = "Spark Connect server" if is_connect(master) else "Spark master"
        raise InputError(Problem("--spark-master", None, "spark_master", f"cannot reach the {kind} {master}: {why}"))


# The sessions get_session started, by the master asked for: a session is reused only for the same master.
_SESSIONS: dict[str, "SparkSession"] = {}


def master_of(spark: "SparkSession") -> str:
    """The master ``spark`` was asked for in :func:`get_session` (what ``--spark-master`` names; through Spark Connect
    the ``sc://`` URL), else the classic session's own."""
    for master, s in _SESSIONS.items():
        if s is spark:
            return master
    return spark.sparkContext.master


def _running(master: str) -> "SparkSession | None":
    """The session this process already holds for ``master``, if it still runs."""
    spark = _SESSIONS.get(master)
    if spark is None:
        return None
    if is_connect(master):
        stopped = spark.is_stopped
    else:
        from pyspark import SparkContext

        stopped = SparkContext._active_spark_context is None or spark.sparkContext._jsc is None
    if stopped:
        del _SESSIONS[master]
        return None
    return spark


def _classic_in_the_way(master: str) -> None:
    """One process holds one classic Spark session (one SparkContext): stop ours if it runs on another master; refuse
    to stop one started elsewhere (its owner still uses it)."""
    from pyspark import SparkContext

    active = SparkContext._active_spark_context
    if active is None or active.master == master:
        return
    ours = [m for m, s in _SESSIONS.items() if not is_connect(m) and s.sparkContext is active]
    if not ours:
        raise InputError(
            Problem(
                "--spark-master",
                None,
                "spark_master",
                f"this process already runs a Spark session on {active.master}, started elsewhere; stop it "
                f"(spark.stop()) to use {master}",
            )
        )
    _SESSIONS.pop(ours[0]).stop()


def _columns_for(connect: bool) -> None:
    """Make pyspark build columns (``pyspark.sql.functions``, parameters bound in ``spark.sql``) for the kind of
    session asked for.  pyspark decides by one process-wide mark (``SPARK_CONNECT_MODE_ENABLED``, set when a Connect
    session is built) and a classic session refuses Connect columns, so a process that holds both kinds (the tests)
    works with the one last asked for from here."""
    if connect:
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    else:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def get_session(master: str = DEFAULT_MASTER, conf: dict[str, str] | None = None) -> "SparkSession":
    """A Spark session for the metric on ``master``: ``local[...]`` (Spark in this process), ``spark://host:7077`` (a
    standalone cluster), ``yarn``, ``k8s://...``, or ``sc://host:15002`` (a Spark Connect server, reached as a
    client: no Java needed here).

    A session this function started for the same master is reused; one for another master never is.  A process may
    hold a classic session and Connect sessions at once; pyspark builds columns for the kind last asked for here.
    One process holds one classic (non-Connect) session: asking for another master stops the one this function
    started (a session started elsewhere is left alone, and the request refused).  A ``spark://`` master or Connect
    server that cannot be reached is refused at once, naming it.

    The session time zone is UTC (the trace format's zone-less times are UTC).
    In local mode the shuffle uses few partitions (``spark.sql.shuffle.partitions``,
    default 8; adaptive execution coalesces further), the web UI is off and the driver listens on 127.0.0.1 only.
    ``conf`` adds or overrides any Spark setting (e.g. executor memory on a cluster); through Spark Connect only the
    settings a session may change (the server's own are set where it starts), others are refused.
    """
    connect = is_connect(master)
    if not (connect_available() if connect else spark_available()):
        need = (
            "the Spark Connect client needs pyspark with its connect extra (pip install 'pyspark[connect]')"
            if connect
            else "the Spark engine needs pyspark (pip install pyspark) and Java 17+ (java on PATH or JAVA_HOME)"
        )
        raise InputError(Problem("--engine", None, "engine", need))
    settings = {"spark.sql.session.timeZone": "UTC", **(conf or {})}
    _columns_for(connect)
    running = _running(master)
    if running is not None:
        # the metric needs UTC; other settings are applied where Spark allows it at run time
        for k, v in settings.items():
            if running.conf.isModifiable(k):
                running.conf.set(k, v)
        return running
    check_reachable(master)
    from pyspark.sql import SparkSession

    if connect:
        spark = SparkSession.builder.remote(master).create()  # a session of its own, never another URL's
        for k, v in settings.items():
            if not spark.conf.isModifiable(k):
                spark.stop()
                why = "is the Spark Connect server's own setting: set it where the server starts"
                raise InputError(Problem("spark_conf", None, k, f"{k} {why}"))
            spark.conf.set(k, v)
        _SESSIONS[master] = spark
        return spark
    _classic_in_the_way(master)
    builder = SparkSession.builder.master(master).appName("ettcore").config("spark.ui.showConsoleProgress", "false")
    if master.startswith("local"):
        # Spark in this process: nothing to serve to other machines (the driver's ports on the loopback interface)
        builder = builder.config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "8")
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _SESSIONS[master] = spark
    return spark


# ----------------------------------------------------------------------------- input errors

# Spark error conditions that mean the input cannot be read (missing, changed or malformed files).
_INPUT_ERRORS = (
    "FAILED_READ_FILE",
    "PATH_NOT_FOUND",
    "MALFORMED_RECORD",
    "MALFORMED_CSV_RECORD",
    "CANNOT_READ_FILE_FOOTER",
    "UNABLE_TO_INFER_SCHEMA",
    "FileNotFoundException",
)


# What Spark says when a job of the query failed on the cluster (a worker or executor lost more often than the tasks'
# retries allow, the application killed): the answer is not given, never a part of it
_JOB_FAILURES = ("Job aborted", "SparkContext was shut down", "Job cancelled", "cancelled because SparkContext")


def job_failure(exc: BaseException, where: str) -> InputError | None:
    """The one line of a Spark job that failed on the cluster (``where``: the input), or None where ``exc`` is not
    one (a bug keeps its traceback)."""
    if not type(exc).__module__.startswith(("pyspark", "py4j")):
        return None
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = next((line for line in lines if any(k in line for k in _JOB_FAILURES)), None)
    if first is None:
        return None
    first = first.split("SparkException: ", 1)[-1]
    why = f"the Spark job failed on the cluster, no answer given: {first[:300]} (the cluster's logs say more)"
    return InputError(Problem(where, None, None, why))


@contextmanager
def input_errors(path: str | Path) -> Iterator[None]:
    """Turn Spark's "cannot read this input" errors into a :class:`InputError` naming the trace; others pass through."""
    try:
        yield
    except Exception as exc:  # pyspark raises PySparkException subclasses or py4j's Py4JJavaError
        text = str(exc)
        if type(exc).__module__.startswith(("pyspark", "py4j")) and any(code in text for code in _INPUT_ERRORS):
            first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
            raise InputError(Problem(str(path), None, None, f"Spark cannot read the trace: {first[:300]}")) from None
        raise


# ----------------------------------------------------------------------------- raw and typed layers


def _q(name: str) -> str:
    """Quote a Spark identifier that came from the data's own schema."""
    return "`" + name.replace("`", "``") + "`"


def refuse_glob_paths(paths: list[str]) -> None:
    """Spark reads a path as a glob pattern: a file or folder named with one of its characters is refused, clearly."""
    bad = [p for p in paths if set(p) & set("*?[]{}\\")]
    if bad:
        raise InputError(
            Problem(
                bad[0],
                None,
                None,
                "the Spark engine reads paths as glob patterns: rename the file or folder (no * ? [ ] { } \\)",
            )
        )


def read_raw(spark: "SparkSession", table: str, kind: str, files: list[Path] | list[str]) -> "DataFrame":
    """Read one table's files (local paths or URIs) as Spark reads them, with ``_file`` (and ``_row`` for Parquet).

    ``_file`` is Spark's ``_metadata.file_path`` (the file's URI) and ``_row``
    the 1-based row within that file (``_metadata.row_index + 1``), as the
    DuckDB loader numbers Parquet rows.  Written as SQL expressions, not ``pyspark.sql.functions``: those build
    Spark Connect columns in a process that has opened a Connect session, which a classic session then refuses.
    """
    # a local path absolute: a Spark Connect server (or a cluster's driver) has a working folder of its own
    paths = [os.path.abspath(f) if isinstance(f, Path) else str(f) for f in files]
    refuse_glob_paths(paths)
    if kind == "parquet":
        df = spark.read.option("mergeSchema", "true").parquet(*paths)
        row = "_metadata.row_index + 1"
    elif kind == "csv":
        df = spark.read.options(header=True, inferSchema=False, escape='"', multiLine=True, mode="FAILFAST").csv(paths)
        row = "CAST(NULL AS BIGINT)"
    elif kind == "jsonl":
        df = spark.read.options(primitivesAsString=True, mode="FAILFAST").json(paths)
        row = "CAST(NULL AS BIGINT)"
    else:
        raise InputError(
            Problem(
                paths[0],
                None,
                None,
                "the Spark engine reads Parquet, CSV or JSONL traces, not DuckDB database files; "
                "export the tables to Parquet",
            )
        )
    return df.selectExpr("*", "_metadata.file_path AS _file", f"{row} AS _row")


def spark_source(dtype: Any | None) -> str:
    """The class (:data:`ettcore.trace.typing.SOURCES`) of a column of Spark type ``dtype`` (None: absent)."""
    from pyspark.sql import types as T

    if dtype is None:
        return rules.ABSENT
    if isinstance(dtype, T.StringType):
        return rules.TEXT
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType)):
        return rules.SMALL_INT
    if isinstance(dtype, T.LongType):
        return rules.BIG_INT
    if isinstance(dtype, (T.FloatType, T.DoubleType, T.DecimalType)):
        return rules.NUMERIC
    if isinstance(dtype, T.TimestampType):  # an instant (Spark's TIMESTAMP is DuckDB's TIMESTAMPTZ)
        return rules.ZONED_TIMESTAMP
    if isinstance(dtype, (T.TimestampNTZType, T.DateType)):
        return rules.TIMESTAMP
    return rules.OTHER


def typed_select(table: str, schema: Any | None, labels: list[str]) -> str:
    """The ``typed_<table>`` query over ``raw_<table>`` (``schema`` None: the table is absent)."""
    types = {f.name: f.dataType for f in schema.fields} if schema is not None else {}
    held = schema_columns(table, list(types))  # names compared without case, as the DuckDB loader does
    parts = (
        ["_file", "_row"] if schema is not None else ["CAST(NULL AS STRING) AS _file", "CAST(NULL AS BIGINT) AS _row"]
    )
    for col, kind in SCHEMA[table]:
        source = spark_source(types.get(held.get(col, "")))
        expr, raw = rules.typed_field(held.get(col, col), kind, source, rules.SPARK, _q)
        parts.append(f"{expr} AS {_q(rules.typed_name(col, kind))}")
        if kind != "str":
            parts.append(f"{raw} AS {_q(col + '_raw')}")
    for label in labels:
        if label not in types:
            raise InputError(Problem(f"{table} table", None, label, "label column seen by DuckDB but not by Spark"))
        parts.append(_q(label))
    src = f"raw_{table}" if schema is not None else "(SELECT 1 AS one) AS empty WHERE false"
    return f"SELECT {', '.join(parts)} FROM {src}"


# ----------------------------------------------------------------------------- fingerprints

# One query for the three clean tables, written for DuckDB and translated for Spark like the metric's queries.
FINGERPRINT_SQL = f"""
WITH j AS (
    SELECT count(*) AS jobs_n, count(DISTINCT job_id) AS jobs_ids, sum(gpus) AS jobs_gpus,
           sum(length(model)) AS jobs_model_chars
    FROM clean_jobs
),
a AS (
    SELECT count(*) AS attempts_n, count(DISTINCT job_id) AS attempts_jobs, sum(attempt) AS attempts_numbers,
           sum(start_ms % {_PRIME}) AS attempts_start_mod, count(end_ms) AS attempts_ends,
           sum(end_ms % {_PRIME}) AS attempts_end_mod, sum(length(end_reason)) AS attempts_reason_chars
    FROM clean_attempts
),
s AS (
    SELECT count(*) AS spans_n, count(DISTINCT job_id) AS spans_jobs, sum(attempt) AS spans_attempts,
           sum(start_ms % {_PRIME}) AS spans_start_mod, sum(end_ms % {_PRIME}) AS spans_end_mod,
           sum(length(phase)) AS spans_phase_chars, count(cursor_start) AS spans_cursors,
           sum(cursor_start) AS spans_cursor_start_sum, sum(cursor_end) AS spans_cursor_end_sum
    FROM clean_spans
)
SELECT * FROM j CROSS JOIN a CROSS JOIN s
"""


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return int(a) == int(b)


def fingerprint_differences(st: "SparkTrace") -> list[Problem]:
    """Where Spark's ``clean_*`` tables differ from DuckDB's: one Problem a differing figure (none: they agree).

    The figures (row and job counts; sums of attempt numbers, of start and end
    times modulo a prime, of cursors, of text lengths) catch a row one engine
    keeps and the other drops, and a time or number the two parse differently.
    """
    ours = st.spark.sql(duckdb_to_spark(FINGERPRINT_SQL)).collect()[0].asDict()
    theirs = st.trace.con.sql(FINGERPRINT_SQL).pl().row(0, named=True)
    problems = []
    for key, value in theirs.items():
        if not _same(value, ours[key]):
            table = key.split("_", 1)[0]
            problems.append(
                Problem(
                    str(st.trace.path),
                    None,
                    key,
                    f"Spark reads table '{table}' differently from DuckDB ({key}: {ours[key]} vs {value})",
                    table=table,
                )
            )
    return problems


# ----------------------------------------------------------------------------- the trace on Spark

_ids = itertools.count(1)
_ACTIVE = "_ett_active_trace"  # attribute set on a SparkSession: ident of the SparkTrace whose views are registered


@dataclass
class SparkTrace:
    """A trace whose metric runs on ``spark``.

    Here ``trace`` is a :class:`~ettcore.trace.Trace` checked by DuckDB; a trace read
    from a URI and checked by Spark alone is a
    :class:`~ettcore.engines.spark.load.UriSparkTrace` (same functions, other inputs).
    """

    spark: "SparkSession"
    trace: Any
    verify: bool = True
    grid_ms: int = DAY_MS  # the attribution's regular cut (an hour once an hourly trend was asked for)
    ident: int = field(default_factory=lambda: next(_ids))
    # how the metric's kept views are held: "checkpoint" (computed once when the trace is opened, in the executors'
    # memory, their lineage cut: a later query plans over the stored rows, not over the chain of views below them) or
    # "persist" (cached at their first use; each query still analyses the whole chain), which
    # benchmarks/spark_views.py compares
    keep: str = "checkpoint"
    _cached: list = field(default_factory=list, repr=False)
    _kept: dict = field(default_factory=dict, repr=False)  # a view defined with keep -> its query, while registered

    @property
    def synthetic(self) -> bool:
        return self.trace.synthetic

    def register_inputs(self) -> None:
        """(Re-)register the views the metric reads: ``clean_*``, ``ett_params``, ``ett_phases`` (and below them)."""
        _register_from_duckdb(self)

    def sql(self, query: str, args: dict | None = None) -> pl.DataFrame:
        """Run a Spark SQL query on this trace's views (parameters bound, never pasted) into Polars."""
        with input_errors(self.trace.path):
            _ensure_registered(self)
            return to_polars(self.spark.sql(query, args=args) if args else self.spark.sql(query))

    # the engine interface of ettcore.metric (ettcore.metric.Engine): the metric's functions run on it unchanged

    def prepare(self, grid_ms: int | None = None, per_job: bool = False) -> None:
        """Every view is registered when the trace is opened (the per-job one included); a finer grid (an hourly
        trend) attributes again, as the DuckDB engine does."""
        if grid_ms is not None and grid_ms < self.grid_ms:
            self.grid_ms = grid_ms
            with input_errors(self.trace.path):
                register_trace(self)

    def per_job(self) -> pl.DataFrame:
        return self.sql("SELECT * FROM job_metrics ORDER BY job_id")

    def per_job_components(self) -> pl.DataFrame:
        return self.sql("SELECT * FROM job_component_time")

    def run(self, name: str, params: dict | None = None) -> pl.DataFrame:
        return self.sql(spark_sql(name), params)

    def set_groups(self, by: str | None) -> None:
        if by is None:
            expr = "'fleet'"
        else:
            check_by(self.trace, by)
            expr = f"CAST({_q(by)} AS STRING)"
        _ensure_registered(self)
        self.spark.sql(f"SELECT job_id, {expr} AS group_key FROM metric_jobs").createOrReplaceTempView("job_groups")

    def define(self, view: str, name: str, keep: bool = False) -> None:
        """``keep``: the view's rows are computed once (as the kept metric views, ``self.keep``) and reused until the
        trace's views are registered again; a kept view defined again from the same query is left as it is."""
        _ensure_registered(self)
        if keep and self._kept.get(view) == name:
            return
        self._kept.pop(view, None)
        with input_errors(self.trace.path):
            df = self.spark.sql(spark_sql(name))
            if keep:
                df = _kept(self, df)
                self._kept[view] = name
            df.createOrReplaceTempView(view)

    def define_values(self, view: str, values: dict[str, float]) -> None:
        _ensure_registered(self)
        schema = ", ".join(f"{_q(k)} double" for k in values)
        self.spark.createDataFrame([tuple(float(v) for v in values.values())], schema).createOrReplaceTempView(view)

    def __getattr__(self, name: str) -> Any:
        """What the trace says of itself (window, accounting, labels, metadata, ...) is the checked trace's."""
        if name.startswith("__") or name in ("spark", "trace"):
            raise AttributeError(name)
        return getattr(self.trace, name)


def to_polars(df: "DataFrame") -> pl.DataFrame:
    """A Spark result as the Polars frame DuckDB would give: zone-aware timestamps become zone-less UTC."""
    out = pl.from_arrow(df.toArrow())
    assert isinstance(out, pl.DataFrame)
    fixes = []
    for name, dtype in out.schema.items():
        if isinstance(dtype, pl.Datetime) and dtype.time_zone is not None:
            fixes.append(pl.col(name).dt.convert_time_zone("UTC").dt.replace_time_zone(None))
        elif isinstance(dtype, pl.Decimal):
            fixes.append(pl.col(name).cast(pl.Float64))
    return out.with_columns(fixes) if fixes else out


def open_trace(trace: Trace, spark: "SparkSession", verify: bool = True) -> SparkTrace:
    """Put a DuckDB-checked trace onto Spark (see the module docstring); views are registered now."""
    st = SparkTrace(spark=spark, trace=trace, verify=verify)
    with input_errors(trace.path):
        register_trace(st)
    return st


def _ensure_registered(st: SparkTrace) -> None:
    if getattr(st.spark, _ACTIVE, None) != st.ident:
        register_trace(st)


def register_trace(st: SparkTrace) -> None:
    """Register every view of ``st`` in its session (inputs, then the metric's views) and mark it active."""
    for df in st._cached:
        df.unpersist()
    st._cached.clear()
    st._kept.clear()
    st.register_inputs()
    register_metric_views(st)
    setattr(st.spark, _ACTIVE, st.ident)


def forget_active(spark: "SparkSession") -> None:
    """Mark that no :class:`SparkTrace` owns the session's views any more (a loader is about to replace them)."""
    setattr(spark, _ACTIVE, None)


def _register_from_duckdb(st: SparkTrace) -> None:
    """``raw_*``, ``typed_*``, ``clean_*``, ``ett_params``, ``ett_phases`` of a DuckDB-checked trace;
    then the fingerprint."""
    spark, trace = st.spark, st.trace
    sources = {s.table: s for s in discover(Path(trace.path))}
    for table in TABLES:
        src = sources.get(table)
        schema = None
        if src is not None:
            raw = read_raw(spark, table, src.kind, src.files)
            raw.createOrReplaceTempView(f"raw_{table}")
            schema = raw.schema
        register_typed(spark, table, schema, trace.labels if table == "jobs" else [])
    register_clean(spark, trace.excluded_jobs)
    as_of_ms, cut_ms = trace.con.execute("SELECT as_of_ms, cut_ms FROM ett_params").fetchall()[0]
    register_params(spark, as_of_ms, cut_ms)
    register_phases(spark, trace.phase_map, trace.vocabulary)
    if st.verify:
        problems = fingerprint_differences(st)
        if problems:
            raise InputError(problems)


def register_typed(spark: "SparkSession", table: str, schema: Any | None, labels: list[str]) -> None:
    """``typed_<table>`` over ``raw_<table>`` (``schema`` None: the table is absent, the view is empty)."""
    spark.sql(typed_select(table, schema, labels)).createOrReplaceTempView(f"typed_{table}")


def register_clean(spark: "SparkSession", excluded_jobs: list[str]) -> None:
    """``ett_excluded_jobs`` and ``clean_<table>``: the typed rows with a job_id, of jobs not left out."""
    excluded = spark.createDataFrame([(j,) for j in excluded_jobs], "job_id string")
    excluded.createOrReplaceTempView("ett_excluded_jobs")
    for table in TABLES:
        spark.sql(
            f"SELECT t.* FROM typed_{table} AS t LEFT ANTI JOIN ett_excluded_jobs AS x ON x.job_id = t.job_id "
            "WHERE t.job_id IS NOT NULL"
        ).createOrReplaceTempView(f"clean_{table}")


def register_params(spark: "SparkSession", as_of_ms: int | None, cut_ms: int | None) -> None:
    """``ett_params``: the as-of time (clips running work) and the cut-off (exclusive bound on starts)."""
    spark.createDataFrame([(as_of_ms, cut_ms)], "as_of_ms bigint, cut_ms bigint").createOrReplaceTempView("ett_params")


def register_phases(spark: "SparkSession", phase_map: Any, vocabulary: Vocabulary = VOCABULARY) -> None:
    """``ett_phases``: the phase map (defaults plus any mapping file), and ``ett_causes`` (the causes of
    ``vocabulary``: the package's, with a user's causes file's), as the DuckDB loader's tables."""
    phases = [(int(i), p, c, o, p == "train") for i, p, c, o in phase_map.rows()]
    spark.createDataFrame(
        phases, "phase_id bigint, phase string, component string, owner string, is_train boolean"
    ).createOrReplaceTempView("ett_phases")
    spark.createDataFrame(list(vocabulary.cause_rows), spark_schema(CAUSE_TABLE_COLUMNS)).createOrReplaceTempView(
        "ett_causes"
    )


def spark_schema(columns: str) -> str:
    """A DuckDB column list (``cause_id BIGINT, cause VARCHAR``) as Spark's schema text (``bigint``, ``string``)."""
    return columns.replace("BIGINT", "bigint").replace("VARCHAR", "string")


def register_window(spark: "SparkSession", window: Window, grid_ms: int) -> None:
    """``ett_window``, ``ett_exclusions`` and ``ett_grid``: the measured part of time and the attribution's grid."""
    spark.createDataFrame(
        [(window.since_ms, window.until_ms)], "since_ms bigint, until_ms bigint"
    ).createOrReplaceTempView("ett_window")
    spark.createDataFrame(exclusion_rows(window), spark_schema(EXCLUSION_COLUMNS)).createOrReplaceTempView(
        "ett_exclusions"
    )
    spark.createDataFrame([(grid_ms,)], "grid_ms bigint").createOrReplaceTempView("ett_grid")


def register_exclusion_jobs(st: SparkTrace) -> None:
    """``ett_exclusion_jobs``: for each exclusion, the keys of the jobs it applies to (label columns checked,
    values bound)."""
    window = st.trace.window
    check_labels(window, group_columns(st.trace))
    parts = []
    for i, x in enumerate(window.exclusions):
        where, params = match_conditions(x, _q, "STRING", lambda n: f":{n}")
        parts.append(
            st.spark.sql(
                f"SELECT CAST(:id AS BIGINT) AS exclusion_id, job_key FROM metric_jobs WHERE {where}",
                args={"id": i, **params},
            )
        )
    df = (
        functools.reduce(lambda a, b: a.unionAll(b), parts)
        if parts
        else st.spark.createDataFrame([], "exclusion_id bigint, job_key bigint")
    )
    df.createOrReplaceTempView("ett_exclusion_jobs")


def _kept(st: SparkTrace, df: "DataFrame") -> "DataFrame":
    """``df`` kept as ``st.keep`` says (its rows computed now and its lineage cut, or cached at first use), and
    released when the trace's views are registered again."""
    df = df.localCheckpoint(eager=True) if st.keep == "checkpoint" else df.persist()
    st._cached.append(df)
    return df


def register_metric_views(st: SparkTrace) -> None:
    """The metric's shared views over ``clean_*``, translated from ``ettcore/sql/metric/``."""
    register_window(st.spark, st.trace.window, st.grid_ms)
    # kept views (a row a job, attempt or job and component; the per-instant attribution): materialized once, as
    # chosen by st.keep (see SparkTrace); metric_spans and the other intermediate views are read once, not kept
    for view, name, keep in (
        ("metric_jobs", "metric/metric_jobs", True),
        ("metric_attempts", "metric/metric_attempts", True),
        ("unmeasured_time", "metric/unmeasured_time", True),
        ("analysis_cuts", "metric/analysis_cuts", False),
        ("keyed_spans", "metric/keyed_spans", False),
        ("metric_spans", "metric/metric_spans", False),
        ("attributed_segments", "metric/attributed_segments", False),
        ("attributed_time", "metric/attributed_time", True),
        ("measured_time", "metric/measured_time", False),
        ("measured_interruptions", "metric/measured_interruptions", False),
        ("fleet_slots", "metric/fleet_slots", False),
        ("interruption_slots", "metric/interruption_slots", False),
        ("job_metrics", "metric/job_summary", True),
        ("job_component_time", "metric/job_component_time", True),
        ("job_cause_time", "metric/job_cause_time", True),
    ):
        if view == "unmeasured_time":
            register_exclusion_jobs(st)
        df = st.spark.sql(spark_sql(name))
        if keep:
            df = _kept(st, df)
        df.createOrReplaceTempView(view)
        if view == "metric_jobs":  # the job key is a 64-bit hash (xxhash64 here): two ids on one key are refused
            dup = st.spark.sql(
                "SELECT min(job_id), max(job_id) FROM metric_jobs GROUP BY job_key HAVING count(*) > 1 LIMIT 1"
            ).collect()
            if dup:
                raise InputError(
                    Problem(
                        str(st.trace.path),
                        None,
                        "job_id",
                        f"job ids {dup[0][0]!r} and {dup[0][1]!r} have the same 64-bit job key (hash); "
                        "rename one of them",
                    )
                )
