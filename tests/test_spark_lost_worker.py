"""A Spark worker lost in the middle of a query: ``ett summarize STORE --engine spark --spark-master spark://...``.

On a cluster of its own (``tools/spark/start.sh`` in a state folder of this test, stopped at its end: killing a
worker of the shared cluster would fail the other Spark tests), the command runs on Spark; once the application's
executor on ``worker1`` runs a task of the query (a thread of its task pool is there; 30 s after it started where
none is seen), the test SIGKILLs ``worker1``'s JVM and that executor's JVM.  The answer must equal the reference,
the same command on the store with DuckDB (Spark on a store's mirror gives DuckDB's answers: test_store_spark), as
Spark runs the lost tasks again on ``worker2``; or the command must fail with one clear line (exit 2, no traceback):
never a partial answer.  The fleet is SYNTHETIC (``ettcore.synthetic.generator``, scenario ``fleet``), in a store
with a Parquet mirror (what Spark reads), large enough that the command runs on Spark for a minute or more on 2
cores (the limits are generous: 15 minutes a command, for a loaded machine).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SPARK_TEST_JVM, assert_same_answer, own_spark_cluster  # tests/conftest.py

from ettcore.synthetic.generator import generate

ROOT = Path(__file__).resolve().parent.parent
ETT = [sys.executable, "-m", "ettcore.cli"]


def _java_in(folder: Path) -> list[int]:
    """The JVMs working in ``folder`` (a worker's executors run in its work folder)."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if os.readlink(p / "exe").endswith("/java") and os.readlink(p / "cwd").startswith(str(folder) + "/"):
                found.append(int(p.name))
        except OSError:
            continue
    return found


def _running_task(executors: list[int]) -> bool:
    """Whether one of the executor JVMs ``executors`` runs (or ran, within the minute its idle threads are kept) a
    task: a thread of its task pool, which Spark names ``Executor task launch worker for task ...`` (Linux keeps the
    first 15 characters)."""
    for pid in executors:
        for comm in Path(f"/proc/{pid}/task").glob("*/comm"):
            try:
                if comm.read_text().startswith("Executor task"):
                    return True
            except OSError:
                continue
    return False


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory):
    from ettcore.engines import spark as sp

    if not sp.spark_available():
        pytest.skip("pyspark or Java not installed")
    folder = tmp_path_factory.mktemp("lost-worker-cluster")
    with own_spark_cluster(folder) as ports:
        yield folder, ports


@pytest.mark.spark
@pytest.mark.slow
def test_a_worker_killed_mid_query_gives_the_same_answer_or_one_line(own_cluster, tmp_path):
    folder, ports = own_cluster
    trace, s = tmp_path / "fleet", tmp_path / "fleet.duckdb"
    generate("fleet", trace, n_jobs=800, seed=5, chunk_jobs=1000)
    made = subprocess.run(
        [*ETT, "ingest", str(s), str(trace), "--parquet", str(tmp_path / "mirror")], capture_output=True
    )
    assert made.returncode == 0, made.stderr
    # the reference: DuckDB on the store; Spark reads the store's Parquet mirror
    ref = subprocess.run([*ETT, "summarize", str(s), "--json"], capture_output=True, text=True, timeout=900)
    assert ref.returncode == 0, ref.stderr
    args = [*ETT, "summarize", str(s), "--engine", "spark", "--spark-master", ports["SPARK_MASTER_URL"], "--json"]
    old = set(_java_in(folder / "worker1"))
    t0 = time.monotonic()
    out_file, err_file = tmp_path / "out.json", tmp_path / "err.txt"  # files, not pipes: nothing blocks the command
    with out_file.open("w") as o, err_file.open("w") as e:
        # the command's driver and executors with the Spark tests' JVM options (pyspark reads its launch arguments)
        jvm = " ".join(f"--conf spark.{x}.extraJavaOptions='{SPARK_TEST_JVM}'" for x in ("driver", "executor"))
        env = {**os.environ, "PYSPARK_SUBMIT_ARGS": f"{jvm} pyspark-shell"}
        p = subprocess.Popen(args, stdout=o, stderr=e, text=True, env=env)
    # the kill comes once the application's executor on worker1 runs a task of the query (a thread of its task
    # pool); should none be seen, 30 s after the executor started; either way while the command runs (the line the
    # test prints says which)
    executors: list[int] = []
    seen = None
    while True:
        assert p.poll() is None, f"the command ended before its executor on worker1 ran: {err_file.read_text()[-2000:]}"
        assert time.monotonic() - t0 < 540, "no executor of the command ran on worker1 within 540 s"
        executors = executors or [j for j in _java_in(folder / "worker1") if j not in old]
        if executors:
            seen = seen or time.monotonic()
            if _running_task(executors) or time.monotonic() - seen > 30:
                break
        time.sleep(0.1)
    assert p.poll() is None, "the query ended before the kill: give it more jobs"
    how = "running tasks" if _running_task(executors) else "started, no task seen in 30 s"
    worker = int((folder / "run" / "worker1.pid").read_text())
    for pid in [worker, *executors]:
        os.kill(pid, signal.SIGKILL)
    p.wait(timeout=900)
    out, err = out_file.read_text(), err_file.read_text()
    print(
        f"killed worker1 (JVM {worker}, executors {executors}: {how}) {time.monotonic() - t0:.1f} s after the "
        f"start: exit {p.returncode}"
    )
    if p.returncode == 0:  # Spark ran the lost tasks again: the same answer
        got, want = json.loads(out), json.loads(ref.stdout)
        assert got.pop("input") == {**want.pop("input"), "engine": "spark", "spark_master": ports["SPARK_MASTER_URL"]}
        assert_same_answer(got, want)
    else:
        lines = err.strip().splitlines()
        assert p.returncode == 2 and "Traceback" not in err, err[-3000:]
        assert len(lines) == 1 and lines[0].startswith("ett: "), err[-3000:]


class Py4JJavaError(Exception):
    """Stands in for py4j's error of a failed Spark call: a class of a py4j module, with Spark's text."""


Py4JJavaError.__module__ = "py4j.protocol"
ABORTED = (
    "An error occurred while calling o412.collectToPython.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 7.0 failed 4 times, most "
    "recent failure: Lost task 1.3 in stage 7.0 (TID 31) (127.0.0.1 executor 2): ExecutorLostFailure (executor 2 "
    "exited caused by one of the running tasks) Reason: Remote RPC client disassociated.\n"
    "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)"
)


def test_a_failed_spark_job_is_one_line_and_a_bug_is_not():
    """A Spark job the cluster failed (what a worker lost beyond the tasks' retries gives) is one line naming the
    input; an error of another kind, or of Spark but no failed job, is not turned into one (a bug keeps its
    traceback)."""
    from ettcore.engines.spark import job_failure

    got = job_failure(Py4JJavaError(ABORTED), "fleet.duckdb")
    assert got is not None
    line = got.problems[0].line()
    assert "\n" not in line and line.startswith("fleet.duckdb: the Spark job failed on the cluster, no answer given")
    assert "Job aborted due to stage failure: Task 1 in stage 7.0 failed 4 times" in line
    assert job_failure(RuntimeError(ABORTED), "fleet.duckdb") is None
    assert job_failure(Py4JJavaError("An error occurred while calling o1.sql: AnalysisException"), "x") is None
