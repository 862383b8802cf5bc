"""A fleet store read by Spark through its Parquet mirror gives the store's own figures.

The mirror (ettcore.store.parquet_mirror writes it, ettcore.engines.spark.mirror reads it) holds a folder of Parquet
files a refresh and a pointer, CURRENT.json, replaced atomically once its folders are complete.  The tests without
Spark check the layout and the publishing: what each folder holds against the store's rows, that a publish costs what
changed (earlier folders untouched), refusals, and publishes killed with SIGKILL at chosen and at random points (the
pointer is then the previous one, and every folder it names is complete: read back with DuckDB's own Parquet reader).
The Spark tests (on the project's cluster, as an application of its ``spark://`` master and through its Spark
Connect server, see ``session``; skipped without pyspark and Java) hold Spark on the mirror to the
DuckDB store's per-job, fleet, by-group and trend frames: on a store of the bundled Slurm campaign, and on a store
built from batches of several sources (SYNTHETIC: the hand-made sample) with replaced jobs and a removed source; a
half-written folder is ignored, and after the kills Spark reads the previous state, then the repaired one.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest

pytest.importorskip("sqlglot")

from conftest import on_one_kind, use_session  # noqa: E402
from test_spark_equality import assert_same  # noqa: E402

from ettcore import cli, engines, metric, store  # noqa: E402
from ettcore.config import DATA_DIR, SAMPLE_TRACE  # noqa: E402
from ettcore.engines.mirror_format import POINTER, ROW_TABLES, folder_name  # noqa: E402
from ettcore.engines.spark import spark_available  # noqa: E402
from ettcore.errors import InputError  # noqa: E402
from ettcore.store import parquet_mirror  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

needs_spark = pytest.mark.skipif(not spark_available(), reason="pyspark or Java not installed")
ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- building stores


def _variant(folder: Path, drop_spans_of: tuple[str, ...] = (), end_running: bool = False, jobs=None) -> Path:
    """A copy of the hand-made sample (SYNTHETIC): ``drop_spans_of`` lose their spans; ``end_running``: the running
    job's attempt ends at 2026-01-06T06:00Z, completed, and its spans after pt2_compile are gone; ``jobs``: only
    those jobs."""
    folder.mkdir(parents=True)
    shutil.copy(SAMPLE_TRACE / "trace.json", folder / "trace.json")
    for table in ("jobs", "attempts", "spans"):
        head, *rows = (SAMPLE_TRACE / f"{table}.csv").read_text().splitlines()
        keep = [r for r in rows if jobs is None or r.split(",")[0] in jobs]
        if table == "spans":
            keep = [r for r in keep if r.split(",")[0] not in drop_spans_of]
            if end_running:
                keep = [r for r in keep if not (r.startswith("sample-running,") and ",train," in r)]
        if table == "attempts" and end_running:
            keep = [
                "sample-running,0,2026-01-05T22:00:00Z,2026-01-06T06:00:00Z,completed"
                if r.startswith("sample-running,")
                else r
                for r in keep
            ]
        (folder / f"{table}.csv").write_text("\n".join([head, *keep]) + "\n")
    return folder


@pytest.fixture(scope="module")
def batches(tmp_path_factory) -> dict:
    """A store of four refreshes and a removal, its mirror published after each step (SYNTHETIC sample data):
    1. source a: the sample; 2. source a again: the running job ended (fewer spans) and the start-up failure lost its
    spans (both replaced as a whole); 3. source b: the sample (the same job ids: ids read source/job_id);
    4. source c: two jobs; 5. source c removed."""
    tmp = tmp_path_factory.mktemp("batches")
    s, mirror = tmp / "fleet.duckdb", tmp / "mirror"
    steps = [
        ("a", _variant(tmp / "v1")),
        ("a", _variant(tmp / "v2", drop_spans_of=("sample-startup-failure",), end_running=True)),
        ("b", _variant(tmp / "v3")),
        ("c", _variant(tmp / "v4", jobs=("worked-example", "sample-preempted"))),
    ]
    refreshes, published = [], []
    for name, src in steps:
        refreshes.append(store.ingest_path(s, src, source=name))
        published.append(parquet_mirror.publish(s, mirror))
    removal = store.remove_source(s, "c").ingest_id
    published.append(parquet_mirror.publish(s, mirror))
    return {"store": s, "mirror": mirror, "refreshes": refreshes, "published": published, "removal": removal}


def _mirror_rows(mirror: Path) -> dict[str, pl.DataFrame]:
    """The current rows of a mirror read with DuckDB's own Parquet reader (an independent reader for the tests): the
    pointer's folders, each job's rows of its highest id, less removed sources."""
    doc = json.loads((mirror / POINTER).read_text())
    con = duckdb.connect()
    out = {}
    removals = doc["removals"]
    for table in ROW_TABLES:
        files = [str(mirror / folder_name(n) / f"{table}.parquet") for n in doc["folders"]]
        con.execute(f"CREATE TABLE m_{table} AS SELECT * FROM read_parquet($f, union_by_name := true)", {"f": files})
    kept = " AND ".join(f"NOT (source = '{r['source']}' AND ingest_id < {int(r['id'])})" for r in removals) or "true"
    con.execute(
        "CREATE TABLE v AS SELECT source, job_id, max(ingest_id) AS ingest_id FROM (SELECT source, job_id, ingest_id "
        f"FROM m_jobs UNION ALL SELECT source, job_id, ingest_id FROM m_attempts UNION ALL SELECT source, job_id, "
        f"ingest_id FROM m_spans) WHERE {kept} GROUP BY ALL"
    )
    for table in ROW_TABLES:
        if "job_id" not in {r[0] for r in con.execute(f"DESCRIBE m_{table}").fetchall()}:
            # no row of it was ever stored (a trace without rank_timing): its columns, only NULL, were not written
            out[table] = con.sql(f"SELECT * FROM m_{table}").pl()
            continue
        out[table] = con.sql(f"SELECT * FROM m_{table} SEMI JOIN v USING (source, job_id, ingest_id)").pl()
    return out


def _store_rows(path: Path) -> dict[str, pl.DataFrame]:
    con = duckdb.connect(str(path), read_only=True)
    return {t: con.sql(f"SELECT * FROM rows_{t}").pl() for t in ROW_TABLES}


def _same_rows(a: dict, b: dict) -> None:
    for t in a:
        cols = sorted(set(a[t].columns) & set(b[t].columns))
        assert a[t].height == b[t].height, t
        assert a[t].select(cols).sort(cols).equals(b[t].select(cols).sort(cols)), t


# ----------------------------------------------------------------------------- publishing (no Spark needed)


def test_a_folder_a_refresh_holds_what_it_inserted(batches):
    mirror, s = batches["mirror"], batches["store"]
    doc = json.loads((mirror / POINTER).read_text())
    # by hand: 4 refreshes (ids 1-4) all inserted rows, the removal (id 5) none; source c removed at 5
    assert doc["published_id"] == 5 and doc["folders"] == [1, 2, 3, 4] and batches["removal"] == 5
    assert [(p.previous_id, p.published_id, p.folders) for p in batches["published"]] == [
        (0, 1, [1]),
        (1, 2, [2]),
        (2, 3, [3]),
        (3, 4, [4]),
        (4, 5, []),
    ]
    assert doc["removals"] == [{"id": 5, "source": "c"}]
    assert doc["sources"] == ["a", "b"] and doc["synthetic"] is True
    assert sorted(p.name for p in mirror.iterdir()) == [
        ".lock",
        POINTER,
        "ingest-1",
        "ingest-2",
        "ingest-3",
        "ingest-4",
    ]
    # folder 1 was published with the four jobs of refresh 1 and never changes; refresh 2 replaced two of them, so
    # folder 2 holds their new rows only (their old ones in folder 1 are no longer current)
    con = duckdb.connect()
    ids = {
        n: sorted(
            {r[0] for r in con.execute(f"SELECT job_id FROM '{mirror / folder_name(n)}/attempts.parquet'").fetchall()}
        )
        for n in doc["folders"]
    }
    assert ids[1] == ids[3] == ["sample-preempted", "sample-running", "sample-startup-failure", "worked-example"]
    assert ids[2] == ["sample-running", "sample-startup-failure"]
    assert ids[4] == ["sample-preempted", "worked-example"]
    assert len(batches["refreshes"][0].new) == 4
    assert sorted(batches["refreshes"][1].changed) == ["sample-running", "sample-startup-failure"]
    # the current rows read from the folders are the store's rows, row for row
    _same_rows(_mirror_rows(mirror), _store_rows(s))
    assert doc["rows"] == {t: f.height for t, f in _store_rows(s).items()}
    assert parquet_mirror.mirror_of(s) == mirror.resolve()


def test_a_publish_writes_what_changed_only(tmp_path, capsys):
    s, mirror = tmp_path / "s.duckdb", tmp_path / "m"
    assert cli.main(["ingest", str(s), str(_variant(tmp_path / "v1")), "--parquet", str(mirror)]) == 0
    first = {p.name: p.stat().st_mtime_ns for p in (mirror / "ingest-1").iterdir()}
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith(f"parquet mirror {mirror.resolve()}: published ingest 1..1: 1 folder(s), 58 row(s)")
    # the same source again: nothing new, no folder; the store remembers its mirror (no --parquet)
    assert cli.main(["ingest", str(s), str(_variant(tmp_path / "v1b"))]) == 0
    assert "published ingest 2..2: 0 folder(s), 0 row(s)" in capsys.readouterr().out
    v3 = _variant(tmp_path / "v3", jobs=("worked-example",))
    (v3 / "attempts.csv").write_text(
        (v3 / "attempts.csv").read_text().replace("00:50:00Z,failure", "00:51:00Z,failure")
    )
    assert cli.main(["ingest", str(s), str(v3)]) == 0
    out = capsys.readouterr().out
    # by hand (data/sample): the worked example's jobs row, 2 attempts and 12 spans, replaced; nothing else written
    assert "published ingest 3..3: 1 folder(s), 15 row(s)" in out
    assert sorted(p.name for p in mirror.iterdir() if not p.name.startswith(".")) == [POINTER, "ingest-1", "ingest-3"]
    assert {p.name: p.stat().st_mtime_ns for p in (mirror / "ingest-1").iterdir()} == first
    assert cli.main(["store", "publish", str(s)]) == 0
    assert capsys.readouterr().out.strip() == f"parquet mirror {mirror.resolve()}: up to date (ingest 3)"
    _same_rows(_mirror_rows(mirror), _store_rows(s))


def test_refusals(tmp_path, capsys):
    s, other = tmp_path / "s.duckdb", tmp_path / "o.duckdb"
    store.ingest_path(s, SAMPLE_TRACE)
    store.ingest_path(other, SAMPLE_TRACE)
    assert cli.main(["store", "publish", str(s)]) == 2
    assert "the store has no Parquet mirror yet" in capsys.readouterr().err
    assert cli.main(["summarize", str(s), "--engine", "spark"]) == 2
    assert "this store has none: publish one with ett store publish STORE DIR" in capsys.readouterr().err
    parquet_mirror.publish(s, tmp_path / "m")
    with pytest.raises(InputError, match="mirrors another store"):
        parquet_mirror.publish(other, tmp_path / "m")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    assert cli.main(["store", "publish", str(s), str(busy)]) == 2
    err = capsys.readouterr().err
    assert "holds files that are not a Parquet mirror (notes.txt" in err and "Traceback" not in err
    assert cli.main(["summarize", str(tmp_path / "m"), "--json"]) == 2
    assert "is read with --engine spark" in capsys.readouterr().err
    # a publish that fails after a committed refresh: said, exit 2; the refresh stays; the next publish catches up
    shutil.rmtree(tmp_path / "m")
    (tmp_path / "m").write_text("a file where the mirror was")
    assert cli.main(["ingest", str(s), str(_variant(tmp_path / "v2", jobs=("worked-example",)))]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("ingest 2 into") and "Traceback" not in err
    assert f"{tmp_path / 'm'}: cannot write the Parquet mirror" in err and "the refresh is committed" in err
    (tmp_path / "m").unlink()
    assert parquet_mirror.publish(s).published_id == 2


_CHILD = """
import os, sys, time
from pathlib import Path
from ettcore.store import parquet_mirror as pm
store, mirror, point, marker = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])

def pause():
    marker.write_text("here")
    time.sleep(600)

if point.startswith("fsync-"):  # the n-th sync: 1 = a folder's first file written (the folder still temporary),
    n, real, calls = int(point[6:]), pm._fsync, []  # one a table's file, then the first folder renamed into place
    def fsync(p):
        real(p)
        calls.append(p)
        if len(calls) == n:
            pause()
    pm._fsync = fsync
elif point == "pointer":  # the new pointer written under its temporary name, not yet renamed
    def write_text(target, text):
        with pm.atomic.atomic_path(target) as tmp:
            tmp.write_text(text)
            pause()
    pm.atomic.write_text = write_text
else:  # a random instant: the parent kills it
    marker.write_text("here")
pm.publish(store, mirror)
"""


RENAMED = f"fsync-{len(ROW_TABLES) + 1}"  # the sync after the first folder's files (one a table): its rename


def _kill_publish(s: Path, mirror: Path, point: str, tmp: Path, delay: float = 0.0) -> None:
    marker = tmp / f"marker-{point}"
    marker.unlink(missing_ok=True)
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(s), str(mirror), point, str(marker)], cwd=ROOT)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert child.poll() is None, f"the publish ended before its kill point {point}"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    child.wait()


@pytest.fixture(scope="module")
def killed(tmp_path_factory) -> dict:
    """A mirror published at refresh 1, then refreshes 2 and 3 committed and their publish killed at three chosen
    points in turn (inside the first folder, after it, at the pointer); ``as_left`` is the mirror as they left it.
    Then, each from ``as_left``, five publishes killed at random instants."""
    tmp = tmp_path_factory.mktemp("killed")
    s, mirror = tmp / "fleet.duckdb", tmp / "mirror"
    store.ingest_path(s, _variant(tmp / "v1"), source="a")
    parquet_mirror.publish(s, mirror)
    before = (mirror / POINTER).read_bytes()
    rows_before = _mirror_rows(mirror)
    shutil.copy(s, tmp / "before.duckdb")  # the store as the mirror holds it
    store.ingest_path(s, _variant(tmp / "v2", drop_spans_of=("sample-startup-failure",), end_running=True), source="a")
    store.ingest_path(s, _variant(tmp / "v3"), source="b")
    left = {}
    for point in ("fsync-1", RENAMED, "pointer"):
        _kill_publish(s, mirror, point, tmp)
        assert (mirror / POINTER).read_bytes() == before, point
        left[point] = sorted(p.name for p in mirror.iterdir())
    as_left = tmp / "as-left"
    shutil.copytree(mirror, as_left)
    outcomes = []
    rng = random.Random(28)
    for _ in range(5):
        shutil.rmtree(mirror)
        shutil.copytree(as_left, mirror)
        _kill_publish(s, mirror, "random", tmp, delay=rng.uniform(0.0, 0.5))
        doc = json.loads((mirror / POINTER).read_text())
        outcomes.append(doc["published_id"])
        # the pointer is the previous one or the complete new one, and every folder it names reads back complete
        assert doc["published_id"] in (1, 3)
        rows = _mirror_rows(mirror)
        assert {t: f.height for t, f in rows.items()} == doc["rows"]
        if doc["published_id"] == 1:
            _same_rows(rows, rows_before)
            assert (mirror / POINTER).read_bytes() == before
        else:
            _same_rows(rows, _store_rows(s))
    shutil.rmtree(mirror)
    shutil.copytree(as_left, mirror)
    return {"store": s, "mirror": mirror, "before": tmp / "before.duckdb", "left": left, "outcomes": outcomes}


def test_a_killed_publish_leaves_the_previous_state_and_the_next_repairs_it(killed, tmp_path):
    s = killed["store"]
    mirror = tmp_path / "mirror"
    shutil.copytree(killed["mirror"], mirror)
    left = killed["left"]
    # what each kill left: a temporary folder; a complete folder the pointer does not name; a temporary pointer
    assert any(n.startswith(".tmp-ingest-2-") for n in left["fsync-1"]) and "ingest-2" not in left["fsync-1"]
    assert "ingest-2" in left[RENAMED] and "ingest-3" not in left[RENAMED]
    assert any(n.startswith(".tmp-CURRENT.json-") for n in left["pointer"]) and "ingest-3" in left["pointer"]
    print("published id after each random kill:", killed["outcomes"])
    folder, note = parquet_mirror.for_reading(s)
    assert folder == killed["mirror"].resolve() and "holds the store up to ingest 1, the store is at 3" in note
    published = parquet_mirror.publish(s, mirror)
    assert (published.previous_id, published.published_id, published.folders) == (1, 3, [2, 3])
    assert sorted(p.name for p in mirror.iterdir()) == [".lock", POINTER, "ingest-1", "ingest-2", "ingest-3"]
    _same_rows(_mirror_rows(mirror), _store_rows(s))


# ----------------------------------------------------------------------------- Spark on the mirror
# Spark is slow to open a trace and to run each query on one machine (seconds each, more under load): the tests below
# open a mirror three times in all and ask each open only for the frames it is there to compare.


@pytest.fixture(params=["spark", "connect"], ids=["spark-master", "spark-connect"])
def session(request):
    """The mirror tests run on the project's cluster as an application of its ``spark://`` master, and through its
    Spark Connect server (``sc://``: the mirror's pointer listed and read by DataFrames on the server): the Slurm
    campaign's store on both, the other two tests on one each (conftest's ``on_one_kind``)."""
    from ettcore.engines import spark as sp

    s = use_session(request, request.param)
    assert s.conf.get("spark.master").startswith("spark://127.0.0.1:")  # what ran the queries: the cluster
    assert sp.master_of(s).startswith("spark://" if request.param == "spark" else "sc://")
    return s


def _figures(t, by: str) -> dict[str, pl.DataFrame]:
    """The per-job, fleet, by-group and daily trend frames."""
    return {
        "jobs": metric.job_summary(t),
        "fleet": metric.fleet_summary(t),
        "by": metric.fleet_summary(t, by=by),
        "day": metric.trend(t, "day"),
    }


def _assert_figures(duck: dict, spark: dict) -> None:
    for k in duck:
        assert_same(duck[k], spark[k])


def _on_spark(session, where, **kw) -> object:
    from ettcore.engines import spark as sp

    return engines.open_trace(str(where), engine="spark", spark_master=sp.master_of(session), **kw)


@needs_spark
@pytest.mark.spark
def test_slurm_campaign_store_same_on_spark(session, tmp_path):
    """The bundled Slurm campaign (46 jobs, causes, labels) as a store: the measuring commands' way in with
    --engine spark (the store file finds its mirror) gives the store's frames."""
    from ettcore.cli.measure_options import open_measured
    from ettcore.engines.spark.mirror import MirrorSparkTrace

    s, mirror = tmp_path / "fleet.duckdb", tmp_path / "mirror"
    assert cli.main(["ingest", str(s), str(DATA_DIR / "slurm-fleet" / "trace"), "--parquet", str(mirror)]) == 0
    from ettcore.engines import spark as sp

    master = sp.master_of(session)
    args = cli.build_parser().parse_args(["summarize", str(s), "--engine", "spark", "--spark-master", master])
    spark, duck = open_measured(args), store.open_store(s)
    assert isinstance(spark, MirrorSparkTrace) and spark.trace.pointer["store"] == str(s.resolve())
    assert spark.trace.labels == duck.labels and spark.as_of_ms == duck.as_of_ms == 1796126806000
    assert spark.trace.accounting == duck.accounting  # every table's rows, rank_timing's (none here) too
    figures = _figures(spark, by="partition")
    _assert_figures(_figures(duck, by="partition"), figures)
    assert figures["jobs"].height == 46


@needs_spark
@pytest.mark.spark
@on_one_kind("connect")
def test_batches_of_several_sources_same_on_spark(session, batches, tmp_path):
    """Replaced jobs (one without spans now), the same ids from two sources with different horizons (a's running job
    ended later than b's is seen), a removed source, and beside the published folders a half-written one and one the
    pointer does not name: Spark on the mirror, given as a URI, gives the store's frames."""
    s, mirror = batches["store"], tmp_path / "mirror"
    shutil.copytree(batches["mirror"], mirror)
    # a folder of a later refresh, complete but never named by the pointer, and one still under its temporary name;
    # each holds source b's four jobs again (they would count twice) and a spans file cut short
    for name in ("ingest-6", ".tmp-ingest-7-x"):
        shutil.copytree(mirror / "ingest-3", mirror / name)
        (mirror / name / "spans.parquet").write_bytes((mirror / name / "spans.parquet").read_bytes()[:100])
    spark, duck = _on_spark(session, "file://" + str(mirror.resolve())), store.open_store(s)
    figures = _figures(spark, by="source")
    _assert_figures(_figures(duck, by="source"), figures)
    jobs = figures["jobs"]
    # by hand: sources a and b, four jobs each; c was removed; a's running job ended at 06:00 (8 h, completed)
    sample = ("sample-preempted", "sample-running", "sample-startup-failure", "worked-example")
    assert jobs["job_id"].to_list() == [f"{src}/{j}" for src in "ab" for j in sample]
    row = jobs.filter(pl.col("job_id") == "a/sample-running").row(0, named=True)
    assert (row["status"], row["wall_s"], row["source"]) == ("completed", 8 * 3600.0, "a")
    # b's running job to b's own horizon (its latest instant, 2026-01-06T04:00Z: 6 h), not to a's later 06:00
    row = jobs.filter(pl.col("job_id") == "b/sample-running").row(0, named=True)
    assert (row["status"], row["wall_s"]) == ("running", 6 * 3600.0)
    assert spark.trace.horizons == {"a": 1767679200000, "b": 1767672000000}
    assert figures["by"]["source"].to_list() == ["a", "b"]
    # another store's mirror with a folder changed since the pointer named it: an error, not other figures
    other, changed = tmp_path / "other.duckdb", tmp_path / "changed"
    store.ingest_path(other, SAMPLE_TRACE)
    parquet_mirror.publish(other, changed)
    shutil.copy(mirror / "ingest-4" / "spans.parquet", changed / "ingest-1" / "spans.parquet")
    with pytest.raises(InputError, match="hold other rows than its CURRENT.json says"):
        _on_spark(session, changed)
    # that open replaced the session's views (its 4 jobs); the first trace registers its own again (as when it is
    # used after another trace), its 8 jobs
    spark.register_inputs()
    assert session.table("typed_jobs").count() == 8


@needs_spark
@pytest.mark.spark
@on_one_kind("spark")
def test_after_a_killed_publish_spark_reads_the_previous_state(session, killed, tmp_path):
    """The mirror as the kills left it (folder 1 named; folders 2 and 3 and a new pointer not): Spark reads the
    store as it was at refresh 1.  Read with another analysis time and a window, which Spark applies to the mirror's
    rows as the store's reader does to its rows (attributing again)."""
    mirror = tmp_path / "mirror"
    shutil.copytree(killed["mirror"], mirror)
    when = {"as_of": "2026-01-06T02:00:00Z", "since": "2026-01-05T01:30:00Z"}
    before, spark = store.open_store(killed["before"], **when), _on_spark(session, mirror, **when)
    assert before.recomputed and spark.not_started == before.not_started
    assert spark.trace.pointer["published_id"] == 1
    assert_same(metric.job_summary(before), metric.job_summary(spark))
    assert_same(metric.fleet_summary(before, by="team"), metric.fleet_summary(spark, by="team"))
