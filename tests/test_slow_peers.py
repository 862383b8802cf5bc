"""The peers' measures of slowness beside the project's slow time (``ettcore.metric.slow_peers``).

On the recorded slowed-node campaign (``data/slurm-slow``) the expected values come from its design
(``tools.campaigns.slurm_slow``): in every job on node2 rank 1 slept 2 s in each of 6 steps of about 0.25 s, in no
other job did any rank sleep. So Google's step deviation must reach about the 2 s sleep in the slowed jobs only and
its extra time from anomalous steps about the 12 s slept; NVIDIA's relative score must put rank 1 of node2 far below
its straggler threshold (its work per step about 2.25 s against rank 0's 0.25 s: a score near 0.11) in the slowed
jobs only, and one report over the whole run must miss it (6 slowed steps of 60 do not move a median); the project's
slow seconds must be the 12 s and their holder rank 1 of node2. The formulas are checked on hand-worked windows.
"""

from __future__ import annotations

import json
import sys

import pytest

from ettcore import bundled
from ettcore.errors import InputError
from ettcore.metric import slow_peers
from ettcore.trace import load_trace
from tools.campaigns import slurm_slow

INJECTED_S = (slurm_slow.SLOW_TO - slurm_slow.SLOW_FROM) * slurm_slow.SLEEP_S  # 12 s a slowed job


def _slowed_jobs() -> set[str]:
    events = json.loads((bundled.SLURM_SLOW / "campaign.json").read_text())["events"]
    return {e["job_id"] for e in events if e["event"] == "submit" and e["slowed"]}


@pytest.fixture(scope="module")
def table():
    return slow_peers.peer_table(load_trace(bundled.SLURM_SLOW / "trace"), tolerance=slurm_slow.TOLERANCE)


def test_every_job_of_the_campaign_has_a_row_of_both_ranks(table):
    assert table["job_id"].to_list() == [str(k) for k in range(1, 13)]
    assert set(table["ranks"]) == {2}
    assert set(table["steps"]) == {slurm_slow.STEPS}


def test_google_deviation_sees_the_sleep_in_the_slowed_jobs_only(table):
    slowed = _slowed_jobs()
    assert slowed == {"2", "5", "8", "11"}
    for row in table.iter_rows(named=True):
        if row["job_id"] in slowed:
            assert row["google_max_deviation_s"] == pytest.approx(slurm_slow.SLEEP_S, rel=0.1)
            assert row["google_extra_s"] == pytest.approx(INJECTED_S, rel=0.1)
        else:  # jitter: far less than one sleep, in deviation and in extra time
            assert row["google_max_deviation_s"] < 0.1 * slurm_slow.SLEEP_S
            assert row["google_extra_s"] < 0.1 * INJECTED_S


def test_nvidia_score_names_rank_1_of_node2_in_the_slowed_jobs_only(table):
    slowed = _slowed_jobs()
    for row in table.iter_rows(named=True):
        if row["job_id"] in slowed:
            assert (row["nvidia_rank"], row["nvidia_node"]) == (slurm_slow.SLOW_RANK, slurm_slow.SLOW_NODE)
            assert row["nvidia_min_score"] < 0.2  # about 0.25 / 2.25
            assert row["nvidia_straggler_reports"] >= 1
        else:
            assert row["nvidia_min_score"] > slow_peers.NVIDIA_THRESHOLD
            assert row["nvidia_straggler_reports"] == 0
        # one report over the whole run: the median of 60 steps does not see 6 slow ones
        assert row["nvidia_run_score"] > slow_peers.NVIDIA_THRESHOLD


def test_the_projects_slow_time_and_holder_beside_them(table):
    slowed = _slowed_jobs()
    for row in table.iter_rows(named=True):
        if row["job_id"] in slowed:
            assert row["slow_s"] == pytest.approx(INJECTED_S, rel=0.1)
            assert row["slow_gpu_h"] == pytest.approx(slurm_slow.GPUS * INJECTED_S / 3600, rel=0.1)
            assert (row["holder_rank"], row["holder_node"]) == (slurm_slow.SLOW_RANK, slurm_slow.SLOW_NODE)
        else:
            assert row["slow_s"] == 0
            assert row["holder_rank"] is None


def _window(rank, start_s, end_s, steps, work_s, node="n1", attempt=0):
    return {
        "job_id": "j",
        "attempt": attempt,
        "rank": rank,
        "node": node,
        "start_ms": int(start_s * 1000),
        "end_ms": int(end_s * 1000),
        "steps": steps,
        "work_s": work_s,
        "wait_s": 0.0,
    }


def test_google_deviation_through_its_package_on_hand_worked_steps():
    # four steps of 0.25 s then one of 2.25 s: median 0.25, MAD 0, so 2.25 is the one anomalous step; the ideal is
    # the normal steps' mean, 0.25; the largest deviation and the extra time are 2.25 - 0.25 = 2
    windows = [_window(0, 0.0, 1.0, 4, 1.0), _window(0, 1.0, 3.25, 1, 2.25)]
    assert [s for s, _ in slow_peers.step_starts(windows)] == [1, 2, 3, 4, 5, 6]
    got = slow_peers.google_deviation("j", windows)
    assert got["google_ideal_step_s"] == pytest.approx(0.25)
    assert got["google_max_deviation_s"] == pytest.approx(2.0)
    assert got["google_anomalous_steps"] == 1
    assert got["google_extra_s"] == pytest.approx(2.0)


def test_nvidia_relative_score_is_the_fastest_median_over_the_ranks_own():
    by_rank = {0: [_window(0, 0, 1, 4, 1.0)], 1: [_window(1, 0, 1, 4, 2.0)]}
    assert slow_peers.relative_scores(by_rank) == {0: 1.0, 1: 0.5}
    # a report of 10 s: the slow rank in the second report only
    windows = [
        _window(0, 0, 5, 20, 5.0),
        _window(1, 0, 5, 20, 5.0, node="n2"),
        _window(0, 10, 15, 20, 5.0),
        _window(1, 10, 15, 5, 5.0, node="n2"),
    ]
    got = slow_peers.nvidia_scores(windows, report_s=10.0)
    assert (got["nvidia_min_score"], got["nvidia_rank"], got["nvidia_node"]) == (0.25, 1, "n2")
    assert (got["nvidia_straggler_reports"], got["nvidia_reports"]) == (1, 2)


def test_a_report_interval_of_zero_is_refused_in_one_line():
    with pytest.raises(InputError, match="report interval"):
        slow_peers.peer_table(load_trace(bundled.SLURM_SLOW / "trace"), report_s=0)


def test_without_the_goodput_package_one_line_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_goodput_measurement.src", None)
    with pytest.raises(InputError, match="pip install ml-goodput-measurement"):
        slow_peers.google_deviation("j", [_window(0, 0.0, 1.0, 4, 1.0)])
