"""Real Slurm polled into a fleet store: ``ett ingest STORE --slurm`` every few seconds while jobs run.

No mock and no recorded output: the cluster is the one ``.ci/run`` starts (``SLURM_CONF``), or one started here by
``tools/slurm/start.sh`` (``tests/test_slurm_integration.py``'s ``cluster``); where Slurm cannot run the test is
skipped, saying why.  The jobs are ``sleep`` jobs of the account ``production`` (the polls and the final export
select it, so jobs of other tests on a shared cluster stay out):

- six jobs on a node of four slots: four run, two wait (PENDING);
- the first is requeued by hand (``scontrol requeue``: REQUEUED, then it waits out the credential expiry);
- a high-priority job needing the whole node preempts the low partition (PREEMPTED, requeued);
- everything then runs to the end.

A poller runs ``ett ingest STORE --slurm --accounts production --overlap 5s`` (first poll: ``--poll-since``) as a
process every 2 s from the first submission until every job has ended, then once more.  The test checks that some
polls saw jobs PENDING and some RUNNING (the states sacct gave each, as the poll prints them), that the polls' windows
moved on (a later poll read fewer jobs than the store holds), and that the store at the end equals a one-shot
import of the final full ``sacct`` export (the README's export command, the same account), figure by figure: per
job, fleet, by model, hourly, daily and weekly trends and a rolling window.

On the shared cluster of ``SLURM_CONF`` it waits for any other scenario using it (``cluster``'s lock: an
``xdist_group`` does not keep tests on one worker with this pytest and pytest-xdist, tried), since each scenario plans
on the node's four slots and this one preempts whatever runs in the low partition.  About a minute on 2 cores.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time

import pytest
import slurm_oracle  # tests/slurm_oracle.py
from test_slurm_integration import _running, _sh, _states, _wait, cluster  # tests/test_slurm_integration.py
from test_store import _assert_same, _figures  # tests/test_store.py

from ettcore import store
from ettcore.importers.frames import write_import
from ettcore.importers.sacct_poll import sacct_time
from ettcore.importers.slurm import export_commands, import_sacct
from ettcore.trace.load import load_trace

pytestmark = pytest.mark.slurm

ACCOUNT = "production"
ETT = [sys.executable, "-m", "ettcore.cli"]


def _seen(out: str) -> dict[str, int]:
    """The states a poll's first line says sacct gave (``...: COMPLETED 3, PENDING 2``)."""
    line = out.splitlines()[0]
    assert line.startswith("sacct at "), out
    return {s: int(n) for s, n in re.findall(r"\b([A-Z_]+) (\d+)\b", line.rsplit("): ", 1)[-1])}


def test_polls_while_jobs_wait_run_requeue_and_are_preempted(tmp_path):
    with cluster() as env:
        fleet = tmp_path / "fleet.duckdb"
        node = _sh(env, "sinfo", "-h", "-o", "%N").split()[0]
        cpus = _sh(env, "sinfo", "-h", "-n", node, "-o", "%c").split()[0]
        since = int(time.time()) - 1
        base = ["sbatch", "--parsable", f"--account={ACCOUNT}", "--gres=gpu:1", "--time=5", "--output=/dev/null"]
        poll = [*ETT, "ingest", str(fleet), "--slurm", "--accounts", ACCOUNT, "--overlap", "5s"]
        outputs: list[subprocess.CompletedProcess] = []
        stop = threading.Event()

        def poller() -> None:
            while not stop.is_set():
                first = [] if outputs else ["--poll-since", str(since)]
                outputs.append(subprocess.run([*poll, *first], env=env, capture_output=True, text=True, timeout=300))
                stop.wait(2)

        thread = threading.Thread(target=poller, daemon=True)
        ids: dict[str, str] = {}
        try:
            for k in range(6):
                ids[f"j{k}"] = _sh(
                    env, *base, "--requeue", "--cpus-per-task=1", f"--job-name=j{k}", "--wrap=sleep 15"
                ).strip()
            thread.start()
            _wait(lambda: _running(env, ids["j0"], 2), "j0 running", env=env)
            _sh(env, "scontrol", "requeue", ids["j0"])
            _wait(lambda: _states(env).get(ids["j4"], ("", 0))[0] == "RUNNING", "j4 running", env=env)
            ids["urgent"] = _sh(
                env, *base, "--partition=high", f"--cpus-per-task={cpus}", "--job-name=urgent", "--wrap=sleep 4"
            ).strip()
            _wait(lambda: not set(ids.values()) & set(_states(env)), "every job ended", timeout=400, env=env)
            n = len(outputs)
            _wait(lambda: len(outputs) >= n + 1, "a poll after the end", timeout=120)
        finally:
            stop.set()
            thread.join(timeout=300)
            if ids:  # (a failure above leaves nothing running on a shared cluster; ended jobs are not touched)
                subprocess.run(["scancel", *ids.values()], env=env, capture_output=True, timeout=60)
        # the accounting reaches slurmdbd a moment after the controller: the final export once every job has ended
        cmd = [*export_commands(sacct_time(since))["sacct.txt"], f"--accounts={ACCOUNT}"]
        final = tmp_path / "sacct.txt"

        def exported() -> bool:
            final.write_text(_sh(dict(env, SLURM_TIME_FORMAT="%s"), *cmd))
            jobs = slurm_oracle.read_sacct_text(final)
            return set(ids.values()) <= set(jobs) and all(slurm_oracle.ended(j) for j in jobs.values())

        _wait(exported, "sacct to show every job ended", timeout=120, env=env)
        outputs.append(subprocess.run(poll, env=env, capture_output=True, text=True, timeout=300))

    failed = [o for o in outputs if o.returncode != 0]
    assert not failed, f"{len(failed)} poll(s) failed: {failed[0].stderr}"
    seen = [_seen(o.stdout) for o in outputs]
    print("".join(o.stdout for o in outputs))  # what every poll printed (pytest -s)
    assert any(s.get("PENDING", 0) for s in seen), seen
    assert any(s.get("RUNNING", 0) for s in seen), seen
    assert any(s.get("REQUEUED", 0) for s in seen) and any(s.get("PREEMPTED", 0) for s in seen), seen
    # the windows moved on: a later poll read fewer jobs than the store holds (the rest were unchanged)
    assert min(int(re.search(r"; (\d+) job\(s\), ", o.stdout)[1]) for o in outputs[1:]) < len(ids), seen
    text = final.read_text()
    assert "REQUEUED" in text and "PREEMPTED" in text, text
    # the store at the end against a one-shot import of the final export, figure by figure
    frames, report = import_sacct([final])
    one = write_import(tmp_path / "one-shot", frames, report)
    _assert_same(_figures(store.open_store(fleet)), _figures(load_trace(one)))
