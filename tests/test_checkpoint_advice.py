"""What interval each model should checkpoint at (``ettcore.planning.checkpoint_advice``): the measured inputs on a
SYNTHETIC trace worked by hand, each model's rate (its own, else the fleet's at its size, else the fleet's), and the
advice the planning model gives for them."""

from __future__ import annotations

import pytest
from test_cause_properties import _write

from ettcore.planning.checkpoint_advice import TTR_S, WORK_H, checkpoint_advice
from ettcore.planning.expected import JobPlan, best_interval
from ettcore.trace import load_trace

B = 1_769_900_000_000  # 2026-01-31T22:53:20Z
S = 1000
H = 3600 * S


def _attempt(job: str, k: int, start: int, length: int, reason: str, cause: str | None = None) -> dict:
    return dict(job_id=job, attempt=k, start=start, end=start + length, end_reason=reason, cause=cause)


def _saves(job: str, k: int, start: int, first_s: int, every_s: int, n: int) -> list[dict]:
    """``n`` checkpoint saves of 30 s, the first ``first_s`` into the attempt, then one every ``every_s`` from the
    previous save's end."""
    out, t = [], start + first_s * S
    for _ in range(n):
        out.append(dict(job_id=job, attempt=k, phase="checkpoint_save", start=t, end=t + 30 * S))
        t += (30 + every_s) * S
    return out


def trace() -> dict:
    """Model ``a`` (8 GPUs): job a1 runs 3 h and fails, then 3 h and completes; each attempt saves 5 times, 30 s a
    save, 1800 s apart: 48 GPU-hours, 1 interruption, 10 saves, 8 intervals of 1800 s.  Model ``b`` (8 GPUs): 2 h
    without failure, saves twice 600 s apart: 16 GPU-hours.  Model ``c`` (16 GPUs): 1 h, no save: 16 GPU-hours."""
    attempts = [
        _attempt("a1", 0, B, 3 * H, "failure", "user_error"),
        _attempt("a1", 1, B + 3 * H + 600 * S, 3 * H, "completed"),
        _attempt("b1", 0, B, 2 * H, "completed"),
        _attempt("c1", 0, B, 1 * H, "completed"),
    ]
    spans = [
        *_saves("a1", 0, B, 1800, 1800, 5),
        *_saves("a1", 1, B + 3 * H + 600 * S, 1800, 1800, 5),
        *_saves("b1", 0, B, 600, 600, 2),
    ]
    jobs = [
        dict(job_id="a1", model="a", gpus=8),
        dict(job_id="b1", model="b", gpus=8),
        dict(job_id="c1", model="c", gpus=16),
    ]
    return {"jobs": jobs, "attempts": attempts, "spans": spans}


def test_the_measured_inputs_and_the_rates_by_hand(tmp_path):
    got = {r["model"]: r for r in checkpoint_advice(load_trace(_write(trace(), tmp_path / "t"))).iter_rows(named=True)}
    a, b, c = got["a"], got["b"], got["c"]
    assert (a["gpus"], a["jobs"], a["held_gpu_h"], a["interruptions"]) == (8, 1, 48.0, 1)
    assert (a["saves"], a["blocking_s"], a["intervals"], a["interval_s"]) == (10, 30.0, 8, 1800.0)
    assert (a["rate_per_gpu_h"], a["rate_from"]) == (pytest.approx(1 / 48), "own")
    # b never failed: the fleet's rate at 8 GPUs, a's and b's jobs: 1 interruption over 48 + 16 GPU-hours
    assert (b["held_gpu_h"], b["interruptions"], b["saves"], b["intervals"], b["interval_s"]) == (16.0, 0, 2, 1, 600.0)
    assert (b["rate_per_gpu_h"], b["rate_from"]) == (pytest.approx(1 / 64), "fleet at its size")
    # c: nothing at 16 GPUs failed, so the fleet's rate, 1 over 80 GPU-hours; and no save: no advice
    assert (c["rate_per_gpu_h"], c["rate_from"]) == (pytest.approx(1 / 80), "fleet")
    assert c["saves"] == 0 and c["blocking_s"] is None and c["best_interval_s"] is None
    assert c["advice"] == "no checkpoint save measured"


def test_the_advice_is_the_planning_models_optimum_for_the_measured_inputs(tmp_path):
    got = {r["model"]: r for r in checkpoint_advice(load_trace(_write(trace(), tmp_path / "t"))).iter_rows(named=True)}
    for model, rate, interval in (("a", 1 / 48, 1800.0), ("b", 1 / 64, 600.0)):
        r = got[model]
        # the plan from the hand-derived inputs: 8 GPUs, 30 s blocking, failures per GPU-day = 24 x the hourly rate
        want = best_interval(JobPlan(0.0, TTR_S, rate * 24, WORK_H * 3600, 8, interval, 30.0))
        assert r["best_interval_s"] == pytest.approx(want.interval_s)
        assert r["today_ett_pct"] == pytest.approx(want.today_ett_pct)
        assert r["best_ett_pct"] >= r["today_ett_pct"] and r["gain_pct_points"] >= 0
        # Young's first-order optimum sqrt(2 x blocking / (rate x gpus)), by hand
        assert r["young_s"] == pytest.approx((2 * 30 / (rate * 8 / 3600)) ** 0.5)
        assert r["advice"] is None
    # a fails more often than b assumes: its best interval is the shorter
    assert got["a"]["best_interval_s"] < got["b"]["best_interval_s"]


def test_ett_opportunities_plans_the_job_it_is_given(tmp_path, capsys):
    """``ett opportunities --work-h 48 --ttr-s 120``: the advice plans 48 h of training with 120 s of restart
    overhead (the plan from the hand-derived inputs of model ``a``: 8 GPUs, 1 failure in 48 GPU-hours, 30 s blocking,
    1800 s today); a plan that cannot be is one line naming its option."""
    import json

    from ettcore import cli

    folder = str(_write(trace(), tmp_path / "t"))
    assert cli.main(["opportunities", folder, "--json", "--work-h", "48", "--ttr-s", "120"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["checkpointing_plan"]["work_h"], doc["checkpointing_plan"]["ttr_s"]) == (48.0, 120.0)
    a = next(r for r in doc["checkpointing"] if r["model"] == "a")
    want = best_interval(JobPlan(0.0, 120.0, 24 / 48, 48 * 3600.0, 8, 1800.0, 30.0))
    default = best_interval(JobPlan(0.0, TTR_S, 24 / 48, WORK_H * 3600, 8, 1800.0, 30.0))
    assert a["best_interval_s"] == pytest.approx(want.interval_s)
    assert a["today_ett_pct"] == pytest.approx(want.today_ett_pct)
    assert want.today_ett_pct != pytest.approx(default.today_ett_pct)  # not the default plan's
    assert cli.main(["opportunities", folder, "--work-h", "48", "--ttr-s", "120"]) == 0
    assert "planned: 48 h of training (--work-h), 120 s restart overhead (--ttr-s)" in capsys.readouterr().out
    for flag, bad in (("--work-h", "0"), ("--work-h", "inf"), ("--ttr-s", "-1")):
        assert cli.main(["opportunities", folder, flag, bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"ett: {flag}"), err
