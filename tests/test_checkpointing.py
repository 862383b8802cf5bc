"""Checkpoint interval arithmetic (paper IV-C; the PyTorch blog's Figure 7 example).

Expected values are typed: the blog's hypothetical (15 s blocking, 3 failures a
day) has its optimum "near 930 s" (sqrt(864000) = 929.5 s, asserted within 1 s);
the fleet-wide blocking cut is 77 % (ckpt_blocking).  Daly's value for that
case, 919.54 s, was worked out by hand from Daly's formula (C = 15 s,
M = 28,800 s) and is asserted within 0.01 s.  The optimum is also checked by a
brute-force grid search on random inputs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ettcore.planning.checkpointing import (
    async_staging_effect,
    daly_interval,
    min_wasted_per_day,
    optimal_interval,
    wasted_per_day,
    young_interval,
)


def test_blog_example_optimum_near_930_s() -> None:
    assert optimal_interval(blocking_s=15, failures_per_day=3) == pytest.approx(930, abs=1.0)


def test_wasted_per_day_by_hand() -> None:
    # 600 s interval: 3 x 600 / 2 = 900 s unsaved + 86400 / 600 = 144 saves x 15 s = 2160 s blocking
    assert wasted_per_day(600, 15, 3) == pytest.approx(3060.0)
    # 8 h of training a day halves the saves: 72 x 15 = 1080
    assert wasted_per_day(600, 15, 3, train_s_per_day=43200) == pytest.approx(900 + 1080)


def test_young_equals_the_blog_optimum_and_daly_is_close() -> None:
    mtbf = 86400 / 3
    assert young_interval(15, mtbf) == pytest.approx(optimal_interval(15, 3), rel=1e-12)
    assert daly_interval(15, mtbf) == pytest.approx(919.54, abs=0.01)
    # Daly's case C >= 2M: tau = M
    assert daly_interval(100, 40) == 40


def test_async_staging_cut_of_77_percent() -> None:
    e = async_staging_effect(blocking_s=15, failures_per_day=3, blocking_cut=0.77)
    assert e.blocking_after_s == pytest.approx(15 * 0.23)
    # optimum and minimum wasted time both shrink by sqrt(1 - 0.77) = 0.4796 (hand value)
    assert e.interval_after_s / e.interval_before_s == pytest.approx(0.4796, abs=1e-4)
    assert e.wasted_after_s / e.wasted_before_s == pytest.approx(0.4796, abs=1e-4)
    # hand values: W* = sqrt(2 x 3 x 86400 x 15) = 2788.5 s a day; after 1337.3; interval kept: 1715.0
    assert e.wasted_before_s == pytest.approx(2788.5, abs=0.1)
    assert e.wasted_after_s == pytest.approx(1337.3, abs=0.1)
    assert e.wasted_same_interval_s == pytest.approx(1715.0, abs=0.1)
    assert e.wasted_after_s < e.wasted_same_interval_s < e.wasted_before_s
    assert e.saved_per_day_s == pytest.approx(e.wasted_before_s - e.wasted_after_s)


@pytest.mark.parametrize(
    "call",
    [
        lambda: optimal_interval(0, 3),
        lambda: optimal_interval(15, 0),
        lambda: wasted_per_day(0, 15, 3),
        lambda: wasted_per_day(600, -1, 3),
        lambda: young_interval(15, 0),
        lambda: async_staging_effect(15, 3, blocking_cut=1.0),
    ],
)
def test_bad_inputs_raise(call) -> None:
    with pytest.raises(ValueError):
        call()


@settings(max_examples=200, deadline=None)
@given(
    blocking=st.floats(0.1, 600),
    failures=st.floats(0.01, 50),
    train=st.floats(3600, 86400),
)
def test_optimum_beats_a_brute_force_grid(blocking: float, failures: float, train: float) -> None:
    grid = np.geomspace(1.0, 30 * 86400.0, 20_001)  # 1 s .. 30 days, ratio 1.00086 between points
    wasted = np.array([wasted_per_day(t, blocking, failures, train) for t in grid[::50]])  # coarse pass
    best_coarse = grid[::50][int(np.argmin(wasted))]
    fine = grid[(grid > best_coarse / 1.2) & (grid < best_coarse * 1.2)]
    w_fine = np.array([wasted_per_day(t, blocking, failures, train) for t in fine])
    tau_grid = float(fine[int(np.argmin(w_fine))])
    tau = optimal_interval(blocking, failures, train)
    w_star = min_wasted_per_day(blocking, failures, train)
    assert w_star <= float(w_fine.min()) + 1e-9 * w_star  # nothing on the grid does better
    assert tau_grid == pytest.approx(tau, rel=2e-3)  # grid argmin within two grid steps
    assert w_star == pytest.approx(math.sqrt(2 * failures * train * blocking), rel=1e-12)


def test_the_best_interval_maximizes_the_expected_ett() -> None:
    """A 14-day job on 1,024 GPUs failing 0.005 times a GPU-day (an MTBF of 16,875 s) that saves every hour and blocks
    60 s a save: the best interval is shorter, near Daly's optimum, and no interval of a dense grid does better."""
    from ettcore.planning.expected import JobPlan, best_interval, expected_ett

    plan = JobPlan(
        tts_s=600, ttr_s=900, failures_per_gpu_day=0.005, work_s=14 * 86_400, gpus=1024, interval_s=3600, blocking_s=60
    )
    got = best_interval(plan)
    mtbf = 86_400 / (0.005 * 1024)
    assert got.young_s == pytest.approx(young_interval(60, mtbf))
    assert got.interval_s == pytest.approx(daly_interval(60, mtbf), rel=0.02)
    assert got.today_interval_s == 3600 and got.today_ett_pct == pytest.approx(expected_ett(plan).ett_pct)
    assert got.gain_pct_points > 3  # 83.6 % at an hour, 87.1 % at the best interval
    for tau in range(60, 20_001, 10):  # brute force, apart from the search
        other = JobPlan(600, 900, 0.005, 14 * 86_400, 1024, float(tau), 60)
        assert expected_ett(other).ett_pct <= got.ett_pct + 1e-9


def test_without_failures_the_best_interval_is_one_stretch() -> None:
    from ettcore.planning.expected import JobPlan, best_interval

    plan = JobPlan(
        tts_s=600, ttr_s=900, failures_per_gpu_day=0.0, work_s=86_400, gpus=8, interval_s=1800, blocking_s=30
    )
    got = best_interval(plan)
    assert got.interval_s == pytest.approx(86_400) and got.young_s is None
    assert got.ett_pct == pytest.approx(100 * 86_400 / (600 + 86_400))
