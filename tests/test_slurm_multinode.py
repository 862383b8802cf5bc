"""The bundled multi-node campaign (data/slurm-multinode) checked without Slurm, and a live 2-node cluster.

The expected numbers are read off ``data/slurm-multinode/sacct.txt`` by hand (rows
quoted below as ``job: state Submit -> Start -> End, NodeList, gres/gpu``; times
are epoch seconds, written relative to 1796394000):

    1 pair-12           COMPLETED  20 -> 22 -> 82   node[1-2]  gpu 2
    2 pair-23           NODE_FAIL  20 -> 22 -> 45   node[2-3]  gpu 2
    3 pair-13           NODE_FAIL  20 -> 22 -> 45   node[1,3]  gpu 2
    4 solo-1            COMPLETED  20 -> 22 -> 82   node1      gpu 1
    5 solo-2            COMPLETED  20 -> 22 -> 82   node2      gpu 1
    6 solo-3            NODE_FAIL  20 -> 22 -> 45   node3      gpu 1
    7 solo-3-norequeue  NODE_FAIL  20 -> 22 -> 45   node3      gpu 1
    2 pair-23           COMPLETED  45 -> 62 -> 122  node[2-3]  gpu 2
    3 pair-13           COMPLETED  45 -> 62 -> 122  node[1,3]  gpu 2
    6 solo-3            COMPLETED  45 -> 62 -> 122  node3      gpu 1

Attempt 0 runs from Submit to End, a later attempt from Start to End
(docs/slurm.md); a k-node run of G GPUs holds G/k on each node (docs/metric.md).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest
from test_slurm_integration import STOP, _why_no_slurm  # tests/test_slurm_integration.py

from ettcore import bundled, cli, store
from ettcore.config import PROJECT_ROOT
from ettcore.importers.frames import write_import
from ettcore.importers.slurm import SACCT_FORMAT, import_sacct

MULTI = bundled.SLURM_MULTINODE
START = PROJECT_ROOT / "tools" / "slurm" / "start.sh"


def _nodes_json(trace: Path, capsys) -> dict:
    assert cli.main(["nodes", str(trace), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_node_failure_rows_imported():
    frames, report = import_sacct([MULTI / "sacct.txt"], relative_to=MULTI)
    a = frames.attempts.sort("job_id", "attempt")
    # 7 jobs, 10 runs; jobs 2, 3, 6 ran twice (NODE_FAIL then COMPLETED), job 7 once (NODE_FAIL, --no-requeue)
    assert frames.jobs.height == 7 and a.height == 10
    failed = a.filter(pl.col("end_reason") == "failure").select("job_id", "attempt", "nodes").rows()
    assert failed == [("2", 0, "node[2-3]"), ("3", 0, "node[1,3]"), ("6", 0, "node3"), ("7", 0, "node3")]
    assert a.filter(pl.col("attempt") == 1).select("job_id", "end_reason", "nodes").rows() == [
        ("2", "completed", "node[2-3]"),
        ("3", "completed", "node[1,3]"),
        ("6", "completed", "node3"),
    ]
    assert "rows by state: COMPLETED 6, NODE_FAIL 4" in report.to_markdown()


def test_bundled_trace_is_what_the_importer_gives(tmp_path):
    frames, report = import_sacct([MULTI / "sacct.txt"], relative_to=MULTI)
    trace = write_import(tmp_path / "trace", frames, report)
    for table in ("attempts", "spans", "jobs"):
        assert pl.read_parquet(MULTI / "trace" / f"{table}.parquet").equals(pl.read_parquet(trace / f"{table}.parquet"))
    meta = json.loads((MULTI / "trace" / "trace.json").read_text())
    assert meta["synthetic"] is False and meta["measured"] is True


@pytest.mark.parametrize("kept_in", ["trace", "store"])
def test_ett_nodes_on_the_campaign(kept_in, tmp_path, capsys):
    """The same figures from the trace and from a fleet store of it (which keeps the attempts' node lists)."""
    path = MULTI / "trace"
    if kept_in == "store":
        path = tmp_path / "fleet.duckdb"
        store.ingest_path(path, MULTI / "trace")
    doc = _nodes_json(path, capsys)
    rows = {r["node"]: r for r in doc["nodes"]}
    assert sorted(rows) == ["node1", "node2", "node3"]
    # interruptions: the 4 NODE_FAIL runs (cause unknown, counted), each 1/k on its k nodes:
    # node1: job 3 (1/2); node2: job 2 (1/2); node3: jobs 2, 3 (1/2 each), 6, 7 (1 each) = 3
    assert doc["counted"] == 4
    assert rows["node1"]["interruptions"] == 0.5
    assert rows["node2"]["interruptions"] == 0.5
    assert rows["node3"]["interruptions"] == 3.0
    # exposure, GPU-seconds (1 GPU a node in every run):
    # node1: job 1 62 (20->82) + job 3 25 (20->45) + 60 (62->122) + job 4 62 = 209
    # node2: job 1 62 + job 2 25 + 60 + job 5 62 = 209
    # node3: job 2 25 + 60 + job 3 25 + 60 + job 6 25 + 60 + job 7 25 = 280
    assert math.isclose(rows["node1"]["exposure_gpu_h"], 209 / 3600)
    assert math.isclose(rows["node2"]["exposure_gpu_h"], 209 / 3600)
    assert math.isclose(rows["node3"]["exposure_gpu_h"], 280 / 3600)
    assert math.isclose(doc["gpu_h"], 698 / 3600)
    assert (rows["node1"]["jobs"], rows["node1"]["attempts"]) == (3, 4)  # jobs 1, 3, 4; attempts 1, 3a0, 3a1, 4
    assert (rows["node3"]["jobs"], rows["node3"]["attempts"]) == (4, 7)  # jobs 2, 3, 6, 7
    # the test: node3 was in all 4 failures; its attempts held 2*25 + 2*60 + 2*25 + 2*60 + 25 + 60 + 25 = 450
    # GPU-seconds; expected = 4 * 450 / 698 = 2.5788; P(Poisson(2.5788) >= 4) = 0.2593 > 0.01 / 3: not flagged
    assert rows["node3"]["involved"] == 4
    assert math.isclose(rows["node3"]["expected"], 4 * 450 / 698)
    assert math.isclose(rows["node3"]["p_value"], 0.2593, abs_tol=5e-4)
    assert doc["flagged"] == [] and math.isclose(doc["threshold"], 0.01 / 3)


def test_readme_states_the_campaign():
    readme = (MULTI / "README.md").read_text()
    campaign = bundled.slurm_campaign(MULTI)
    assert campaign.slurm_version in readme.replace("Slurm ", "slurm-wlm ")
    assert "make slurm-multinode" in readme and "--rebuild" in readme
    kinds = [e["event"] for e in campaign.events]
    assert kinds.index("node_crashed") < kinds.index("node_down") < kinds.index("node_resume")
    crash = next(e for e in campaign.events if e["event"] == "node_crashed")
    assert crash["node"] == "node3" and sorted(crash["running_jobs"]) == ["2", "3", "6", "7"]


@pytest.mark.slurm
def test_live_two_node_daemons(tmp_path):
    """A fresh cluster of two ``slurmd -N`` daemons; one ``sbatch -N 2`` job; its sacct NodeList imported."""
    why = _why_no_slurm()
    if why:
        pytest.skip(why)
    state = Path(tempfile.mkdtemp(prefix="ett-slurm-test-multi-"))
    state.chmod(0o755)
    env = dict(os.environ, ETT_SLURM_DIR=str(state), ETT_SLURM_NODES="2", PATH=os.environ["PATH"] + ":/usr/sbin")
    env.pop("ETT_SLURM_PORT", None)
    env.pop("SLURM_CONF", None)
    out = subprocess.run([str(START), "--fresh"], env=env, capture_output=True, text=True, timeout=600)
    try:
        assert out.returncode == 0, f"tools/slurm/start.sh failed:\n{out.stdout}\n{out.stderr}"
        env["SLURM_CONF"] = str(state / "etc" / "slurm.conf")
        sh = lambda *c: subprocess.run(c, env=env, capture_output=True, text=True, timeout=60, check=True).stdout  # noqa: E731
        assert sorted(set(sh("sinfo", "-h", "-N", "-o", "%N").split())) == ["node1", "node2"]
        assert len(set((state / "etc" / "ports").read_text().split())) == 5  # ctld, 2 slurmd, dbd, db: distinct
        jid = sh(
            "sbatch", "--parsable", "-N", "2", "--ntasks-per-node=1", "--gres=gpu:1", f"--output={tmp_path}/%j.out",
            "--wrap", "srun hostname",
        ).strip()  # fmt: skip
        acct = ["sacct", "-X", "-P", "--duplicates", "-j", jid, f"--format={SACCT_FORMAT}"]  # the documented list
        # the record reaches slurmdbd in parts (a job that ends seconds after the cluster came up may be written
        # before its start record): wait until it is COMPLETED and has not changed for 5 s, as the campaign's export
        t0, last, since = time.time(), None, time.time()
        while True:
            text = sh(*acct)
            if text != last:
                last, since = text, time.time()
            elif "|COMPLETED|" in text and time.time() - since >= 5:
                break
            assert time.time() - t0 < 120, f"job {jid}: {text!r}"
            time.sleep(1)
        export = tmp_path / "sacct.txt"
        export.write_text(
            subprocess.run(
                acct, env=dict(env, SLURM_TIME_FORMAT="%s"), capture_output=True, text=True, check=True
            ).stdout
        )
        frames, _ = import_sacct([export])
        assert frames.attempts.select("nodes", "end_reason").rows() == [("node[1-2]", "completed")]
        assert frames.jobs["gpus"].to_list() == [2]  # gres/gpu=2: one a node
    finally:
        stop = subprocess.run([str(STOP), "--purge"], env=env, capture_output=True, text=True, timeout=300)
        assert stop.returncode == 0, f"tools/slurm/stop.sh left something running:\n{stop.stdout}\n{stop.stderr}"
