"""Expected ETT% from rates: closed form vs Monte Carlo vs Kokolis et al. (2024).

Tolerances:
* closed form vs Monte Carlo (20,000 simulated jobs, fixed seed): within 4
  standard errors of the simulation and within 0.3 ETT percentage points;
* closed form vs Kokolis et al.'s first-order ETTR: within 5 % relative (the
  accuracy they report against their own Monte Carlo) and, in the regime of
  their quoted rates, within 0.1 percentage point;
* a failure-free job: exact, against a hand-computed value.
Kokolis et al.'s quoted inputs: r_f = 6.50 and 2.34 failures per 1000
node-days, restart overhead u0 of 5-20 min.  Assumption of this test: 8 GPUs a
node (a 1024-GPU job is 128 nodes) and a 60-s checkpoint write.
"""

from __future__ import annotations

import pytest

from ettcore.planning.checkpointing import optimal_interval
from ettcore.planning.expected import (
    JobPlan,
    expected_ett,
    expected_ett_first_order,
    kokolis_ettr,
    kokolis_optimal_interval,
    simulate_ett,
)

PLANS = {
    "busy_1024gpu": JobPlan(
        tts_s=1800,
        ttr_s=1800,
        failures_per_gpu_day=0.01,
        work_s=36000,
        gpus=1024,
        interval_s=1800,
        blocking_s=60,
        shutdown_s=600,
    ),
    "flaky_2000gpu": JobPlan(
        tts_s=1100, ttr_s=900, failures_per_gpu_day=0.02, work_s=10 * 3600, gpus=2000, interval_s=900, blocking_s=15
    ),
    "small_8gpu_uneven": JobPlan(
        tts_s=300,
        ttr_s=600,
        failures_per_gpu_day=0.05,
        work_s=5000,
        gpus=8,
        interval_s=1200,
        blocking_s=30,
        shutdown_s=120,
    ),
}


def test_failure_free_job_by_hand() -> None:
    # 36,000 s of work, a save every 1,800 s: 19 saves of 60 s (none after the last stretch)
    p = JobPlan(
        tts_s=1800,
        ttr_s=999,
        failures_per_gpu_day=0.0,
        work_s=36000,
        gpus=64,
        interval_s=1800,
        blocking_s=60,
        shutdown_s=600,
    )
    e = expected_ett(p)
    assert e.wall_s == pytest.approx(1800 + 36000 + 19 * 60 + 600)  # 39,540 s
    assert e.ett_pct == pytest.approx(91.047, abs=1e-3)
    assert e.nof == 0
    mc = simulate_ett(p, runs=10)
    assert mc.wall_s == pytest.approx(39540.0) and mc.wall_se_s == 0.0


@pytest.mark.parametrize("name", sorted(PLANS))
def test_closed_form_agrees_with_monte_carlo(name: str) -> None:
    plan = PLANS[name]
    e = expected_ett(plan)
    mc = simulate_ett(plan, runs=20_000, seed=7)
    assert abs(mc.ett_pct - e.ett_pct) <= max(4 * mc.ett_se_pct, 1e-9), (e, mc)
    assert mc.ett_pct == pytest.approx(e.ett_pct, abs=0.3)
    assert mc.nof == pytest.approx(e.nof, rel=0.05)


def test_first_order_is_close_only_when_failures_are_rare() -> None:
    rare = JobPlan(
        tts_s=0, ttr_s=600, failures_per_gpu_day=0.0005, work_s=86400, gpus=256, interval_s=1800, blocking_s=30
    )
    assert expected_ett_first_order(rare).ett_pct == pytest.approx(expected_ett(rare).ett_pct, abs=0.1)
    busy = PLANS["flaky_2000gpu"]  # 40 failures a day: first order misses replay failures and compounding
    assert abs(expected_ett_first_order(busy).ett_pct - expected_ett(busy).ett_pct) > 0.5


@pytest.mark.parametrize("r_f_per_1000_node_days", [6.50, 2.34])
@pytest.mark.parametrize("u0_min", [5, 20])
def test_matches_kokolis_ettr_model(r_f_per_1000_node_days: float, u0_min: float) -> None:
    nodes, gpus_per_node, write_s = 128, 8, 60.0
    r_f = r_f_per_1000_node_days / 1000
    dt = kokolis_optimal_interval(nodes, r_f, write_s)
    # their optimum is Young's / the blog's with failures per day = nodes x r_f
    assert dt == pytest.approx(optimal_interval(write_s, nodes * r_f), rel=1e-12)
    ettr = 100 * kokolis_ettr(nodes, r_f, u0_min * 60, write_s, dt)
    plan = JobPlan(
        tts_s=0,
        ttr_s=u0_min * 60,
        failures_per_gpu_day=r_f / gpus_per_node,
        work_s=30 * 86400,  # a long run: ETTR has no start-up term
        gpus=nodes * gpus_per_node,
        interval_s=dt,
        blocking_s=write_s,
    )
    ours = expected_ett(plan).ett_pct
    assert ours == pytest.approx(ettr, rel=0.05)
    assert ours == pytest.approx(ettr, abs=0.1)


def test_plan_validation() -> None:
    with pytest.raises(ValueError, match="gpus"):
        JobPlan(tts_s=0, ttr_s=0, failures_per_gpu_day=0, work_s=1, gpus=0, interval_s=1, blocking_s=0)
    with pytest.raises(ValueError, match="interval_s"):
        JobPlan(tts_s=0, ttr_s=0, failures_per_gpu_day=0, work_s=1, gpus=1, interval_s=0, blocking_s=0)
    with pytest.raises(ValueError, match="failures_per_gpu_day"):
        JobPlan(tts_s=0, ttr_s=0, failures_per_gpu_day=-1, work_s=1, gpus=1, interval_s=1, blocking_s=0)
