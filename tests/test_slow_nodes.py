"""``ettcore.metric.slow_nodes``: slow GPU-hours per node and the Mann-Whitney flag, on hand-made SYNTHETIC fleets.

Eighteen single-node jobs, six on each of nodes n1, n2 and n3, each shaped as ``test_slow``'s job; the jobs on n2
have its two slow spans (40 slow seconds each), the others none.  n2 must be flagged, and no other.  Two-node jobs
with the ranks' windows naming the node that held each slow span back put it on that node alone, whether the windows
are given or are the trace's ``rank_timing`` table.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from trace_strategies import train_spans, write_trace_folder

from ettcore.cli import main
from ettcore.cli.schemas import validate
from ettcore.errors import TraceError
from ettcore.importers.recorder import rank_timing_frame
from ettcore.metric.slow_nodes import mann_whitney_greater, slow_node_report
from ettcore.trace import load_trace
from ettcore.trace.writer import write_table

B = 1_769_900_000_000
FAST = [(10, 10)] + [(10, 100)] * 8 + [(10, 100), (10, 100), (11, 100)]
SLOW = [(10, 10)] + [(10, 100)] * 8 + [(30, 100), (30, 100), (11, 100)]


def _fleet(tmp: Path, placement: dict[str, str], slow_jobs: set[str], gpus: int = 8) -> Path:
    """One job a key of ``placement`` (job -> Slurm host list), each an hour after the last; ``slow_jobs`` slowed."""
    jobs, attempts, spans = [], [], []
    for i, (job, _) in enumerate(sorted(placement.items())):
        t = B + i * 3_600_000
        s = train_spans(job, 0, SLOW if job in slow_jobs else FAST, t)
        jobs.append(dict(job_id=job, model="m", gpus=gpus, team="t"))
        attempts.append(dict(job_id=job, attempt=0, start=t, end=s[-1]["end"], end_reason="completed"))
        spans += s
    folder = write_trace_folder({"jobs": jobs, "attempts": attempts, "spans": spans}, tmp / "t")
    path = folder / "attempts.parquet"
    frame = pl.read_parquet(path)
    frame.with_columns(pl.col("job_id").replace_strict(placement).alias("nodes")).write_parquet(path)
    return folder


def test_the_slowed_node_is_flagged_and_no_other(tmp_path):
    placement = {f"j{i:02d}": f"n{1 + i % 3}" for i in range(18)}
    slowed = {j for j, n in placement.items() if n == "n2"}
    rep = slow_node_report(load_trace(_fleet(tmp_path, placement, slowed)))
    got = {r["node"]: r for r in rep.nodes.iter_rows(named=True)}
    assert rep.flagged == ["n2"]
    assert got["n2"]["slow_gpu_h"] == pytest.approx(6 * 8 * 40 / 3600)
    assert got["n1"]["slow_gpu_h"] == 0.0 and got["n1"]["p_value"] == 1.0
    assert got["n2"]["slow_share"] == pytest.approx(1.0)
    assert got["n2"]["exposure_share"] == pytest.approx(6 * 161 / (12 * 121 + 6 * 161))
    assert rep.attributed == "shared" and rep.threshold == pytest.approx(0.01 / 3)


def test_ett_nodes_slow(tmp_path, capsys):
    placement = {f"j{i:02d}": f"n{1 + i % 3}" for i in range(18)}
    folder = _fleet(tmp_path, placement, {j for j, n in placement.items() if n == "n2"})
    assert main(["nodes", str(folder), "--slow", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    validate(doc)
    assert doc["slow"]["flagged"] == ["n2"] and doc["slow"]["attributed"] == "shared"
    assert doc["slow"]["slow_gpu_h"] == pytest.approx(6 * 8 * 40 / 3600)
    assert [n["node"] for n in doc["slow"]["nodes"]] == ["n1", "n2", "n3"]
    assert main(["nodes", str(folder), "--slow"]) == 0
    assert "1 flagged slow node(s): n2" in capsys.readouterr().out
    assert main(["nodes", str(folder), "--slow", "--csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("node,attempts,exposure_gpu_h,slow_gpu_h")
    assert main(["nodes", str(folder), "--json"]) == 0
    assert "slow" not in json.loads(capsys.readouterr().out)
    # the tolerance: 2.5 makes the 30 s spans (3x the ideal) jitter; it applies with --slow only
    assert main(["nodes", str(folder), "--slow", "--json", "--slow-tolerance", "2.5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["slow"]["tolerance"] == 2.5 and doc["slow"]["slow_gpu_h"] == 0.0 and doc["slow"]["flagged"] == []
    for argv, words in (
        (["--slow-tolerance", "0.5"], "applies with --slow only"),
        (["--slow", "--slow-tolerance", "-1"], "--slow-tolerance"),
        (["--slow", "--slow-tolerance", "x"], "--slow-tolerance"),
    ):
        assert main(["nodes", str(folder), *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err


def test_a_node_with_too_few_attempts_is_not_flagged(tmp_path):
    placement = {f"j{i:02d}": f"n{1 + i % 3}" for i in range(6)}  # two jobs a node
    slowed = {j for j, n in placement.items() if n == "n2"}
    rep = slow_node_report(load_trace(_fleet(tmp_path, placement, slowed)))
    assert rep.flagged == []  # the exact p-value of 2 of 6 is 1/15, far above 0.01/3
    assert rep.nodes.filter(pl.col("node") == "n2")["p_value"][0] == pytest.approx(1 / 15)


def _two_node_fleet(tmp: Path) -> tuple[Path, list[dict]]:
    """Eighteen two-node jobs, six on each pair of n1, n2, n3; the twelve with a rank on n2 slowed, and each rank's
    windows (one a second over the job's 161 s) with the rank on n2 working 90 % of each second, the others 30 %."""
    pairs = ["n[1-2]", "n[2-3]", "n[1,3]"]
    placement = {f"j{i:02d}": pairs[i % 3] for i in range(18)}
    slowed = {j for j, n in placement.items() if "2" in n.replace("n[1-2]", "n2").replace("n[2-3]", "n2")}
    folder = _fleet(tmp, placement, slowed)
    windows = []
    for i, (job, hosts) in enumerate(sorted(placement.items())):
        t0 = (B + i * 3_600_000) / 1000
        a, b = {"n[1-2]": ("n1", "n2"), "n[2-3]": ("n2", "n3"), "n[1,3]": ("n1", "n3")}[hosts]
        for rank, node in enumerate((a, b)):
            share = 0.9 if node == "n2" else 0.3
            windows += [
                dict(
                    job_id=job,
                    attempt=0,
                    rank=rank,
                    node=node,
                    start=t0 + s,
                    end=t0 + s + 1.0,
                    steps=10,
                    work_s=share,
                    wait_s=1.0 - share,
                )
                for s in range(0, 161)
            ]
    return folder, windows


HELD = {"n1": 0.0, "n2": 12 * 8 * 40 / 3600, "n3": 0.0}  # every slow span of a job with a rank on n2, on n2


def test_the_ranks_windows_put_a_two_node_jobs_slow_time_on_the_node_that_held_it_back(tmp_path):
    folder, windows = _two_node_fleet(tmp_path)
    trace = load_trace(folder)
    held = slow_node_report(trace, windows)
    assert held.attributed == "holder" and held.flagged == ["n2"]
    got = {r["node"]: r["slow_gpu_h"] for r in held.nodes.iter_rows(named=True)}
    assert got == pytest.approx(HELD)
    shared = slow_node_report(trace)  # without the windows, each two-node job's slow time is split between its nodes
    got = {r["node"]: r["slow_gpu_h"] for r in shared.nodes.iter_rows(named=True)}
    assert got == pytest.approx({"n1": 6 * 4 * 40 / 3600, "n2": 12 * 4 * 40 / 3600, "n3": 6 * 4 * 40 / 3600})


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_ett_nodes_slow_reads_the_ranks_windows_from_the_trace(tmp_path, capsys, fmt):
    """The same windows as the trace's own ``rank_timing`` table: ``ett nodes --slow`` puts each slow span on the node
    that held it back, as when the windows are given, and names n2 alone."""
    folder, windows = _two_node_fleet(tmp_path)
    write_table(rank_timing_frame(windows), folder / f"rank_timing.{fmt}", fmt)
    assert main(["nodes", str(folder), "--slow", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    validate(doc)
    assert doc["slow"]["attributed"] == "holder" and doc["slow"]["flagged"] == ["n2"]
    assert {n["node"]: n["slow_gpu_h"] for n in doc["slow"]["nodes"]} == pytest.approx(HELD)
    assert load_trace(folder).accounting["rank_timing"]["used"] == len(windows)


def test_mann_whitney_and_alpha():
    assert mann_whitney_greater([], [1.0]) == 1.0 and mann_whitney_greater([0.0], [0.0, 0.0]) == 1.0
    assert mann_whitney_greater([3.0, 4.0], [1.0, 2.0]) == pytest.approx(1 / 6)  # 1 of C(4,2) orders
    # one value a side (a fleet of one job a node): every split by hand, ties counting half in U
    assert mann_whitney_greater([0.5], [0.0, 0.0]) == pytest.approx(1 / 3)  # the largest of 3: 1 split of 3
    assert mann_whitney_greater([0.0], [0.5, 0.0]) == pytest.approx(1.0)  # tied with the smallest: U = 0.5 is least
    assert mann_whitney_greater([0.5, 0.2], [0.0]) == pytest.approx(1 / 3)
    assert mann_whitney_greater([0.5, 0.0], [0.2]) == pytest.approx(2 / 3)
    assert mann_whitney_greater([0.3], [0.1, 0.2, 0.4]) == pytest.approx(1 / 2)  # second of 4: U >= 2 in 2 of 4
    with pytest.raises(TraceError):
        slow_node_report(None, alpha=1.5)


def test_a_store_keeps_the_ranks_windows(tmp_path, capsys):
    """A fleet store keeps the trace's ``rank_timing`` rows: ``ett nodes --slow`` on the store puts each slow span on
    the node that held it back, as on the trace folder; a job whose windows change is replaced."""
    folder, windows = _two_node_fleet(tmp_path)
    write_table(rank_timing_frame(windows), folder / "rank_timing.parquet", "parquet")
    st = tmp_path / "fleet.duckdb"
    assert main(["ingest", str(st), str(folder)]) == 0
    capsys.readouterr()
    answers = []
    for source in (folder, st):
        assert main(["nodes", str(source), "--slow", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        answers.append(doc["slow"])
    assert answers[0] == answers[1]
    assert answers[1]["attributed"] == "holder"
    assert {n["node"]: n["slow_gpu_h"] for n in answers[1]["nodes"]} == pytest.approx(HELD)
    assert main(["summarize", str(st), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accounting"]["rank_timing"]["used"] == len(windows)
    moved = [dict(w, work_s=w["work_s"] + 1.0) if w["job_id"] == windows[0]["job_id"] else w for w in windows]
    write_table(rank_timing_frame(moved), folder / "rank_timing.parquet", "parquet")
    assert main(["ingest", str(st), str(folder)]) == 0
    out = capsys.readouterr().out
    assert "1 changed" in out and f"job {windows[0]['job_id']!r} replaced as a whole: rank_timing.work_s differ" in out


def test_a_store_made_before_it_kept_the_ranks_windows_takes_them(tmp_path, capsys):
    """A store whose ``ett_jobs`` has no ``rank_timing`` digest and which has no ``rows_rank_timing`` (as every store
    made before it kept them) is read as holding no windows, and the next ingest adds them without calling its other
    jobs changed."""
    import duckdb

    folder, windows = _two_node_fleet(tmp_path)
    st = tmp_path / "fleet.duckdb"
    assert main(["ingest", str(st), str(folder)]) == 0
    con = duckdb.connect(str(st))
    con.execute("DROP TABLE rows_rank_timing")
    con.execute("ALTER TABLE ett_jobs DROP COLUMN n_rank_timing")
    con.execute("ALTER TABLE ett_jobs DROP COLUMN h_rank_timing")
    con.close()
    capsys.readouterr()
    assert main(["nodes", str(st), "--slow", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["slow"]["attributed"] == "shared"
    assert main(["ingest", str(st), str(folder)]) == 0
    assert ", 0 changed" in capsys.readouterr().out  # no windows in the trace: every job as stored
    write_table(rank_timing_frame(windows), folder / "rank_timing.parquet", "parquet")
    assert main(["ingest", str(st), str(folder)]) == 0
    capsys.readouterr()
    assert main(["nodes", str(st), "--slow", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["slow"]
    assert doc["attributed"] == "holder"
    assert {n["node"]: n["slow_gpu_h"] for n in doc["nodes"]} == pytest.approx(HELD)
