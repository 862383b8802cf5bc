"""Real Slurm: jobs submitted with ``sbatch`` to the project's cluster, their real ``sacct`` records imported.

No mocked Slurm and no recorded output: the cluster is the one ``.ci/run`` starts
(``SLURM_CONF`` in the environment), or one this module starts itself with
``tools/slurm/start.sh`` in a temporary folder (and stops afterwards).  Where
neither can run (no Slurm packages, not root) the tests are skipped, saying why.

One scenario, about two minutes, exercising what the importer maps (each job is
``tests/slurm/tiny_job.py``, instrumented with the recorder, no PyTorch):

- ``done``: completes;
- ``crash``: exits with the RequeueExit status at step 10, Slurm requeues it
  (``REQUEUED``), the second run resumes from its checkpoint and completes;
- ``arr``: a job array of two tasks;
- ``long``: trains until the test releases it; preempted by a high-priority job
  that needs the whole node (``PREEMPTED``), requeued, then on the node when it
  is set ``DOWN`` (``NODE_FAIL``), requeued again, released, and completes;
- ``norq``: ``--no-requeue``, on the node when it goes down: ``NODE_FAIL``, ends there;
- ``held``: submitted to start in an hour and cancelled: never ran (left out, reported).

Then both documented exports, the import of each with the recorder folder,
and the cross-check of :mod:`tests.slurm_oracle`.

It is one test (the checks inside it are reported together): one cluster and
one scenario, whichever xdist worker runs it.  (An ``xdist_group`` does not keep
tests on one worker with this pytest and pytest-xdist, so module fixtures could
start a second cluster.)  A cluster started here takes free ports (start.sh
picks them and writes them into its slurm.conf), so it runs beside any other.
The cluster of ``SLURM_CONF`` is shared: :func:`cluster` lets one scenario at a
time use it (a lock file; tests/test_store_slurm_live.py uses it too), since
each scenario plans on the node's slots and preempts what runs there.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
import slurm_oracle  # tests/slurm_oracle.py

from ettcore.config import PROJECT_ROOT
from ettcore.importers.frames import write_import
from ettcore.importers.slurm import export_commands, import_sacct

START = PROJECT_ROOT / "tools" / "slurm" / "start.sh"
STOP = PROJECT_ROOT / "tools" / "slurm" / "stop.sh"
JOB = PROJECT_ROOT / "tests" / "slurm" / "tiny_job.py"
REQUEUE_EXIT = 42

pytestmark = pytest.mark.slurm


def _why_no_slurm() -> str | None:
    for b in ("sbatch", "sacct", "slurmctld", "slurmd", "slurmdbd", "munged", "mariadbd"):
        if shutil.which(b) is None and not Path("/usr/sbin", b).exists():
            return (
                f"Slurm cannot run here: {b} is not installed (apt-get install slurm-wlm slurmdbd slurm-client munge "
                "mariadb-server slurm-wlm-basic-plugins slurm-wlm-mysql-plugin; .ci/run does)"
            )
    if os.geteuid() != 0:
        return "Slurm cannot run here: tools/slurm/start.sh needs root (munge runs as its own user, slurmd as root)"
    return None


def _sinfo_ok(env: dict) -> bool:
    try:
        return subprocess.run(["sinfo", "-h"], env=env, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@contextmanager
def _one_at_a_time(conf: str):
    """Hold the shared cluster of ``conf`` for one scenario (other processes' scenarios wait for it)."""
    lock = Path(tempfile.gettempdir()) / f"ett-slurm-{hashlib.sha256(conf.encode()).hexdigest()[:12]}.lock"
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextmanager
def cluster():
    """Environment (SLURM_CONF) of a running cluster: the one in the environment (one scenario at a time), else one
    started here."""
    env = dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/sbin")
    if env.get("SLURM_CONF") and _sinfo_ok(env):
        with _one_at_a_time(env["SLURM_CONF"]):
            yield env
        return
    why = _why_no_slurm()
    if why:
        pytest.skip(why)
    # not under pytest's temporary folder: munge and MariaDB run as their own users and must reach the state folder
    state = Path(tempfile.mkdtemp(prefix="ett-slurm-test-"))
    state.chmod(0o755)
    env.update(ETT_SLURM_DIR=str(state))
    env.pop("ETT_SLURM_PORT", None)  # free ports, chosen by start.sh
    t = time.time()
    out = subprocess.run([str(START), "--fresh"], env=env, capture_output=True, text=True, timeout=1200)
    if out.returncode != 0:  # start.sh has stopped what it started; the state folder goes too
        subprocess.run([str(STOP), "--purge"], env=env, capture_output=True, timeout=300)
        pytest.fail(f"tools/slurm/start.sh failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    print(f"started a Slurm cluster in {time.time() - t:.1f} s: {out.stdout.strip().splitlines()[-2]}")
    env["SLURM_CONF"] = subprocess.run(
        [str(START), "--conf"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        yield env
    finally:
        stop = subprocess.run([str(STOP), "--purge"], env=env, capture_output=True, text=True, timeout=300)
        assert stop.returncode == 0, f"tools/slurm/stop.sh left something running:\n{stop.stdout}\n{stop.stderr}"


@contextmanager
def fresh_nodes(name: str, nodes: int = 3):
    """A fresh cluster of ``nodes`` node daemons of its own (``ETT_SLURM_NODES``, free ports) for a campaign driver:
    ``SLURM_CONF`` and ``PATH`` set in ``os.environ`` while it runs (the drivers read them), the environment given
    back and the cluster stopped and purged after."""
    why = _why_no_slurm()
    if why:
        pytest.skip(why)
    state = Path(tempfile.mkdtemp(prefix=f"ett-slurm-test-{name}-"))
    state.chmod(0o755)
    env = dict(os.environ, ETT_SLURM_DIR=str(state), ETT_SLURM_NODES=str(nodes), PATH=os.environ["PATH"] + ":/usr/sbin")
    env.pop("ETT_SLURM_PORT", None)
    env.pop("SLURM_CONF", None)
    out = subprocess.run([str(START), "--fresh"], env=env, capture_output=True, text=True, timeout=600)
    saved = dict(os.environ)
    try:
        assert out.returncode == 0, f"tools/slurm/start.sh failed:\n{out.stdout}\n{out.stderr}"
        os.environ.update(SLURM_CONF=str(state / "etc" / "slurm.conf"), PATH=env["PATH"])
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        stop = subprocess.run([str(STOP), "--purge"], env=env, capture_output=True, text=True, timeout=300)
        assert stop.returncode == 0, f"tools/slurm/stop.sh left something running:\n{stop.stdout}\n{stop.stderr}"


def _sh(env: dict, *cmd: str) -> str:
    out = subprocess.run(list(cmd), env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"{' '.join(cmd)} failed: {out.stderr}"
    return out.stdout


def _states(env: dict) -> dict[str, tuple[str, int]]:
    """JobID -> (state, seconds running) of every job the controller lists."""
    jobs = {}
    for line in _sh(env, "squeue", "-h", "-o", "%i|%T|%M").splitlines():
        jid, state, el = line.split("|")
        secs = 0
        for x in el.replace("-", ":").split(":"):
            secs = secs * 60 + int(x)
        jobs[jid] = (state, secs)
    return jobs


def _running(env: dict, jid: str, seconds: int) -> bool | None:
    """Job ``jid`` has been running at least ``seconds``; ``None`` once the controller no longer lists it."""
    st = _states(env).get(jid)
    if st is None:
        return None
    return st[0] == "RUNNING" and st[1] >= seconds


def _wait(cond, what: str, timeout: float = 600.0, env: dict | None = None, work: Path | None = None) -> None:
    """Poll ``cond`` (``None``: it can no longer come true); on a failure say what Slurm shows (queue, accounting,
    output)."""
    t = time.time()
    while not (ok := cond()):
        if ok is None or time.time() - t > timeout:
            detail = ""
            if env is not None:
                q = subprocess.run(["squeue", "-o", "%i %j %T %r %M"], env=env, capture_output=True, text=True).stdout
                a = subprocess.run(
                    ["sacct", "-D", "-X", "-o", "JobID,JobName,State,ExitCode,Start,End"],
                    env=env,
                    capture_output=True,
                    text=True,
                ).stdout
                detail += f"\nsqueue:\n{q}\nsacct:\n{a}"
            if work is not None:
                for log in sorted((work / "logs").glob("*.out")):
                    detail += f"\n--- {log.name}:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-6:])
            why = "it can no longer happen" if ok is None else f"timed out after {timeout:.0f} s"
            raise AssertionError(f"{why} waiting for {what}{detail}")
        time.sleep(0.5)


@contextmanager
def scenario(env: dict):
    """Run the scenario on the cluster; the exports and the recorder files are in ``work``."""
    # the jobs write here as root; kept out of pytest's folder, which other pytest runs may prune
    work = Path(tempfile.mkdtemp(prefix="ett-slurm-work-"))
    try:
        (work / "logs").mkdir()
        py = sys.executable
        base = [
            "sbatch",
            "--parsable",
            "--cpus-per-task=1",
            "--gres=gpu:1",
            "--time=10",
            f"--output={work}/logs/%x-%j.out",
            "--open-mode=append",
            f"--export=ALL,PYTHONPATH={PROJECT_ROOT}",
        ]
        node = _sh(env, "sinfo", "-h", "-o", "%N").split()[0]
        t0 = time.time()
        export_start = datetime.fromtimestamp(t0 - 60).replace(microsecond=0).isoformat()

        def submit(name: str, *args: str, wrap: str) -> str:
            return (
                _sh(env, *base, f"--job-name={name}", *args, f"--wrap=exec {py} {JOB} {work} {wrap}")
                .strip()
                .split(";")[0]
            )

        ids = {
            "done": submit("done", wrap="10 0.2"),
            "crash": submit("crash", wrap=f"20 0.2 10 {REQUEUE_EXIT}"),
            "arr": submit("arr", "--array=0-1", wrap="5 0.2"),
            "long": submit("long", wrap=f"60 0.1 0 0 {work}/release-long"),  # trains until the test releases it
            "held": submit("held", "--begin=now+3600", wrap="1 0.1"),
        }
        _sh(env, "scancel", ids["held"])
        # the first three finished, `long` running: a high-priority job needing the whole node preempts it
        first = (ids["done"], ids["crash"], ids["arr"])
        _wait(lambda: not any(j.split("_")[0] in first for j in _states(env)), "done, crash, arr", env=env, work=work)
        _wait(lambda: _running(env, ids["long"], 3), "long running", env=env, work=work)
        cpus = _sh(env, "sinfo", "-h", "-n", node, "-o", "%c").split()[0]
        ids["urgent"] = _sh(
            env,
            *base[:2],
            f"--cpus-per-task={cpus}",
            "--gres=gpu:1",
            "--partition=high",
            "--job-name=urgent",
            "--time=5",
            f"--output={work}/logs/%x-%j.out",
            f"--export=ALL,PYTHONPATH={PROJECT_ROOT}",
            f"--wrap=exec {py} {JOB} {work} 5 0.2",
        ).strip()
        _wait(lambda: ids["urgent"] not in _states(env), "urgent done", env=env, work=work)
        # `long` back on the node (second run) with `norq` beside it: the node fails under both
        _wait(lambda: _running(env, ids["long"], 3), "long rerun", env=env, work=work)
        ids["norq"] = submit("norq", "--no-requeue", wrap=f"60 0.1 0 0 {work}/never")
        _wait(lambda: _running(env, ids["norq"], 2), "norq running", env=env, work=work)
        _sh(env, "scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=test node failure")
        time.sleep(2)
        _sh(env, "scontrol", "update", f"NodeName={node}", "State=RESUME")
        (work / "release-long").write_text("")  # its third run may finish
        _wait(
            lambda: not any(j.split("_")[0] in ids.values() for j in _states(env)),
            "every job ended",
            env=env,
            work=work,
        )
        # the accounting reaches slurmdbd a moment after the controller
        cmds = export_commands(export_start)
        text_env = dict(env, SLURM_TIME_FORMAT="%s")
        mine = set(ids.values())

        def exported() -> bool:
            rows = slurm_oracle.read_sacct_text(_write(work / "sacct.txt", _sh(text_env, *cmds["sacct.txt"])))
            ours = [j for j in rows.values() if j.rows[0]["JobIDRaw"] in mine or j.job_id.split("_")[0] in mine]
            return len(ours) >= 6 and all(slurm_oracle.ended(j) for j in ours if j.job_id != ids["held"])

        _wait(exported, "sacct to show every job ended", timeout=120, env=env, work=work)
        _write(work / "sacct.json", _sh(env, *cmds["sacct.json"]))
        elapsed = time.time() - t0
        print(f"slurm scenario: {elapsed:.0f} s")
        yield {"work": work, "ids": ids, "elapsed_s": elapsed}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


def import_both(scenario: dict, out_root: Path) -> dict:
    work = scenario["work"]
    out = {}
    for form in ("sacct.txt", "sacct.json"):
        frames, report = import_sacct([work / form], recorder_dir=work / "recorder")
        out[form] = (frames, report, write_import(out_root / form.replace(".", "-") / "trace", frames, report))
    return out


def test_real_slurm(tmp_path):
    """sbatch, sacct, ett import slurm: every check below on one real scenario; all failures reported together."""
    with cluster() as env, scenario(env) as sc:
        imported = import_both(sc, tmp_path)
        failures = []
        for check in (
            both_forms_give_the_same_trace,
            cross_check_against_sacct,
            every_recorded_span_inside_its_run,
            what_slurm_did_is_in_the_trace,
            cli_on_the_real_export,
        ):
            try:
                check(sc, imported, tmp_path)
            except AssertionError as exc:
                failures.append(f"{check.__name__}: {exc}")
        assert not failures, "\n".join(failures)


def both_forms_give_the_same_trace(scenario, imported, tmp_path):
    (a, _, _), (b, _, _) = imported["sacct.txt"], imported["sacct.json"]
    same = [c for c in a.attempts.columns if c != "cause"]
    assert a.attempts.select(same).equals(b.attempts.select(same))
    # the causes agree except where Slurm 22.05's JSON form writes no exit code: a FAILED run's non-zero exit is a
    # user error in the text form and unknown in the JSON form (docs/slurm.md, "Causes")
    ca = a.attempts["cause"].to_list() if "cause" in a.attempts.columns else [None] * a.attempts.height
    cb = b.attempts["cause"].to_list() if "cause" in b.attempts.columns else [None] * b.attempts.height
    assert all(x == y or (x == "user_error" and y == "unknown") for x, y in zip(ca, cb)), list(zip(ca, cb))
    assert a.spans.equals(b.spans)
    assert a.jobs.equals(b.jobs)


def cross_check_against_sacct(scenario, imported, tmp_path):
    trace = imported["sacct.txt"][2]
    table, diffs = slurm_oracle.cross_check(scenario["work"] / "sacct.txt", trace)
    print(slurm_oracle.format_table(table))
    assert not diffs, diffs
    assert table["runs"][0] >= 6  # done, crash, arr x2, long, urgent, norq (and any earlier jobs in the window)


def every_recorded_span_inside_its_run(scenario, imported, tmp_path):
    frames, report, trace = imported["sacct.txt"]
    assert slurm_oracle.spans_outside(trace, scenario["work"] / "sacct.txt") == []
    # and the raw recorder spans, before any clipping, lie within the stated tolerance of their runs
    from ettcore.importers.recorder import collect

    raw = collect(scenario["work"] / "recorder").spans
    assert slurm_oracle.spans_outside(trace, scenario["work"] / "sacct.txt", tolerance_s=2.0, spans=raw) == []
    facts = report.files[-1].facts
    assert facts["outside their run beyond the tolerance (dropped)"] == 0
    assert (
        facts["in a run the accounting lacks (dropped)"] == 0 and facts["of a job the accounting lacks (dropped)"] == 0
    )
    assert facts["kept"] + facts["outside their run within the tolerance (dropped)"] == raw.height


def what_slurm_did_is_in_the_trace(scenario, imported, tmp_path):
    frames, report, trace = imported["sacct.txt"]
    ids = scenario["ids"]
    reasons = {j: a.sort("attempt")["end_reason"].to_list() for (j,), a in frames.attempts.group_by("job_id")}
    assert reasons[ids["done"]] == ["completed"]
    assert reasons[ids["crash"]] == ["failure", "completed"]  # REQUEUED by RequeueExit, then done
    assert reasons[ids["long"]] == ["preemption", "failure", "completed"]  # PREEMPTED, NODE_FAIL, done
    assert reasons[ids["norq"]] == ["failure"]  # NODE_FAIL, not requeued
    assert reasons[ids["urgent"]] == ["completed"]
    assert reasons[f"{ids['arr']}_0"] == reasons[f"{ids['arr']}_1"] == ["completed"]
    assert ids["held"] not in reasons and f"{ids['held']} (CANCELLED)" in report.to_markdown()
    jobs = {r["job_id"]: r for r in frames.jobs.iter_rows(named=True)}
    assert jobs[f"{ids['arr']}_1"]["array_job_id"] == ids["arr"] and jobs[f"{ids['arr']}_1"]["array_task_id"] == "1"
    assert jobs[ids["long"]]["slurm_state"] == "COMPLETED" and jobs[ids["norq"]]["slurm_state"] == "NODE_FAIL"
    assert jobs[ids["done"]]["variant"] == "smoke" and jobs[ids["done"]]["gpus"] == 1
    # the recorder's attempt is SLURM_RESTART_COUNT: the rerun of `crash` loaded its checkpoint, the first run did not
    sp = frames.spans.filter(pl.col("job_id") == ids["crash"])
    assert sp.filter(pl.col("phase") == "checkpoint_load")["attempt"].to_list() == [1]
    assert sorted(set(sp.filter(pl.col("phase") == "train")["attempt"].to_list())) == [0, 1]


def cli_on_the_real_export(scenario, imported, tmp_path):
    work = scenario["work"]
    ett = [sys.executable, "-m", "ettcore.cli"]
    out = subprocess.run(
        ett
        + [
            "import",
            "slurm",
            str(work / "sacct.txt"),
            "--recorder",
            str(work / "recorder"),
            "--out",
            str(tmp_path / "t"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    s = subprocess.run(ett + ["summarize", str(tmp_path / "t")], capture_output=True, text=True)
    assert s.returncode == 0 and scenario["ids"]["long"] in s.stdout, s.stderr
