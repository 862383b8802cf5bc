"""The metric on Apache Spark gives the DuckDB metric's answers.

The translation rules (no Spark needed) are tested first.  The equality tests
need pyspark and Java; they are skipped without them.  They run on the project's
Spark cluster (``tools/spark/start.sh``: a standalone master, two workers and a
Spark Connect server; conftest's ``spark_cluster``), as an application of the
``spark://`` master and through Spark Connect (``sc://``): the sample trace, its
sub-millisecond instants and its as-of on both, each other test on one of them
(conftest's ``on_one_kind``); one shuffle partition, asserting the master it ran on, and compare
DuckDB's and Spark's per-job, fleet and trend frames on the bundled sample
trace (CSV), on a generated fleet (a few hundred jobs of the ``fleet``
scenario, Parquet; SYNTHETIC) and on a trace with an invalid job left out by
``skip_invalid``: same columns, same types, times identical to the
millisecond, numbers within 1e-9 relative.
"""

from __future__ import annotations

import re

import polars as pl
import pytest
from polars.testing import assert_frame_equal

sqlglot = pytest.importorskip("sqlglot")

from conftest import on_one_kind, use_session, write_csv_trace  # noqa: E402

from ettcore import engines, metric  # noqa: E402
from ettcore.config import SAMPLE_TRACE, SCENARIO_DIR, SQL_DIR  # noqa: E402
from ettcore.engines.spark import connect_available, spark_available  # noqa: E402
from ettcore.engines.spark.transpile import duckdb_to_spark, spark_sql  # noqa: E402
from ettcore.trace import load_trace  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

needs_spark = pytest.mark.skipif(not spark_available(), reason="pyspark or Java not installed")


# ----------------------------------------------------------------------------- translation rules


def test_hash_becomes_64_bit_xxhash():
    out = duckdb_to_spark("SELECT hash(job_id) AS k FROM t")
    assert "XXHASH64(job_id)" in out
    assert "HASH(" not in out.replace("XXHASH64(", "")


def test_decimal_literals_become_doubles():
    out = duckdb_to_spark("SELECT 100.0 * a / 3600.0 AS x, 3.6e6 AS y, 7 AS z FROM t")
    assert "CAST(100.0 AS DOUBLE)" in out and "CAST(3600.0 AS DOUBLE)" in out
    assert "7 AS z" in out  # whole numbers stay integers


def test_recursive_unnest_becomes_inline():
    out = duckdb_to_spark("SELECT k, unnest([{'a': x, 'b': y}, {'a': y, 'b': z}], recursive := true) FROM t")
    assert out.startswith("SELECT k, INLINE(ARRAY(STRUCT(x AS a, y AS b), STRUCT(y AS a, z AS b)))")
    assert "recursive" not in out.lower()


def test_date_trunc_of_a_date_keeps_its_unit_first():
    out = duckdb_to_spark("SELECT CAST(date_trunc($every, CAST(epoch_ms(e) AS DATE)) AS DATE) FROM t")
    assert "DATE_TRUNC(:every," in out
    assert "TRUNC(CAST" not in out.replace("DATE_TRUNC(", "")


def test_lead_over_a_framed_named_window_loses_the_frame_only_there():
    out = duckdb_to_spark(
        "SELECT lead(t) OVER w AS n, max(t) OVER w AS m FROM e "
        "WINDOW w AS (PARTITION BY j ORDER BY t, kind ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    )
    assert "LEAD(t) OVER (PARTITION BY j ORDER BY t NULLS LAST, kind NULLS LAST) AS n" in out
    assert "MAX(t) OVER w AS m" in out and "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW" in out


def test_materialized_hint_is_dropped():
    out = duckdb_to_spark("WITH p AS MATERIALIZED (SELECT 1 AS a) SELECT a FROM p")
    assert "MATERIALIZED" not in out.upper()


@pytest.mark.parametrize("path", sorted((SQL_DIR / "metric").glob("*.sql")), ids=lambda p: p.stem)
def test_every_metric_query_translates_to_valid_spark_sql(path):
    out = spark_sql(f"metric/{path.stem}")
    sqlglot.parse_one(out, read="spark")  # Spark-dialect SQL that parses back
    for duckdb_only in ("recursive :=", "MATERIALIZED", " HASH(", "::", "//"):
        assert duckdb_only not in out.upper().replace("XXHASH64(", ""), duckdb_only
    assert not re.search(r"\bEXCLUDE\s*\(", out.upper()), (
        "EXCLUDE (...)"
    )  # the keyword, not a column such as excluded_s
    assert "LAMBDA " not in out.upper()  # DuckDB's lambda syntax becomes Spark's x -> ...


# ----------------------------------------------------------------------------- equality on Spark


def assert_same(duck: pl.DataFrame, spark: pl.DataFrame) -> None:
    """Same columns, types and rows; floats within 1e-9 relative (1e-9 absolute near zero)."""
    assert duck.columns == spark.columns
    assert duck.schema == spark.schema
    assert duck.height == spark.height
    assert_frame_equal(duck, spark, check_exact=False, rel_tol=1e-9, abs_tol=1e-9)


@pytest.fixture(params=["spark", "connect"], ids=["spark-master", "spark-connect"])
def session(request):
    """Each equality test runs on the project's cluster twice: as an application of its ``spark://`` master (the
    classic session, driver here) and through its Spark Connect server (``sc://``, no JVM here)."""
    return use_session(request, request.param)


def session_master(session) -> str:
    """The master the session's queries run on (through Spark Connect: the server's own, on the cluster), and what
    ``--spark-master`` names for it."""
    from ettcore.engines import spark as sp

    ran_on = session.conf.get("spark.master")
    assert ran_on.startswith("spark://127.0.0.1:"), ran_on  # the project's cluster, never a local session
    return sp.master_of(session)


@pytest.fixture(scope="module")
def fleet_trace(tmp_path_factory):
    from ettcore.synthetic.generator import generate

    return generate(SCENARIO_DIR / "fleet.yaml", tmp_path_factory.mktemp("spark") / "fleet", n_jobs=300, seed=11)


def compare(trace, session, by: str | None = None, every: str = "day") -> pl.DataFrame:
    from ettcore.engines import spark as sp

    session_master(session)
    st = sp.open_trace(trace, session)
    jobs = metric.job_summary(trace)
    assert jobs.height > 0
    assert_same(jobs, metric.job_summary(st))
    assert_same(metric.fleet_summary(trace), metric.fleet_summary(st))
    if by is not None:
        assert_same(metric.fleet_summary(trace, by=by), metric.fleet_summary(st, by=by))
    assert_same(metric.trend(trace, every), metric.trend(st, every))
    return jobs


@needs_spark
@pytest.mark.spark
def test_sample_trace_same_on_spark(session):
    jobs = compare(load_trace(SAMPLE_TRACE), session, by="team", every="day")
    # the worked example of the spec, as DuckDB and Spark both give it
    row = jobs.filter(pl.col("job_id") == "worked-example").row(0, named=True)
    assert row["wall_s"] == 7200.0 and row["productive_s"] == 3000.0


@needs_spark
@pytest.mark.spark
@on_one_kind("spark")
def test_a_users_component_same_on_spark(session, tmp_path):
    """A mapping file's own component (data_warmup moved into data_loading) on both engines, in the same column."""
    m = tmp_path / "m.yaml"
    m.write_text("phases:\n  - {phase: data_warmup, component: data_loading}\nowners:\n  data_loading: Data platform\n")
    jobs = compare(load_trace(SAMPLE_TRACE, mapping=m), session, by="team", every="day")
    assert jobs.columns.index("data_loading_s") == jobs.columns.index("shutdown_s") + 1
    assert jobs["data_loading_s"].sum() > 0


@needs_spark
@pytest.mark.spark
def test_sub_millisecond_instants_round_alike_on_spark(session, tmp_path):
    """An instant with microseconds becomes whole ms rounded half up on both engines (Spark's unix_millis truncates):
    ISO text and Parquet timestamps.  start ...00.0006 -> ...00.001, end ...00.0004 -> ...00.000: a wall of 3599.999 s.
    """
    from datetime import datetime

    csv = tmp_path / "csv"
    csv.mkdir()
    (csv / "jobs.csv").write_text("job_id,model,gpus\nj1,m,8\n")
    (csv / "attempts.csv").write_text(
        "job_id,attempt,start,end,end_reason\nj1,0,2026-01-05T00:00:00.0006Z,2026-01-05T01:00:00.0004Z,completed\n"
    )
    (csv / "spans.csv").write_text("job_id,attempt,phase,start,end,cursor_start,cursor_end\n")
    pq = tmp_path / "parquet"
    pq.mkdir()
    pl.DataFrame({"job_id": ["j1"], "model": ["m"], "gpus": [8]}).write_parquet(pq / "jobs.parquet")
    pl.DataFrame(
        {
            "job_id": ["j1"],
            "attempt": [0],
            "start": [datetime(2026, 1, 5, 0, 0, 0, 600)],
            "end": [datetime(2026, 1, 5, 1, 0, 0, 400)],
            "end_reason": ["completed"],
        },
        schema_overrides={"start": pl.Datetime("us"), "end": pl.Datetime("us")},
    ).write_parquet(pq / "attempts.parquet")
    pl.DataFrame(
        schema={
            "job_id": pl.String,
            "attempt": pl.Int64,
            "phase": pl.String,
            "start": pl.Datetime("us"),
            "end": pl.Datetime("us"),
            "cursor_start": pl.Float64,
            "cursor_end": pl.Float64,
        }
    ).write_parquet(pq / "spans.parquet")
    for folder in (csv, pq):
        duck = engines.job_summary(folder, engine="duckdb")
        spark = engines.job_summary(folder, engine="spark", spark_master=session_master(session))
        assert duck["wall_s"].to_list() == [3599.999], folder.name
        assert_same(duck, spark)


@needs_spark
@pytest.mark.spark
def test_sample_with_as_of_same_on_spark_and_parse_guard(session):
    """An explicit as-of clips running work on both engines; a Spark table that differs from DuckDB's is refused."""
    from ettcore.engines import spark as sp

    trace = load_trace(SAMPLE_TRACE, as_of="2026-01-05T23:30:00Z")
    st = sp.open_trace(trace, session)
    duck = metric.job_summary(trace)
    assert "running" in duck["status"].to_list()
    assert_same(duck, metric.job_summary(st))
    assert_same(metric.l2_matrix(trace), metric.l2_matrix(st))

    assert sp.fingerprint_differences(st) == []
    session.sql("SELECT * FROM clean_attempts WHERE attempt > 0").createOrReplaceTempView("clean_attempts")
    fields = {p.field for p in sp.fingerprint_differences(st)}
    assert "attempts_n" in fields and "attempts_start_mod" in fields


@needs_spark
@pytest.mark.spark
@on_one_kind("connect")
def test_generated_fleet_same_on_spark(session, fleet_trace):
    trace = load_trace(fleet_trace)
    assert trace.synthetic
    jobs = compare(trace, session, by="model", every="week")
    assert jobs.height == 300


@needs_spark
@pytest.mark.spark
@on_one_kind("spark")
def test_skipped_jobs_are_left_out_on_spark_too(session, tmp_path, good_rows):
    """Through the engines API (path in, frame out): the job the checks reject is absent on Spark as on DuckDB."""
    attempts, spans = good_rows
    bad_attempts = [["j2", 0, 1_700_000_000, 1_699_999_000, "completed"]]  # ends before it starts
    folder = write_csv_trace(tmp_path / "t", attempts + bad_attempts, spans, jobs=[["j1", "m", 8], ["j2", "m", 8]])
    assert load_trace(folder, skip_invalid=True).excluded_jobs == ["j2"]
    duck = engines.job_summary(folder, engine="duckdb", skip_invalid=True)
    got = engines.job_summary(folder, engine="spark", spark_master=session_master(session), skip_invalid=True)
    assert got["job_id"].to_list() == ["j1"]
    assert_same(duck, got)


@needs_spark
@pytest.mark.spark
@on_one_kind("spark")
def test_windows_exclusions_and_rolling_trends_same_on_spark(session, tmp_path):
    """--since/--until, exclusion windows (all jobs, a label, one job, overlapping) and rolling trends."""
    from ettcore.engines import spark as sp

    ex = tmp_path / "ex.csv"
    ex.write_text(
        "start,end,reason,job,label\n2026-01-05T00:40:00Z,2026-01-05T01:20:00Z,maintenance,,\n"
        "2026-01-05T01:00:00Z,2026-01-05T04:00:00Z,incident,,team=feed\n"
        "2026-01-05T22:00:00Z,2026-01-06T01:00:00Z,freeze,sample-running,\n",
        encoding="utf-8",
    )
    trace = load_trace(SAMPLE_TRACE, since="2026-01-05T00:30:00Z", until="2026-01-06T02:00:00Z", exclude=ex)
    st = sp.open_trace(trace, session)
    jobs = metric.job_summary(trace)
    assert jobs["excluded_s"].sum() > 0
    assert_same(jobs, metric.job_summary(st))
    assert_same(metric.fleet_summary(trace, by="team"), metric.fleet_summary(st, by="team"))
    assert_same(metric.l2_matrix(trace), metric.l2_matrix(st))
    assert_same(metric.exclusion_summary(trace), metric.exclusion_summary(st))
    assert_same(metric.trend(trace, "day"), metric.trend(st, "day"))
    assert_same(metric.trend(trace, "day", window="48h"), metric.trend(st, "day", window="48h"))
    assert_same(metric.trend(trace, "hour", window="6h"), metric.trend(st, "hour", window="6h"))
    assert_same(metric.job_summary(trace), metric.job_summary(st))  # the hourly grid changes no per-job figure


@needs_spark
@pytest.mark.spark
@on_one_kind("connect")
def test_causes_same_on_spark(session):
    """NoF and lost time by cause (job_cause_time, group_cause_time) on both engines: the bundled Slurm campaign,
    whose attempts carry causes (data/slurm-fleet/trace)."""
    from ettcore.config import DATA_DIR
    from ettcore.engines import spark as sp

    trace = load_trace(DATA_DIR / "slurm-fleet" / "trace")
    st = sp.open_trace(trace, session)
    assert_same(metric.job_causes(trace), metric.job_causes(st))
    duck = metric.cause_summary(trace)
    assert_same(duck, metric.cause_summary(st))
    assert dict(zip(duck["cause"], duck["nof"])) == {
        "preemption": 6,
        "user_error": 12,
        "time_limit": 1,
        "node_failure": 4,
    }
    assert_same(
        metric.cause_summary(trace, by="model"), metric.cause_summary(st, by="model").sort("model", maintain_order=True)
    )


# ----------------------------------------------------------------------------- the cluster and the sessions


@pytest.mark.parametrize(
    "master, part",
    [
        ("spark://127.0.0.1:1", "cannot reach the Spark master spark://127.0.0.1:1"),
        ("sc://127.0.0.1:1", "cannot reach the Spark Connect server sc://127.0.0.1:1"),
        ("spark://127.0.0.1:x", "'x' is not a port"),
    ],
)
def test_a_cluster_that_cannot_be_reached_is_one_line(master, part, capsys):
    """Before any Spark starts here: a master or Connect server that refuses connections is named, exit 2."""
    from ettcore import cli

    if not (spark_available() if master.startswith("spark") else connect_available()):
        pytest.skip("pyspark (with its connect extra) or Java not installed")
    assert cli.main(["summarize", str(SAMPLE_TRACE), "--engine", "spark", "--spark-master", master]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and part in err[0], err


def test_master_endpoints():
    from ettcore.engines.spark import master_endpoints

    assert master_endpoints("spark://h1:7000,h2") == [("h1", 7000), ("h2", 7077)]
    assert master_endpoints("sc://example.org/;token=x") == [("example.org", 15002)]
    assert master_endpoints("sc://[::1]:15010") == [("::1", 15010)]
    assert master_endpoints("local[2]") == master_endpoints("yarn") == []


@needs_spark
@pytest.mark.spark
def test_both_sessions_on_the_cluster_and_never_another_masters(spark_cluster, spark_session, connect_session):
    """The master's own JSON (/json/) during the tests: two live workers, and both applications (the tests'
    spark:// one and the Connect server's) with executors' cores; get_session gives each master its own session."""
    import json
    import urllib.request

    from ettcore.engines import spark as sp

    doc = json.load(urllib.request.urlopen(spark_cluster["SPARK_MASTER_WEBUI"] + "/json/", timeout=10))
    print(json.dumps({k: doc[k] for k in ("url", "workers", "activeapps")}, indent=1))  # shown with pytest -s
    workers = [w for w in doc["workers"] if w["state"] == "ALIVE"]
    assert len(workers) == 2 and all(w["host"] == "127.0.0.1" for w in workers)
    apps = {a["name"]: a for a in doc["activeapps"]}
    assert apps["ettcore"]["cores"] > 0 and apps["ett Spark Connect server"]["cores"] > 0
    assert doc["url"] == spark_cluster["SPARK_MASTER_URL"] == spark_session.sparkContext.master

    assert sp.get_session(spark_cluster["SPARK_MASTER_URL"]) is spark_session
    assert sp.get_session(spark_cluster["SPARK_CONNECT_URL"]) is connect_session
    assert connect_session is not spark_session and sp.master_of(connect_session).startswith("sc://")
    assert connect_session.conf.get("spark.master") == spark_cluster["SPARK_MASTER_URL"]
    assert connect_session.range(5).selectExpr("sum(id)").collect()[0][0] == 10
