"""A fleet store's Parquet mirror read by Spark: the store's figures, beyond one machine.

The mirror's layout and pointer are :mod:`ettcore.engines.mirror_format`'s.  A reader takes the pointer
(``CURRENT.json``) once and reads only the folders it names, so a folder written after it, or half written, is never
read: Spark sees the last committed refresh that was published, never part of one.  Of those rows it keeps the
current version of each job (source, ``job_id``): its rows of the highest ingest id, less the rows of a source removed
after them.  With more than one source, job ids read ``source/job_id`` and ``source`` is a label, as
:func:`ettcore.store.open_store` reads the store.  The current rows are counted and checked against the pointer's
counts, so a folder changed or removed since is an error, not other figures.

On the current rows the metric runs as for any trace on Spark (:mod:`ettcore.engines.spark`): the same translated
queries of ``ettcore/sql/metric/``, with the store's analysis time as the default as-of.  The rows were checked when
they were ingested; no check runs again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ettcore.engines import spark as sp
from ettcore.engines.mirror_format import POINTER, ROW_TABLES, check_pointer, folder_name
from ettcore.engines.spark import load as spark_load
from ettcore.errors import InputError, Problem
from ettcore.phases import load_phase_map
from ettcore.trace import typing as rules
from ettcore.trace.load import SCHEMA, CheckedTrace, is_uri, parse_as_of
from ettcore.trace.options import TraceOptions
from ettcore.trace.window import make_window
from ettcore.vocabulary import VOCABULARY, kept_vocabulary

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# a DuckDB type of the store's rows -> the Spark type of a column no folder holds (added to the store by a refresh that
# published no row of the table, or holding only NULL)
_SPARK_TYPES = {
    "VARCHAR": "string",
    "BIGINT": "bigint",
    "INTEGER": "int",
    "SMALLINT": "smallint",
    "TINYINT": "tinyint",
    "DOUBLE": "double",
    "FLOAT": "float",
    "BOOLEAN": "boolean",
    "DATE": "date",
    "TIMESTAMP": "timestamp_ntz",
    "TIMESTAMP WITH TIME ZONE": "timestamp",
}
_KIND_TYPES = {"int": "bigint", "num": "double", "ts": "bigint", "str": "string"}  # the loader's typed columns


def is_mirror_uri(spark: "SparkSession", uri: str) -> bool:
    """True when the folder at ``uri`` holds a mirror's pointer (as Spark lists it:
    :mod:`ettcore.engines.spark.files`)."""
    fs, root = spark_load._filesystem(spark, uri)
    try:
        return fs.kind(f"{root}/{POINTER}") == "file"
    except Exception as exc:  # py4j: a folder Spark cannot list is not told a mirror; the trace loader says why
        if not type(exc).__module__.startswith(("py4j", "pyspark")):
            raise
        return False


def spark_type(name: str, duckdb_type: str, table: str) -> str:
    """The Spark type a column of the store's ``rows_<table>`` reads as when no folder holds it."""
    if duckdb_type in _SPARK_TYPES:
        return _SPARK_TYPES[duckdb_type]
    for col, kind in SCHEMA[table]:  # a column DuckDB typed NULL (no value anywhere): the loader's own type
        if name.lower() == rules.typed_name(col, kind).lower():
            return _KIND_TYPES[kind]
    return "string"


# ----------------------------------------------------------------------------- the trace


@dataclass
class MirrorTrace(CheckedTrace):
    """What the ``ett`` command reads of a trace, for a store's Parquet mirror read by Spark (``path``: the folder
    or URI given); ``pointer`` is the mirror's ``CURRENT.json`` as read."""

    pointer: dict = field(default_factory=dict)
    sources_n: int = 1
    # each source's horizon (epoch ms; the pointer's ``horizons``), where each source's running jobs are measured to
    # its own: several sources read without --as-of; empty where one analysis time holds for every job
    horizons: dict[str, int] = field(default_factory=dict)


@dataclass
class MirrorSparkTrace(sp.SparkTrace):
    """A :class:`~ettcore.engines.spark.SparkTrace` over the current rows of a store's Parquet mirror."""

    current: dict = field(default_factory=dict, repr=False)  # table -> its current rows, "versions" (DataFrames)
    cut_ms: int | None = None

    def register_inputs(self) -> None:
        register_current(self.spark, self.current, self.trace.sources_n > 1, self.trace.horizons)
        sp.register_clean(self.spark, [])
        sp.register_params(self.spark, self.trace.as_of_ms, self.cut_ms)
        sp.register_phases(self.spark, self.trace.phase_map, self.trace.vocabulary)


def _location(path: Any) -> str:
    """The URI Spark reads: a URI as given, a local folder as ``file://`` and its absolute path (not encoded, as
    Hadoop takes it)."""
    return str(path) if is_uri(path) else "file://" + str(Path(str(path)).resolve())


def read_pointer(spark: "SparkSession", uri: str) -> dict:
    """The mirror's pointer at ``uri``, checked (:func:`check_pointer`)."""
    root = uri.rstrip("/")
    fs, qualified = spark_load._filesystem(spark, root)
    pointer = f"{qualified}/{POINTER}"
    if fs.kind(pointer) != "file":
        raise InputError(
            Problem(
                uri,
                None,
                None,
                f"not a Parquet mirror of a store (no {POINTER}); publish one with: ett store publish STORE DIR",
            )
        )
    return check_pointer(spark_load.read_metadata(spark, pointer), f"{root}/{POINTER}")


def _read_table(spark: "SparkSession", root: str, doc: dict, table: str) -> "DataFrame":
    """Every named folder's rows of ``table``, with the pointer's columns in its order (one a file lacks is NULL).
    A folder published before the store kept ``table`` (``rank_timing``) has no file of it: the pointer's ``files``
    name those it has."""
    columns = list(doc["columns"][table].items())
    named = doc.get("files") or {}
    files = [
        f"{root}/{folder_name(n)}/{table}.parquet"
        for n in doc["folders"]
        if not named or f"{folder_name(n)}/{table}.parquet" in named
    ]
    sp.refuse_glob_paths(files)
    if not files:
        schema = ", ".join(f"{sp._q(c)} {spark_type(c, t, table)}" for c, t in columns)
        return spark.createDataFrame([], schema)
    df = spark.read.option("mergeSchema", "true").parquet(*files)
    have = {c.lower(): c for c in df.columns}
    # SQL expressions, not pyspark.sql.functions (see ettcore.engines.spark.read_raw)
    return df.selectExpr(
        *[
            f"{sp._q(have[c.lower()])} AS {sp._q(c)}"
            if c.lower() in have
            else f"CAST(NULL AS {spark_type(c, t, table)}) AS {sp._q(c)}"
            for c, t in columns
        ]
    )


_VERSIONS = """
WITH ids AS (
    SELECT source, job_id, ingest_id FROM ett_mirror_jobs
    UNION ALL SELECT source, job_id, ingest_id FROM ett_mirror_attempts
    UNION ALL SELECT source, job_id, ingest_id FROM ett_mirror_spans
),
kept AS (
    SELECT i.* FROM ids AS i
    LEFT ANTI JOIN ett_mirror_removals AS r ON r.source = i.source AND r.removal_id > i.ingest_id
)
SELECT source, job_id, max(ingest_id) AS ingest_id FROM kept GROUP BY source, job_id
"""


def current_rows(spark: "SparkSession", root: str, doc: dict) -> dict:
    """Per table, the current rows of the mirror at ``root``: each job's rows of its highest ingest id, less the
    sources removed after it (see the module docstring); and under ``versions`` each job's current ingest id (one row
    a job, kept in memory)."""
    # (a table the pointer has no columns of, published from a store made before it kept it, is left out: no rows)
    rows = {table: _read_table(spark, root, doc, table) for table in ROW_TABLES if table in doc["columns"]}
    for table, df in rows.items():
        df.createOrReplaceTempView(f"ett_mirror_{table}")
    removals = [(str(r["source"]), int(r["id"])) for r in doc["removals"]]
    spark.createDataFrame(removals, "source string, removal_id bigint").createOrReplaceTempView("ett_mirror_removals")
    # computed now and kept (a checkpoint, not a query over the views' names: through Spark Connect a query names its
    # views and reads whatever they are when it runs, and another mirror opened later replaces them)
    versions = spark.sql(_VERSIONS).localCheckpoint(eager=True)
    versions.createOrReplaceTempView("ett_mirror_versions")
    keys = ["source", "job_id", "ingest_id"]  # no NULL in any of them (the store's keys): equal as in ON a = b
    current = {table: df.join(versions, on=keys, how="left_semi") for table, df in rows.items()}
    return {**current, "versions": versions}


def register_current(
    spark: "SparkSession", current: dict, qualified: bool, horizons: dict[str, int] | None = None
) -> None:
    """``typed_<table>`` and the tables below ``clean_<table>`` over the current rows, as the store's reader lays
    them out: ``job_id`` first; with several sources ids ``source/job_id``, and ``source`` the jobs' last column (a
    label), on a row for every job (the store keeps each job's source, with a jobs row or without).  ``horizons``
    (source -> epoch ms): an attempt still open ends at its source's horizon with the open end reason, as the
    store's reader lays it out (``ettcore/sql/store/stored_attempts_at_horizons.sql``), so that each source's running
    jobs are measured to its own horizon."""
    jid = "concat(t.source, '/', t.job_id)" if qualified else "t.job_id"
    current["versions"].createOrReplaceTempView("ett_mirror_versions")  # (another mirror may have replaced them)
    for table in ("attempts", "spans", "rank_timing"):
        if table not in current:  # a table the pointer has none of (rank_timing): empty, as in a trace without it
            sp.register_typed(spark, table, None, [])
            spark.sql(f"SELECT * FROM typed_{table}").createOrReplaceTempView(f"ett_current_{table}")
            continue
        current[table].createOrReplaceTempView(f"ett_current_{table}")
        spark.sql(
            f"SELECT {jid} AS job_id, t.* EXCEPT (source, ingest_id, job_id) FROM ett_current_{table} AS t"
        ).createOrReplaceTempView(f"typed_{table}")
    if horizons:
        rows = [(source, int(ms), VOCABULARY.open_end_reason) for source, ms in horizons.items()]
        schema = "source string, as_of_ms bigint, open_end_reason string"
        spark.createDataFrame(rows, schema).createOrReplaceTempView("ett_mirror_horizons")
        kept = [c for c in current["attempts"].columns if c.lower() not in ("source", "ingest_id", "job_id")]
        clipped = {
            "end_ms": "coalesce(t.end_ms, h.as_of_ms)",
            "end_reason": "CASE WHEN t.end_ms IS NULL THEN h.open_end_reason ELSE t.end_reason END",
        }
        cols = ", ".join(f"{clipped.get(c.lower(), 't.' + sp._q(c))} AS {sp._q(c)}" for c in kept)
        spark.sql(
            f"SELECT {jid} AS job_id, {cols} FROM ett_current_attempts AS t "
            "JOIN ett_mirror_horizons AS h ON h.source = t.source"
        ).createOrReplaceTempView("typed_attempts")
    current["jobs"].createOrReplaceTempView("ett_current_jobs")
    if not qualified:
        spark.sql(
            "SELECT t.job_id, t.* EXCEPT (source, ingest_id, job_id) FROM ett_current_jobs AS t"
        ).createOrReplaceTempView("typed_jobs")
        return
    spark.sql(
        "SELECT concat(v.source, '/', v.job_id) AS job_id, t.* EXCEPT (source, ingest_id, job_id), v.source AS source "
        "FROM ett_mirror_versions AS v LEFT JOIN ett_current_jobs AS t "
        "ON t.source = v.source AND t.job_id = v.job_id AND t.ingest_id = v.ingest_id"
    ).createOrReplaceTempView("typed_jobs")


_COUNTS = "SELECT " + ", ".join(f"(SELECT count(*) FROM ett_current_{t}) AS {t}" for t in ROW_TABLES)


def open_mirror(
    location: Any, spark: "SparkSession", options: TraceOptions | None = None, **given: Any
) -> MirrorSparkTrace:
    """The store's Parquet mirror at ``location`` (a local folder or a URI) as a trace on ``spark``: the metric's
    functions give the store's figures (see the module docstring).  ``options``
    (:class:`~ettcore.trace.options.TraceOptions`, or its fields as keyword arguments) as for a store: its rows were
    checked when they were ingested, so ``skip_invalid`` is refused, and so are DuckDB's ``memory_limit`` and
    ``temp_directory``.

    Without ``as_of`` the store's analysis time is the as-of (running work is measured up to it); ``mapping``, the
    window and the exclusions are the measuring commands' own, as on a trace.
    """
    opts = TraceOptions.of(options, **given)
    spark_load.refuse_duckdb_options(opts)
    if opts.skip_invalid:
        why = "a store's Parquet mirror holds rows checked when they were ingested (ett ingest --skip-invalid)"
        raise InputError(Problem("--skip-invalid", None, "skip_invalid", why))
    mapping, as_of, since, until, exclude = opts.mapping, opts.as_of, opts.since, opts.until, opts.exclude
    uri = _location(location).rstrip("/")
    phase_map = load_phase_map(mapping)
    as_of_ms = parse_as_of(as_of)
    window = make_window(since, until, exclude)
    sp.forget_active(spark)  # the views below replace those of any trace opened before in this session
    with sp.input_errors(uri):
        doc = read_pointer(spark, uri)
        _, root = spark_load._filesystem(spark, uri)
        current = current_rows(spark, root, doc)
        qualified = len(doc["sources"]) > 1
        store_as_of = doc["as_of_ms"]
        labels = list(doc["labels"])  # the store's labels, as its own reader tells them
        # the store's causes (those of its first ingest's causes file; a pointer written before has none), or a
        # causes file's that has them all: Spark attributes the mirror's rows with it either way
        vocabulary, _ = kept_vocabulary(doc.get("causes") or [], f"{uri}/{POINTER} (its causes)", opts.causes_file)
        trace = MirrorTrace(
            path=location,
            phase_map=phase_map,
            as_of_ms=store_as_of if as_of_ms is None else as_of_ms,
            labels=[*labels, "source"] if qualified else labels,
            metadata={"synthetic": bool(doc.get("synthetic")), "description": doc.get("description", "")},
            window=window,
            latest_ms=store_as_of,
            pointer=doc,
            sources_n=len(doc["sources"]),
            horizons=dict(doc.get("horizons") or {}) if qualified and as_of_ms is None else {},
            not_started={"attempts": 0, "spans": 0, "jobs": 0},
            vocabulary=vocabulary,
        )
        # as the store: its own analysis time includes its latest instant (cut 1 ms after), another one cuts at it
        explicit = as_of_ms is not None and as_of_ms != store_as_of
        cut_ms = trace.as_of_ms if explicit else (None if trace.as_of_ms is None else trace.as_of_ms + 1)
        st = MirrorSparkTrace(spark=spark, trace=trace, verify=False, current=current, cut_ms=cut_ms)
        st.register_inputs()
        counts = spark.sql(_COUNTS).collect()[0].asDict()
        if counts != {t: int(doc["rows"].get(t, 0)) for t in ROW_TABLES}:
            raise InputError(
                Problem(
                    uri,
                    None,
                    None,
                    f"the mirror's folders hold other rows than its {POINTER} says (rows {counts}, pointer "
                    f"{doc['rows']}): a folder was changed or removed; publish the store into a new folder",
                )
            )
        trace.accounting = {
            t: {"read": n, "used": n, "rejected": 0, "rejected_by_reason": {}} for t, n in counts.items()
        }
        if explicit:
            trace.not_started = spark.sql(spark_load._NOT_STARTED).collect()[0].asDict()
        sp.register_trace(st)
    trace.spark_trace = st
    return st
