"""The bundled restart campaign (data/slurm-restarts) checked without Slurm, and the campaign run on a live cluster.

The campaign's design (``tools/campaigns/slurm_restarts.py``, :func:`plan`): ``loop`` checkpoints every 10 steps
and dies at step 25 on every run (5 runs, the last one gives up), so its runs resume from steps 0, 20, 20, 20, 20;
``advance`` dies at steps 15 and 25 and completes at 30, resuming from 0, 10, 20; six ``storm-*`` jobs lose their
node (node3: four, node2: two) within :data:`STORM_GAP_S` of each other and complete on their second run.

The times below are read off ``data/slurm-restarts/sacct.txt`` by hand (``job: state Start -> End, gres/gpu``;
epoch seconds written relative to 1796564500; Submit of every first run: 18):

    1 loop     REQUEUED 42  20 ->  46  gpu 3     attempt 0 (its end: 13:42:26Z)
    1 loop     REQUEUED 42  57 ->  62  gpu 3     attempt 1 (its end, 1796564562: 13:42:42Z)
    1 loop     REQUEUED 42  77 ->  82  gpu 3     attempt 2
    1 loop     REQUEUED 42 137 -> 143  gpu 3     attempt 3
    1 loop     FAILED    1 197 -> 203  gpu 3     attempt 4 (its end, 1796564703: 13:45:03Z)
    2 advance  REQUEUED 42, REQUEUED 42, COMPLETED  (3 runs, gpu 1)
    3..6 storm-3a..d  NODE_FAIL 20 -> 26 on node3, then COMPLETED
    7..8 storm-2a..b  NODE_FAIL 20 -> 28 on node2, then COMPLETED

A later attempt runs from Start to End (docs/slurm.md): the loop's restarts (attempts 2-4) held 3 GPUs for
5 + 6 + 6 = 17 s.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from test_slurm_integration import fresh_nodes  # tests/test_slurm_integration.py

from ettcore import bundled, cli
from ettcore.importers.frames import write_import
from ettcore.importers.slurm import import_sacct
from tools.campaigns import slurm_restarts

DATA = bundled.SLURM_RESTARTS
LOOP, ADVANCE = "1", "2"
STORM_JOBS = [str(k) for k in range(3, 9)]


def _design() -> dict[str, slurm_restarts.JobPlan]:
    return {p.name: p for p in slurm_restarts.plan()}


def _resume_points(trace: Path, job: str) -> list[float | None]:
    """The ``cursor_start`` of each attempt's first train span (None: no train span), attempt by attempt."""
    spans = pl.read_parquet(trace / "spans.parquet").filter((pl.col("job_id") == job) & (pl.col("phase") == "train"))
    attempts = pl.read_parquet(trace / "attempts.parquet").filter(pl.col("job_id") == job).sort("attempt")
    first = spans.sort("start").group_by("attempt", maintain_order=True).first()
    by = dict(zip(first["attempt"].to_list(), first["cursor_start"].to_list(), strict=True))
    return [by.get(a) for a in attempts["attempt"].to_list()]


def _summarize(trace: Path, capsys, *extra: str) -> dict:
    assert cli.main(["summarize", str(trace), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_runs_follow_the_design():
    d = _design()
    frames, report = import_sacct([DATA / "sacct.txt"], recorder_dir=DATA / "recorder", relative_to=DATA)
    a = frames.attempts.sort("job_id", "attempt")
    assert frames.jobs.height == len(d) == 8
    runs = dict(a.group_by("job_id").len().rows())
    assert runs[LOOP] == slurm_restarts.LOOP_ATTEMPTS == 5 and runs[ADVANCE] == 3
    assert all(runs[j] == 2 for j in STORM_JOBS)
    assert a.filter(pl.col("job_id") == LOOP)["end_reason"].to_list() == ["failure"] * 5
    assert a.filter(pl.col("job_id") == ADVANCE)["end_reason"].to_list() == ["failure", "failure", "completed"]
    assert "interruptions by cause: user_error 7, node_failure 6" in report.to_markdown()


def test_resume_points_are_the_checkpoints_of_the_design():
    d = _design()
    loop, adv = d["loop"], d["advance"]
    saved_before_death = loop.die_at // loop.every * loop.every  # 20: the last save before the poison step
    assert _resume_points(DATA / "trace", LOOP) == [0.0] + [float(saved_before_death)] * 4
    assert _resume_points(DATA / "trace", ADVANCE) == [0.0, 10.0, 20.0]
    assert adv.die_at == 15 and adv.die_step == 10 and adv.every == 10


def test_bundled_trace_is_what_the_importer_gives(tmp_path):
    frames, report = import_sacct([DATA / "sacct.txt"], recorder_dir=DATA / "recorder", relative_to=DATA)
    trace = write_import(tmp_path / "trace", frames, report)
    for table in ("attempts", "spans", "jobs"):
        assert pl.read_parquet(DATA / "trace" / f"{table}.parquet").equals(pl.read_parquet(trace / f"{table}.parquet"))
    meta = json.loads((DATA / "trace" / "trace.json").read_text())
    assert meta["synthetic"] is False and meta["measured"] is True


def test_summarize_finds_the_crash_loop_and_not_the_advancing_job(capsys):
    got = _summarize(DATA / "trace", capsys)
    loops = got["restarts"]["crash_loops"]
    assert [(x["job_id"], x["model"]) for x in loops] == [(LOOP, "loop")]  # advance is not flagged
    (x,) = loops
    # attempt 0 saved 10 and 20 before dying; attempts 1-4 resumed from 20 and died at 25
    assert (x["first_attempt"], x["last_attempt"], x["restarts"]) == (1, 4, 3)
    assert x["resume_cursor"] == 20.0
    assert x["began"] == "2026-12-06T13:42:42Z" and x["last_crash"] == "2026-12-06T13:45:03Z"
    assert x["gpu_h"] == pytest.approx(3 * (5 + 6 + 6) / 3600)
    jobs = {j["job_id"]: j for j in got["jobs"]}
    assert jobs[LOOP]["crash_loop"]["loops"] == 1 and jobs[ADVANCE]["crash_loop"]["loops"] == 0
    assert all(jobs[j]["crash_loop"]["loops"] == 0 for j in STORM_JOBS)
    assert cli.main(["summarize", str(DATA / "trace")]) == 0  # the text table: its GPU-hours to four decimals
    (row,) = [r for r in capsys.readouterr().out.split("Crash loops")[1].split("\n\n")[0].splitlines() if "T13:" in r]
    assert row.split()[-1] == "0.0142", row


def test_summarize_gives_the_retry_chains(capsys):
    got = _summarize(DATA / "trace", capsys)
    chains = {j["job_id"]: j["retry_chain"] for j in got["jobs"]}
    assert (chains[LOOP]["attempts"], chains[LOOP]["outcome"]) == (5, "interrupted")  # gave up
    assert (chains[ADVANCE]["attempts"], chains[ADVANCE]["outcome"]) == (3, "completed")
    assert all((chains[j]["attempts"], chains[j]["outcome"]) == (2, "completed") for j in STORM_JOBS)
    fleet = got["restarts"]["retry_chains"]
    # 8 jobs interrupted, all ended, all but the loop completed; restarts 4 + 2 + 6
    assert (fleet["retried_jobs"], fleet["retried_completed"], fleet["restarts"]) == (8, 7, 12)
    assert fleet["retry_completion_pct"] == pytest.approx(100 * 7 / 8)


def test_summarize_reports_the_storm(capsys):
    got = _summarize(DATA / "trace", capsys, "--storm-window", "10s", "--storm-by", "partition")
    # the six node failures, node3 then node2 set down STORM_GAP_S apart, all in partition low; the crashes of
    # loop and advance (partition high) are never 5 within 10 s
    assert slurm_restarts.STORM_GAP_S < 10
    (s,) = got["restarts"]["storms"]
    assert (s["group"], s["interruptions"], s["jobs"]) == ("low", 6, 6)
    assert (s["first_interruption"], s["last_interruption"]) == ("2026-12-06T13:42:06Z", "2026-12-06T13:42:08Z")
    # fleet-wide in the default hour: the whole campaign's 13 interruptions (7 crashes, 6 node failures)
    (s,) = _summarize(DATA / "trace", capsys)["restarts"]["storms"]
    assert (s["interruptions"], s["jobs"]) == (13, 8)
    # the export: the storms per partition (every partition of the campaign, high without one), and fleet-wide
    want = {
        ("--storm-window", "10s", "--storm-by", "partition"): [
            'ett_fleet_restart_storms{partition="high"} 0',
            'ett_fleet_restart_storms{partition="low"} 1',
            'ett_fleet_restart_storm_interruptions{partition="high"} 0',
            'ett_fleet_restart_storm_interruptions{partition="low"} 6',
            'ett_fleet_restart_storm_interruptions_total{partition="high"} 0',
            'ett_fleet_restart_storm_interruptions_total{partition="low"} 6',
        ],
        (): [
            "ett_fleet_restart_storms 1",
            "ett_fleet_restart_storm_interruptions 13",
            "ett_fleet_restart_storm_interruptions_total 13",
        ],
    }
    for argv, lines in want.items():
        assert cli.main(["export", "prometheus", str(DATA / "trace"), *argv]) == 0
        out = capsys.readouterr().out.splitlines()
        assert [ln for ln in out if ln.startswith("ett_fleet_restart_storm")] == lines, argv
    # a window's export finds no storms (they are found over the whole trace), and a bad --storm-by is one line
    assert cli.main(["export", "prometheus", str(DATA / "trace"), "--since", "2026-12-06T13:42:00Z"]) == 0
    assert "restart_storm" not in capsys.readouterr().out
    assert cli.main(["export", "prometheus", str(DATA / "trace"), "--storm-by", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ett: --storm-by"), err


@pytest.mark.parametrize(("worst", "share"), [(1, 4 / 6), (2, 1.0)])
def test_nodes_shows_the_concentration(worst, share, capsys):
    assert cli.main(["nodes", str(DATA / "trace"), "--worst", str(worst), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    # node failures only (the loop's exits are user errors, not counted against nodes): node3 4, node2 2, node1 0
    assert {n["node"]: n["interruptions"] for n in got["nodes"]} == {"node1": 0, "node2": 2, "node3": 4}
    assert got["counted"] == 6
    assert got["concentration"]["worst"] == worst and got["concentration"]["share"] == pytest.approx(share)


def test_readme_states_the_campaign():
    text = (DATA / "README.md").read_text()
    assert "make slurm-restarts" in text and "SYNTHETIC" not in text
    assert "`tests/test_slurm_restarts.py`" in text


@pytest.mark.slurm
def test_live_campaign_finds_the_same_crash_loop(tmp_path, capsys):
    """The campaign driver on a fresh 3-node cluster (about 3.5 minutes): the same crash loop, not the advancing job."""
    with fresh_nodes("restarts"):
        slurm_restarts.run_campaign(tmp_path / "out", tmp_path / "work")
        capsys.readouterr()
        got = _summarize(tmp_path / "out" / "trace", capsys, "--storm-window", "10s", "--storm-by", "partition")
        (x,) = got["restarts"]["crash_loops"]
        assert (x["model"], x["first_attempt"], x["last_attempt"], x["restarts"], x["resume_cursor"]) == (
            "loop", 1, 4, 3, 20.0,
        )  # fmt: skip
        assert x["gpu_h"] > 0
        chains = {j["model"]: j["retry_chain"] for j in got["jobs"]}
        assert (chains["advance"]["attempts"], chains["advance"]["outcome"]) == (3, "completed")
        (s,) = got["restarts"]["storms"]
        assert (s["group"], s["interruptions"], s["jobs"]) == ("low", 6, 6)
