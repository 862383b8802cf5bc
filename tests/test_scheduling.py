"""Preemption-policy simulation and crash-loop cost (ettcore.planning.scheduling), on hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest
from pytest import approx

from ettcore.planning import scheduling
from ettcore.synthetic.traces import scenario_trace
from ettcore.trace import load_trace

TWO = scheduling.Jobs(gpus=np.array([1.0, 1.0]), interval_s=np.array([100.0, 100.0]), restart_s=np.array([10.0, 10.0]))


def run(policy: str, jobs=TWO, **kw):
    args = dict(policy=policy, demands_per_day=0, horizon_days=1, demand_times_s=[20.0], phase=[0.5, 0.1])
    args.update(kw)
    return scheduling.simulate_preemptions(jobs, **args)


def test_stage_aware_takes_the_job_that_checkpointed_last() -> None:
    # at t=20 job 0 is 70 s past its checkpoint (phase 0.5 of 100 s), job 1 is 30 s past (phase 0.1)
    r = run("stage_aware")
    assert r["nof"] == 1
    assert r["replay_gpu_h"] == approx(30 / 3600) and r["restart_gpu_h"] == approx(10 / 3600)
    assert r["ett_pct"] == approx(100 * (1 - 40 / (2 * 86400)))
    assert r["mean_wait_min"] == 0


def test_random_with_one_job() -> None:
    one = scheduling.Jobs(np.array([2.0]), np.array([100.0]), np.array([10.0]))
    r = run("random", jobs=one, phase=[0.5])
    assert r["replay_gpu_h"] == approx(2 * 70 / 3600) and r["restart_gpu_h"] == approx(2 * 10 / 3600)


def test_wait_knob_preempts_right_after_a_checkpoint() -> None:
    # job 0 reaches its checkpoint 30 s after the demand (100 - 70): no work lost, the tenant waits 30 s
    r = run("wait", wait_s=50.0)
    assert r["replay_gpu_h"] == 0 and r["restart_gpu_h"] == approx(10 / 3600)
    assert r["mean_wait_min"] == approx(0.5)
    # with a 10 s knob no job checkpoints in time: stage-aware choice 10 s later (job 1, 40 s past its checkpoint)
    r = run("wait", wait_s=10.0)
    assert r["replay_gpu_h"] == approx(40 / 3600) and r["mean_wait_min"] == approx(10 / 60)


def test_restarting_jobs_are_not_preempted_again() -> None:
    one = scheduling.Jobs(np.array([1.0]), np.array([100.0]), np.array([50.0]))
    r = run("random", jobs=one, phase=[0.5], demand_times_s=[20.0, 40.0])  # the second demand finds it restarting
    assert r["nof"] == 1


def test_policies_ordered_on_a_generated_fleet() -> None:
    jobs = scheduling.jobs_from_trace(load_trace(scenario_trace("benchmark", 14, 0)), n=200, seed=1, requeue_s=300)
    assert len(jobs.gpus) == 200 and (jobs.interval_s > 0).all()
    df = scheduling.compare_policies(jobs, demands_per_day=40, horizon_days=7, wait_s=900, seed=3)
    by = {r["policy"]: r for r in df.iter_rows(named=True)}
    assert by["stage_aware"]["replay_gpu_h"] < by["random"]["replay_gpu_h"]
    assert by["wait"]["replay_gpu_h"] <= by["stage_aware"]["replay_gpu_h"]
    assert by["wait"]["mean_wait_min"] > 0 == by["random"]["mean_wait_min"]
    assert by["random"]["demands"] == by["wait"]["demands"]  # same demand stream


def test_crash_loop_cost() -> None:
    # 10 min start-up + 5 min re-queue: 96 attempts a day, each holding 8 GPUs for 10 min = 128 GPU-hours
    assert scheduling.crash_loop_cost(startup_s=600, requeue_s=300, gpus=8, horizon_days=1, detect_after=None) == {
        "attempts": 96,
        "gpu_h": approx(128.0),
    }
    assert scheduling.crash_loop_cost(startup_s=600, requeue_s=300, gpus=8, horizon_days=1, detect_after=3) == {
        "attempts": 3,
        "gpu_h": approx(4.0),
    }
    with pytest.raises(ValueError):
        scheduling.crash_loop_cost(startup_s=600, requeue_s=300, gpus=8, horizon_days=1, detect_after=0)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        run("fifo")
    with pytest.raises(ValueError):
        run("random", phase=[0.5, 1.0])
    with pytest.raises(ValueError):
        scheduling.Jobs(np.array([]), np.array([]), np.array([]))
