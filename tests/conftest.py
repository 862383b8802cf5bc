"""Shared fixtures (small traces written to temporary folders, one Spark session) and the test tiers.

The tiers (markers in ``pyproject.toml``; CONTRIBUTING.md says what each needs): ``make check`` runs what none of
``spark``, ``service``, ``framework``, ``notebook``, ``fuzz`` and ``slow`` marks; ``make test`` runs everything.
:func:`pytest_collection_modifyitems` marks whole files by :data:`TIERS` and derives the rest from the markers a test
already carries, so a new test file that starts a service or runs Spark is added to :data:`TIERS` once.
"""

from __future__ import annotations

import csv
import importlib.util
import math
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ettcore.config import SAMPLE_TRACE

# the check cache (ettcore.trace.check_cache) of the tests' own, never the user's
os.environ.setdefault("ETT_CACHE_DIR", tempfile.mkdtemp(prefix="ett-test-check-cache-"))

# Whole test files and the tiers they belong to (a test's own markers add more: see pytest_collection_modifyitems;
# a Spark test is one marked spark: make test runs those in one process of their own).
TIERS: dict[str, tuple[str, ...]] = {
    "test_monitoring_stack.py": ("service",),  # Prometheus, Alertmanager, node_exporter (tools/monitoring)
    "test_monitoring_e2e.py": ("service", "framework"),
    "test_grafana_dashboard.py": ("service",),
    "test_slurm_integration.py": ("service",),  # a real Slurm cluster (tools/slurm)
    "test_store_slurm_live.py": ("service",),
    "test_slurm_multinode.py": ("service",),
    "test_slurm_restarts.py": ("service",),
    "test_integration_hf.py": ("framework",),
    "test_integration_lightning.py": ("framework",),
    "test_integration_torchrun.py": ("framework",),
    "test_live_hangs.py": ("framework",),
    "test_slow_torchrun.py": ("framework",),
    "test_fuzz_importers.py": ("fuzz",),
    "test_fuzz_loaders.py": ("fuzz",),
    "test_store_faults.py": ("slow",),  # kills refreshes, compactions and removals at random instants (minutes)
    "test_store_full_disk.py": ("slow",),  # a full disk at every step of each store operation (about 60 `ett` runs)
}
# A marker a test carries -> the tiers it implies.
IMPLIED = {"torch": ("framework",), "slurm": ("service",)}


def pytest_collection_modifyitems(config, items):
    """Mark each test with its tiers: its file's (:data:`TIERS`) and those its markers imply (:data:`IMPLIED`)."""
    for item in items:
        tiers = set(TIERS.get(item.path.name, ()))
        for marker, implied in IMPLIED.items():
            if item.get_closest_marker(marker) is not None:
                tiers.update(implied)
        for tier in sorted(tiers - {m.name for m in item.iter_markers()}):
            item.add_marker(getattr(pytest.mark, tier))
    # The long tests first (a stable sort: each keeps its order), so pytest-xdist hands them out while the many short
    # ones remain to fill the workers in the end, instead of one worker running a minutes-long test alone at the end.
    items.sort(key=lambda item: not _long(item))


LONG_TIERS = ("service", "framework", "notebook", "fuzz", "slow", "spark")


def _long(item) -> bool:
    """A test of a tier that runs minutes (a service, a framework, ...), or a property test (hypothesis: many
    examples)."""
    return any(item.get_closest_marker(t) is not None for t in LONG_TIERS) or bool(
        getattr(getattr(item, "obj", None), "is_hypothesis_test", False)
    )


def needs(*packages: str, extra: str):
    """A skip mark: the tests need ``packages``, which the project's ``extra`` installs (``pip install -e
    '.[EXTRA]'``).  It looks for them without importing them, so collecting a test file costs nothing for a package
    only its tests use: every pytest process collects every file, in every tier, and importing Lightning takes
    seconds.  A test imports the package itself, where it uses it."""
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    why = f"needs the {extra} extra: pip install -e '.[{extra}]' (package {', '.join(missing)})"
    return pytest.mark.skipif(bool(missing), reason=why)


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test (for libraries that might phone home)."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


ATTEMPT_COLS = ["job_id", "attempt", "start", "end", "end_reason"]
SPAN_COLS = ["job_id", "attempt", "phase", "stage", "start", "end", "cursor_start", "cursor_end"]


def write_csv_trace(folder: Path, attempts: list[list], spans: list[list], jobs: list[list] | None = None) -> Path:
    """Write a CSV trace (rows as lists in the column order above; jobs: job_id, model, gpus)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, cols, rows in (("attempts", ATTEMPT_COLS, attempts), ("spans", SPAN_COLS, spans)):
        with open(folder / f"{name}.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(cols)
            w.writerows(rows)
    if jobs is not None:
        with open(folder / "jobs.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["job_id", "model", "gpus"])
            w.writerows(jobs)
    return folder


@pytest.fixture
def screen_guard(monkeypatch):
    """Every load in the test also runs the span checks the span store's screen skipped, and fails if they find a row.

    The screen (:mod:`ettcore.trace.span_store`) lets a load leave the span checks out when no row is suspect; a screen
    that missed a failing row would let bad data through silently.  Returns the list of (spans checked?, span findings).
    """
    from ettcore.trace import checks
    from ettcore.trace.queries import check_names

    real = checks.run_checks
    seen: list[tuple[bool, int]] = []

    def guarded(con, has_jobs=True, spans=True):
        got = real(con, has_jobs, spans)
        if not spans:
            full = checks.findings(con, has_jobs, spans=True)
            missed = full.filter(full["check"].is_in([n for n in check_names() if checks.is_span_check(n)]))
            assert missed.is_empty(), f"the span screen let through rows the span checks reject:\n{missed}"
        seen.append((spans, len([p for p in got if p.table == "spans"])))
        return got

    monkeypatch.setattr(checks, "run_checks", guarded)
    return seen


@pytest.fixture
def sample_trace() -> Path:
    return SAMPLE_TRACE


@pytest.fixture
def good_rows():
    """One valid job (epoch seconds): attempt 0 fails, attempt 1 completes."""
    attempts = [
        ["j1", 0, 1_700_000_000, 1_700_003_000, "failure"],
        ["j1", 1, 1_700_003_300, 1_700_007_200, "completed"],
    ]
    spans = [
        ["j1", 0, "hardware_setup", "", 1_700_000_000, 1_700_000_300, "", ""],
        ["j1", 0, "train", "", 1_700_001_200, 1_700_002_700, 0, 100],
        ["j1", 1, "checkpoint_load", "", 1_700_003_300, 1_700_003_500, "", ""],
        ["j1", 1, "train", "", 1_700_003_600, 1_700_006_600, 50, 350],
    ]
    return attempts, spans


# Settings of the Spark tests' sessions: tiny data, so one shuffle partition, no adaptive re-planning and no
# whole-stage code generation (it compiles slowly); through Spark Connect only those a session may set
SPARK_TEST_SQL_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
}
# The JVMs of the Spark tests' applications (driver and executors) and of a cluster a test starts: the serial
# collector and the JIT's quick compiler only. The data are tiny and each JVM lives minutes: the optimizing compiler's
# work never paid back the CPU it took from the tests on 2 cores (three Spark tests: 156 s -> 105 s, quiet machine).
SPARK_TEST_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
SPARK_TEST_CONF = {
    **SPARK_TEST_SQL_CONF,
    "spark.default.parallelism": "1",
    "spark.driver.extraJavaOptions": SPARK_TEST_JVM,
    # the driver's heap (Spark's default 1g): the store's mirror tests ran out of it in CI in local mode, after the
    # other Spark modules had run in the same JVM (a launch setting: the first session of a test process sets it)
    "spark.driver.memory": "2g",
    # the application's driver on the loopback interface, as the cluster's own services (tools/spark/start.sh)
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.executor.extraJavaOptions": f"-Djava.net.preferIPv4Stack=true {SPARK_TEST_JVM}",
    "spark.pyspark.python": sys.executable,  # the executors' Python workers: this interpreter, not python3 on PATH
}


def _ports(folder: Path) -> dict[str, str]:
    lines = (folder / "ports").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """The project's Spark standalone cluster and Spark Connect server (``tools/spark/start.sh``): the one running for
    ``$ETT_SPARK_DIR`` (CI starts it, as it starts Slurm), else one this test process starts in a folder of its own
    and stops at its end.  The URLs of its ``ports`` file (``SPARK_MASTER_URL``, ``SPARK_CONNECT_URL``,
    ``SPARK_MASTER_WEBUI``...).  Skips the Spark tests only where pyspark or Java is missing."""
    from ettcore.engines import spark as sp

    if not sp.spark_available():
        pytest.skip("pyspark or Java not installed")
    given = os.environ.get("ETT_SPARK_DIR")
    if given and (Path(given) / "ports").is_file():
        ports = _ports(Path(given))
        sp.check_reachable(ports["SPARK_MASTER_URL"])
        yield ports
        return
    with own_spark_cluster(tmp_path_factory.mktemp("spark-cluster")) as ports:
        yield ports


@contextmanager
def own_spark_cluster(folder: Path) -> Iterator[dict[str, str]]:
    """A Spark cluster of its own (``tools/spark/start.sh`` with the state folder ``folder``), its ``ports``; stopped
    and its folder purged on leaving."""
    import subprocess

    import pyspark

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "ETT_SPARK_DIR": str(folder), "SPARK_HOME": os.path.dirname(pyspark.__file__)}
    env.setdefault("ETT_SPARK_JAVA_OPTS", "-XX:TieredStopAtLevel=1")  # as .ci/run starts the shared one
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    start = subprocess.run([root / "tools/spark/start.sh", "--fresh"], env=env, capture_output=True, text=True)
    assert start.returncode == 0, start.stdout + start.stderr
    try:
        yield _ports(folder)
    finally:
        subprocess.run([root / "tools/spark/stop.sh", "--purge"], env=env, capture_output=True)


@pytest.fixture(scope="session")
def spark_session(spark_cluster):
    """The Spark tests' classic session: an application on the cluster's ``spark://`` master (driver here, executors
    on the two workers), for the whole test process."""
    from ettcore.engines import spark as sp

    s = sp.get_session(spark_cluster["SPARK_MASTER_URL"], SPARK_TEST_CONF)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def connect_session(spark_cluster):
    """A Spark Connect session on the cluster's Connect server (``sc://``), for the whole test process."""
    from ettcore.engines import spark as sp

    s = sp.get_session(spark_cluster["SPARK_CONNECT_URL"], SPARK_TEST_SQL_CONF)
    yield s
    s.stop()


def use_session(request, kind: str):
    """The Spark tests' session of that kind (``spark``: on the ``spark://`` master; ``connect``: through ``sc://``),
    asked for again through get_session, which makes pyspark build columns for that kind in this process (a test
    before may have used the other)."""
    from ettcore.engines import spark as sp

    s = request.getfixturevalue("spark_session" if kind == "spark" else "connect_session")
    return sp.get_session(sp.master_of(s))


SESSION_KINDS = {"spark": "spark-master", "connect": "spark-connect"}  # a Spark session's kind -> its test id


def on_one_kind(kind: str, fixture: str = "session"):
    """Run a test whose ``fixture`` is parametrized by both session kinds on ``kind`` only.

    Both kinds run the same SQL on the same cluster; what differs is the client: how rows and instants cross (Arrow
    through Spark Connect, py4j in the classic session), how parameters are bound, how small frames are created and
    how errors come back.  Tests of those run on both kinds; a test of a metric feature runs on one (some on each, so
    both clients see metric features), as each run of a command on Spark costs minutes of the 2-core CI machine."""
    return pytest.mark.parametrize(fixture, [kind], indirect=True, ids=[SESSION_KINDS[kind]])


@pytest.fixture(scope="session")
def spark_master(spark_session):
    """The ``spark://`` master the Spark tests' classic session runs on (what ``--spark-master`` is given)."""
    return spark_session.sparkContext.master


def assert_same_answer(a, b, where: str = "") -> None:
    """The same JSON answer, key by key and item by item; numbers to 1e-9 relative (Spark sums partitions in the
    order they finish), everything else exact; ``where`` names the path of a difference."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same_answer(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_answer(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (where, a, b)
    else:
        assert a == b, (where, a, b)
