"""A trace given as a URI is read and checked by Spark alone, with DuckDB's answers.

``ett summarize URI --engine spark`` (and ``trend``) read a Parquet trace from any
URI Spark reads (``file://``, ``s3a://``, ``hdfs://``...).  DuckDB cannot read such
a URI, so discovery, the data checks, the as-of time and the row accounting run on
Spark (:mod:`ettcore.engines.spark.load`).  Every comparison here is against DuckDB
on the same files given as a local path: frames, problems (file basename, row,
field, message), accounting and as-of.  The bundled sample is CSV, which is read
from local paths only, so its values are written to a Parquet copy first (a URI to
the CSV folder itself is refused, as tested).  The Spark tests run on the project's
cluster (``tools/spark/start.sh``; conftest's ``spark_cluster``), as an application of
its ``spark://`` master; the sample and the partitioned trace also through its Spark
Connect server (``sc://``).  They are skipped without pyspark and Java; the routing
tests at the top need neither.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

pytest.importorskip("sqlglot")


from conftest import on_one_kind, use_session  # noqa: E402

from ettcore import cli, engines, metric  # noqa: E402
from ettcore.config import SAMPLE_TRACE  # noqa: E402
from ettcore.engines.spark import spark_available  # noqa: E402
from ettcore.engines.spark.transpile import spark_sql  # noqa: E402
from ettcore.errors import TraceError  # noqa: E402
from ettcore.trace import load_trace  # noqa: E402
from ettcore.trace.queries import check_names  # noqa: E402
from ettcore.trace.writer import write_table, write_trace  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

needs_spark = pytest.mark.skipif(not spark_available(), reason="pyspark or Java not installed")


def uri(path: Path) -> str:
    """``file:///abs/path``, written as Spark and Hadoop take URIs: not percent-encoded."""
    return "file://" + str(Path(path).resolve())


# ----------------------------------------------------------------------------- routing (no Spark needed)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("s3a://bucket/fleet", True),
        ("file:///abs/t", True),
        ("hdfs://nn:8020/t", True),
        ("abfss://c@a.dfs.core.windows.net/t", True),
        ("gs://b/t", True),
        ("data/sample", False),
        ("/abs/t", False),
        ("C:\\traces\\t", False),
        ("weird:name", False),
        ("://x", False),
    ],
)
def test_uri_detection(text, expected):
    assert engines.is_uri(text) is expected


@pytest.mark.parametrize(
    "name",
    [f"checks/{n}" for n in check_names()] + ["load/default_as_of", "load/row_accounting", "load/typed_row_counts"],
)
def test_every_check_translates_to_valid_spark_sql(name):
    """The checks, the default as-of and the row accounting (with findings and without): each a file both engines
    run."""
    import sqlglot

    out = spark_sql(name)
    sqlglot.parse_one(out, read="spark")
    assert "::" not in out and "recursive :=" not in out.lower()


def test_uri_on_duckdb_says_use_spark(capsys):
    with pytest.raises(TraceError, match="--engine spark"):
        engines.open_trace("s3a://bucket/fleet", engine="duckdb")
    assert cli.main(["summarize", uri(SAMPLE_TRACE), "--engine", "duckdb", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ett: file:///") and "use --engine spark" in err and "Traceback" not in err
    assert cli.main(["validate", "s3a://bucket/fleet"]) == 2
    assert "--engine spark" in capsys.readouterr().err


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture
def session(request):
    return use_session(request, "spark")


@pytest.fixture(params=["spark", "connect"], ids=["spark-master", "spark-connect"])
def either(request):
    """The session of the Spark tests on the cluster's ``spark://`` master, then the one through its Spark Connect
    server (``sc://``: files listed and read by DataFrames on the server, not by Hadoop's API here)."""
    return use_session(request, request.param)


def _sample_text_frames() -> dict[str, pl.DataFrame]:
    """The bundled sample's tables exactly as the CSV loader sees them (every value text, empty = NULL)."""
    return {t: pl.read_csv(SAMPLE_TRACE / f"{t}.csv", infer_schema=False) for t in ("jobs", "attempts", "spans")}


@pytest.fixture(scope="module")
def sample_parquet(tmp_path_factory) -> Path:
    """``data/sample`` as a Parquet trace (the CSV's values as text, and its trace.json)."""
    f = _sample_text_frames()
    meta = json.loads((SAMPLE_TRACE / "trace.json").read_text())
    return write_trace(
        tmp_path_factory.mktemp("uri") / "sample",
        jobs=f["jobs"],
        attempts=f["attempts"],
        spans=f["spans"],
        metadata=meta,
    )


def _typed_sample() -> dict[str, pl.DataFrame]:
    """The sample with real Parquet types: UTC timestamps, integers, doubles."""
    f = _sample_text_frames()
    ts = [pl.col(c).str.to_datetime("%Y-%m-%dT%H:%M:%SZ", time_zone="UTC") for c in ("start", "end")]
    return {
        "jobs": f["jobs"].with_columns(pl.col("gpus").cast(pl.Int64)),
        "attempts": f["attempts"].with_columns(pl.col("attempt").cast(pl.Int64), *ts),
        "spans": f["spans"].with_columns(
            pl.col("attempt").cast(pl.Int64), *ts, pl.col("cursor_start", "cursor_end").cast(pl.Float64)
        ),
    }


def write_partitioned(folder: Path, frames: dict[str, pl.DataFrame], metadata: dict | None = None) -> Path:
    """A trace whose attempts and spans are folders of hive-partitioned part files (``team=<t>/part-<i>.parquet``),
    with the litter real writers leave (``_SUCCESS``, a hidden temporary file) that readers must skip."""
    write_trace(
        folder,
        jobs=frames["jobs"],
        attempts=frames["attempts"].head(0),
        spans=frames["spans"].head(0),
        metadata=metadata,
    )
    teams = frames["jobs"].select("job_id", "team")
    for name in ("attempts", "spans"):
        (folder / f"{name}.parquet").unlink()
        df = frames[name].join(teams, on="job_id", how="left")
        for team, part in df.group_by("team", maintain_order=True):
            sub = folder / name / f"team={team[0]}"
            sub.mkdir(parents=True)
            rows = part.drop("team")
            half = max(1, rows.height // 2)
            write_table(rows[:half], sub / "part-0.parquet", "parquet")
            if rows.height > half:
                write_table(rows[half:], sub / "part-1.parquet", "parquet")
        (folder / name / "_SUCCESS").write_text("")
        write_table(frames[name].head(1), folder / name / ".tmp-part-9.parquet", "parquet")  # hidden: never read
    return folder


# ----------------------------------------------------------------------------- helpers


def assert_same(duck: pl.DataFrame, spark: pl.DataFrame) -> None:
    """Same columns, types and rows; floats within 1e-9 relative (as tests/test_spark_equality.py)."""
    assert duck.columns == spark.columns
    assert duck.schema == spark.schema
    assert duck.height == spark.height
    assert_frame_equal(duck, spark, check_exact=False, rel_tol=1e-9, abs_tol=1e-9)


def problems_key(problems) -> list[tuple]:
    """What a user reads of each problem, with the file as its basename (DuckDB names a path, Spark a URI)."""
    return [(os.path.basename(p.file), p.row, p.field, p.message, p.table, p.job_id) for p in problems]


def open_uri(session, path: Path, **kw):
    from ettcore.engines.spark import load as spark_load

    return spark_load.open_uri(uri(path), session, **kw)


# ----------------------------------------------------------------------------- (a) the bundled sample


@needs_spark
@pytest.mark.spark
@on_one_kind("connect", "either")
def test_sample_by_uri_same_as_duckdb(either, sample_parquet):
    """Through Spark Connect; the ``spark://`` session reads the same URI in test_cli_summarize_and_trend_by_uri,
    which compares every figure of ``summarize`` and ``trend`` and what the trace says of itself."""
    session = either

    duck = load_trace(SAMPLE_TRACE)  # DuckDB on the bundled CSV folder
    st = open_uri(session, sample_parquet)
    got = st.trace
    assert got.synthetic and got.labels == duck.labels == ["team"]
    assert (got.as_of_ms, got.accounting, got.not_started, got.excluded_jobs) == (
        duck.as_of_ms,
        duck.accounting,
        duck.not_started,
        [],
    )
    jobs = metric.job_summary(duck)
    assert jobs.height == 4
    assert_same(jobs, metric.job_summary(st))
    assert_same(metric.fleet_summary(duck), metric.fleet_summary(st))
    assert_same(metric.trend(duck, "day"), metric.trend(st, "day"))


# ----------------------------------------------------------------------------- (b) partitioned Parquet


MARK = "Zq9MARK"  # a marker no SQL text of the project contains


@needs_spark
@pytest.mark.spark
def test_partitioned_parquet_by_uri_same_as_duckdb(either, tmp_path, monkeypatch):
    """Hive-partitioned part files with Parquet types; hostile job ids, label name and folder name stay data."""
    session = either

    frames = _typed_sample()
    ids = {j: f"{j}'); DROP VIEW clean_spans; --{MARK}" for j in frames["jobs"]["job_id"]}
    frames = {t: df.with_columns(pl.col("job_id").replace(ids)) for t, df in frames.items()}
    frames["jobs"] = frames["jobs"].with_columns(pl.col("model").alias('cost `center" x'))  # a label column with quotes
    folder = write_partitioned(tmp_path / f"it's a fleet {MARK}", frames, metadata={"synthetic": True})
    duck = load_trace(folder)
    assert len(duck.sources[2].files) > 2  # spans really come in several part files

    statements: list[str] = []
    real_sql = session.sql
    monkeypatch.setattr(session, "sql", lambda q, *a, **kw: statements.append(q) or real_sql(q, *a, **kw))
    st = open_uri(session, folder)
    jobs = metric.job_summary(st)
    assert [len(s.files) for s in st.trace.sources] == [len(s.files) for s in duck.sources]
    assert (st.trace.as_of_ms, st.trace.accounting) == (duck.as_of_ms, duck.accounting)
    assert_same(metric.job_summary(duck), jobs)
    assert sorted(jobs["job_id"]) == sorted(ids.values())
    assert_same(metric.fleet_summary(duck), metric.fleet_summary(st))
    assert statements and not [q for q in statements if MARK in q]  # no value or path reached SQL text


# ----------------------------------------------------------------------------- (c) bad rows


@pytest.fixture(scope="module")
def bad_trace(tmp_path_factory) -> Path:
    """The sample (partitioned) plus two bad rows: an attempt that ends before it starts (job ``bad-end``)
    and, inside a spans part file, a span of an attempt that does not exist (job ``sample-running``)."""
    f = _typed_sample()
    t0 = pl.datetime(2026, 1, 6, 1, time_zone="UTC")
    jobs = pl.concat([f["jobs"], pl.DataFrame({"job_id": ["bad-end"], "model": ["m"], "gpus": [8], "team": ["feed"]})])
    bad_attempt = pl.select(
        job_id=pl.lit("bad-end"),
        attempt=pl.lit(0, pl.Int64),
        start=t0,
        end=t0 - pl.duration(hours=1),
        end_reason=pl.lit("completed"),
    )
    attempts = pl.concat([f["attempts"], bad_attempt])
    spans = f["spans"]
    ghost = spans.filter(pl.col("job_id") == "sample-running").head(1).with_columns(attempt=pl.lit(5, pl.Int64))
    running = spans.filter(pl.col("job_id") == "sample-running")
    spans = pl.concat([spans.filter(pl.col("job_id") != "sample-running"), running.head(1), ghost, running.tail(-1)])
    return write_partitioned(
        tmp_path_factory.mktemp("uri") / "bad", {"jobs": jobs, "attempts": attempts, "spans": spans}
    )


@needs_spark
@pytest.mark.spark
def test_bad_rows_named_like_duckdb(session, bad_trace):
    with pytest.raises(TraceError) as duck:
        load_trace(bad_trace)
    with pytest.raises(TraceError) as spark:
        open_uri(session, bad_trace)
    expected = problems_key(duck.value.problems)
    ghost = [e for e in expected if e[3] == "unknown attempt 5 of job sample-running"]
    assert len(ghost) == 1 and ghost[0][0].startswith("part-") and ghost[0][1] > 1  # a row within its part file
    assert any(e[2:4] == ("end", "end is before start") for e in expected)
    assert problems_key(spark.value.problems) == expected
    assert all(p.file.startswith("file:/") for p in spark.value.problems)


@needs_spark
@pytest.mark.spark
def test_bad_rows_skipped_like_duckdb(session, bad_trace):

    duck = load_trace(bad_trace, skip_invalid=True)
    st = open_uri(session, bad_trace, skip_invalid=True)
    assert duck.excluded_jobs == ["bad-end", "sample-running"]
    assert st.trace.excluded_jobs == duck.excluded_jobs
    assert st.trace.accounting == duck.accounting
    assert problems_key(st.trace.problems) == problems_key(duck.problems)
    assert_same(metric.job_summary(duck), metric.job_summary(st))
    assert_same(metric.fleet_summary(duck), metric.fleet_summary(st))


# ----------------------------------------------------------------------------- (d) input errors


@needs_spark
@pytest.mark.spark
def test_uri_input_errors_are_clear(session, tmp_path, sample_parquet):
    no_spans = tmp_path / "no_spans"
    shutil.copytree(sample_parquet, no_spans)
    (no_spans / "spans.parquet").unlink()
    with pytest.raises(TraceError, match="required table 'spans' not found"):
        open_uri(session, no_spans)
    with pytest.raises(TraceError, match="must be Parquet.*CSV is read from local paths only"):
        open_uri(session, SAMPLE_TRACE)  # the bundled sample is CSV
    with pytest.raises(TraceError, match="trace path does not exist"):
        open_uri(session, tmp_path / "nowhere")
    twice = tmp_path / "twice"
    shutil.copytree(sample_parquet, twice)
    (twice / "spans").mkdir()
    with pytest.raises(TraceError, match="table 'spans' is given more than once"):
        open_uri(session, twice)
    empty = tmp_path / "empty"
    shutil.copytree(sample_parquet, empty)
    (empty / "spans.parquet").unlink()
    (empty / "spans").mkdir()
    (empty / "spans" / "_SUCCESS").write_text("")
    with pytest.raises(TraceError, match="holds no .parquet files"):
        open_uri(session, empty)

    from ettcore.engines.spark import load as spark_load

    with pytest.raises(TraceError, match=r"Spark cannot open this URI.*hadoop-aws"):
        spark_load.open_uri("s3a://bucket/fleet", session)  # no S3 connector in the test session
    with pytest.raises(TraceError, match='No FileSystem for scheme "nosuch"'):
        spark_load.open_uri("nosuch://host/fleet", session)


# ----------------------------------------------------------------------------- (e) the ett command


@needs_spark
@pytest.mark.spark
def test_cli_summarize_and_trend_by_uri(spark_master, sample_parquet, capsys):
    MASTER = spark_master
    assert cli.main(["summarize", str(SAMPLE_TRACE), "--json"]) == 0
    duck = json.loads(capsys.readouterr().out)
    assert cli.main(["summarize", uri(sample_parquet), "--engine", "spark", "--spark-master", MASTER, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got.pop("input") == {"path": uri(sample_parquet), "kind": "uri", "engine": "spark", "spark_master": MASTER}
    duck.pop("input")
    assert got.keys() == duck.keys() and len(got["jobs"]) == 4
    for key in ("synthetic", "as_of", "accounting", "not_started_by_as_of"):
        assert got[key] == duck[key], key

    def same(g: dict, d: dict) -> None:
        assert g.keys() == d.keys()
        for k, v in d.items():
            if k == "labels":  # the jobs table's labels, as read: equal
                assert g[k] == v == {"team": v["team"]}, k
            elif isinstance(v, dict):  # flat dicts of numbers (a retry chain's outcome is text)
                same(g[k], v)
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                assert g[k] == pytest.approx(v, rel=1e-9, abs=1e-9), k
            else:
                assert g[k] == v, k

    for g, d in zip(got["jobs"] + [got["fleet"]], duck["jobs"] + [duck["fleet"]]):
        same(g, d)
    assert got["restarts"].keys() == duck["restarts"].keys()
    same(got["restarts"]["retry_chains"], duck["restarts"]["retry_chains"])
    for key in ("crash_loops", "storms"):
        assert len(got["restarts"][key]) == len(duck["restarts"][key]), key
        for g, d in zip(got["restarts"][key], duck["restarts"][key]):
            same(g, d)

    # trend with an explicit as-of: the same buckets, and the same "not measured" note on stderr
    as_of = ["--as-of", "2026-01-05T06:00:00Z", "--every", "day", "--csv"]
    assert cli.main(["trend", str(SAMPLE_TRACE), *as_of]) == 0
    duck_out = capsys.readouterr()
    assert cli.main(["trend", uri(sample_parquet), *as_of, "--engine", "spark", "--spark-master", MASTER]) == 0
    got_out = capsys.readouterr()
    assert "start at or after it and are not measured" in duck_out.err and got_out.err == duck_out.err
    assert_frame_equal(
        pl.read_csv(duck_out.out.encode()), pl.read_csv(got_out.out.encode()), check_exact=False, rel_tol=1e-9
    )

    assert cli.main(["summarize", uri(sample_parquet), "--json"]) == 2  # default engine: duckdb
    assert "use --engine spark" in capsys.readouterr().err


# --------------------------------------------------------------------------- (f) exports as tools write them


@needs_spark
@pytest.mark.spark
def test_column_names_without_case_and_a_missing_column_by_uri(session, tmp_path):
    """Headers as `Start`, `End`, `Job_ID`: Spark reads them as the DuckDB loader does (same numbers); a trace whose
    spans lack `phase` is one problem naming the table and the column, as for a local path."""

    f = _typed_sample()
    upper = {t: df.rename({c: c.title() for c in df.columns if c != "team"}) for t, df in f.items()}
    folder = write_trace(tmp_path / "title", jobs=upper["jobs"], attempts=upper["attempts"], spans=upper["spans"])
    duck = load_trace(folder)
    assert_same(metric.job_summary(duck), metric.job_summary(open_uri(session, folder)))
    missing = write_trace(tmp_path / "nophase", jobs=f["jobs"], attempts=f["attempts"], spans=f["spans"].drop("phase"))
    with pytest.raises(TraceError) as local:
        load_trace(missing)
    with pytest.raises(TraceError) as remote:
        open_uri(session, missing)
    for exc in (local, remote):
        (p,) = exc.value.problems
        assert p.field == "phase" and p.row is None and "required column 'phase' is missing" in p.message
