"""What-if projection on job-summary-shaped frames.

Expected values were worked out by hand in the comments (not by the code under
test); floating tolerance 1e-6 relative unless stated.
"""

from __future__ import annotations

import itertools

import polars as pl
import pytest

from ettcore.planning.restarts import attribute_savings, cascade_example
from ettcore.planning.whatif import Cut, blocking_from_l2, project


def jobs() -> pl.DataFrame:
    # A: 100 GPUs, wall 36000 + 3000 + 6000 + 1000 + 1800 = 47,800 s; 2 failures of 3000 s each
    # B: 10 GPUs, wall 7200 + 600 + 0 + 200 + 300 = 8,300 s; no failure, no checkpoint blocking
    return pl.DataFrame(
        {
            "job_id": ["A", "B"],
            "gpus": [100, 10],
            "wall_s": [47800.0, 8300.0],
            "productive_s": [36000.0, 7200.0],
            "tts_s": [3000.0, 600.0],
            "nof": [2, 0],
            "ttr_total_s": [6000.0, 0.0],
            "in_training_loss_s": [1000.0, 200.0],
            "blocking_s": [400.0, 0.0],
            "shutdown_tail_s": [1800.0, 300.0],
        }
    )


CUTS = [
    Cut("tts", amount=600, name="init overlap"),
    Cut("ttr", fraction=0.10, name="warm cache"),
    Cut("nof", amount=1, name="preemption policy"),
    Cut("blocking", fraction=0.77, name="async staging"),
    Cut("shutdown", amount=1500, name="standalone publishing"),
]


def test_projection_by_hand() -> None:
    p = project(jobs(), CUTS)
    a, b = p.jobs.row(0, named=True), p.jobs.row(1, named=True)
    # A: tts 3000-600; ttr/failure 3000 - 300 (10 %) - 600 (inherited start-up) = 2100, x 1 failure left;
    #    blocking 77 % of 400 = 308; shutdown 1800-1500.  Saved 600 + 3900 + 308 + 1500 = 6308 s.
    assert a["projected_tts_s"] == pytest.approx(2400)
    assert a["projected_nof"] == pytest.approx(1)
    assert a["projected_ttr_total_s"] == pytest.approx(2100)
    assert a["projected_in_training_loss_s"] == pytest.approx(692)
    assert a["projected_shutdown_tail_s"] == pytest.approx(300)
    assert a["saved_s"] == pytest.approx(6308)
    assert a["projected_wall_s"] == pytest.approx(41492)
    assert a["ett_pct"] == pytest.approx(75.3138, abs=1e-4)
    assert a["projected_ett_pct"] == pytest.approx(86.7637, abs=1e-4)
    assert a["gpu_h_released"] == pytest.approx(175.2222, abs=1e-4)
    # B: cuts capped at what exists: tts 600 -> 0, shutdown 300 -> 0, no blocking to cut, NoF stays 0
    assert b["projected_tts_s"] == 0 and b["projected_shutdown_tail_s"] == 0
    assert b["projected_nof"] == 0 and b["projected_in_training_loss_s"] == pytest.approx(200)
    assert b["saved_s"] == pytest.approx(900)
    assert b["projected_ett_pct"] == pytest.approx(97.2973, abs=1e-4)
    # fleet, GPU-time weighted: 3,672,000 / 4,863,000 before; / 4,223,200 after
    assert p.fleet["ett_pct"] == pytest.approx(75.5089, abs=1e-4)
    assert p.fleet["projected_ett_pct"] == pytest.approx(86.9483, abs=1e-4)
    assert p.fleet["gpu_h_released"] == pytest.approx(177.7222, abs=1e-4)
    assert p.fleet["jobs"] == 2


def test_order_of_cuts_does_not_matter() -> None:
    ref = project(jobs(), CUTS).jobs
    for perm in itertools.permutations(CUTS):
        assert project(jobs(), list(perm)).jobs.equals(ref)


def test_repeated_start_up_saving_is_paid_back_one_plus_nof_times() -> None:
    p = project(jobs(), [Cut("tts", amount=100)])
    assert p.jobs["saved_s"][0] == pytest.approx(100 * (1 + 2))  # A: NoF = 2
    q = project(jobs(), [Cut("tts", amount=100, repeated=False)])
    assert q.jobs["saved_s"][0] == pytest.approx(100)
    r = project(jobs(), [Cut("ttr", amount=100)])  # recovery-only: NoF times
    assert r.jobs["saved_s"][0] == pytest.approx(200)


def test_percent_cuts_add_rather_than_multiply() -> None:
    two = project(jobs(), [Cut("tts", fraction=0.1), Cut("tts", fraction=0.1)]).jobs
    one = project(jobs(), [Cut("tts", fraction=0.2)]).jobs
    assert two.equals(one)
    assert one["projected_tts_s"][0] == pytest.approx(2400)  # 20 % of the measured 3000, not 1 - 0.9^2


def test_no_cuts_is_identity() -> None:
    p = project(jobs(), [])
    assert (p.jobs["saved_s"] == 0).all()
    assert p.jobs["projected_ett_pct"].to_list() == pytest.approx(p.jobs["ett_pct"].to_list())


def test_without_blocking_column_the_in_training_loss_is_the_pool() -> None:
    p = project(jobs().drop("blocking_s"), [Cut("blocking", fraction=0.5)])
    assert p.jobs["projected_in_training_loss_s"].to_list() == pytest.approx([500.0, 100.0])


def test_whatif_reproduces_the_cascade_example() -> None:
    """Cuts that turn the cascade example's baseline into its optimised run reproduce the 24.8 % share."""
    before, after = cascade_example()
    b, a = before.row(0, named=True), after.row(0, named=True)
    d_tts = b["tts_s"] - a["tts_s"]  # 744 s
    d_ttr_per_failure_extra = (b["ttr_total_s"] - a["ttr_total_s"]) / 2 - d_tts  # recovery-only part
    cuts = [
        Cut("tts", amount=d_tts),
        Cut("ttr", amount=d_ttr_per_failure_extra),
        Cut("blocking", amount=b["in_training_loss_s"] - a["in_training_loss_s"]),
        Cut("shutdown", amount=b["shutdown_tail_s"] - a["shutdown_tail_s"]),
    ]
    proj = project(before, cuts).jobs.row(0, named=True)
    assert proj["projected_wall_s"] == pytest.approx(a["wall_s"])
    assert proj["projected_ett_pct"] == pytest.approx(a["ett_pct"])
    projected = pl.DataFrame(
        [
            {
                "model": "example",
                "tts_s": proj["projected_tts_s"],
                "nof": 2,
                "ttr_total_s": proj["projected_ttr_total_s"],
                "in_training_loss_s": proj["projected_in_training_loss_s"],
                "shutdown_tail_s": proj["projected_shutdown_tail_s"],
            }
        ]
    )
    t = attribute_savings(before, projected)
    assert t.filter(pl.col("source") == "trainer_start")["cascade_pct"][0] == pytest.approx(24.8, abs=0.05)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="unknown target"):
        Cut("compile", amount=1)
    with pytest.raises(ValueError, match="not both"):
        Cut("tts", amount=1, fraction=0.1)
    with pytest.raises(ValueError, match="fraction"):
        Cut("tts", fraction=1.5)
    with pytest.raises(ValueError, match="lacks column"):
        project(jobs().drop("tts_s"), [])
    with pytest.raises(ValueError, match="negative.*'B'"):
        project(jobs().with_columns(pl.Series("tts_s", [1.0, -1.0])), [])


def test_blocking_from_l2() -> None:
    l2 = pl.DataFrame(
        {
            "job_id": ["A", "A", "A", "B"],
            "bucket": ["in_training_loss", "shutdown_tail", "in_training_loss", "tts"],
            "phase": ["checkpoint_save", "checkpoint_save", "eval", "hardware_setup"],
            "seconds": [400.0, 120.0, 600.0, 600.0],
        }
    )
    got = blocking_from_l2(l2)
    assert got.to_dicts() == [{"job_id": "A", "blocking_s": 400.0}, {"job_id": "B", "blocking_s": 0.0}]


def test_on_the_sample_trace() -> None:
    """Integration with the metric: no cuts change nothing; a 50 % blocking cut saves at most the blocking."""
    from ettcore import metric
    from ettcore.config import SAMPLE_TRACE
    from ettcore.trace import load_trace

    t = load_trace(SAMPLE_TRACE)
    s = metric.job_summary(t).join(blocking_from_l2(metric.l2_matrix(t)), on="job_id", how="left")
    base = project(s, [])
    assert base.jobs["ett_pct"].to_list() == pytest.approx(s["ett_pct"].to_list(), abs=1e-6)
    half = project(s, [Cut("blocking", fraction=0.5)]).jobs
    assert half["saved_s"].to_list() == pytest.approx((0.5 * s["blocking_s"]).to_list())
