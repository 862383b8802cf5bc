"""MTTF against size: Garwood's interval, MTTF = 1 / (rate x N) and the projected ETT%, checked by hand."""

from __future__ import annotations

import math

import pytest
from test_nodes import _trace

from ettcore.errors import InputError
from ettcore.planning.reliability import fit_failure_rate, fit_trace, project
from ettcore.trace import load_trace


def test_garwood_against_table_values():
    # chi-square quantiles from a printed table: chi2(0.025; 4) = 0.4844, chi2(0.975; 6) = 14.4494
    f = fit_failure_rate(2, 100.0)
    assert f.rate_per_gpu_h == pytest.approx(0.02)
    assert f.low_per_gpu_h == pytest.approx(0.4844 / 200, rel=1e-3)
    assert f.high_per_gpu_h == pytest.approx(14.4494 / 200, rel=1e-4)


def test_no_failure_gives_an_upper_bound_not_a_division_by_zero():
    f = fit_failure_rate(0, 100.0)
    # chi2(0.975; 2) / 2 = -ln(0.025)
    assert (f.rate_per_gpu_h, f.low_per_gpu_h) == (0.0, 0.0)
    assert f.high_per_gpu_h == pytest.approx(-math.log(0.025) / 100)
    mttf, lo, hi = f.mttf_h(8)
    assert math.isinf(mttf) and math.isinf(hi) and lo == pytest.approx(100 / (8 * -math.log(0.025)))


def test_mttf_at_size_by_hand():
    f = fit_failure_rate(2, 100.0)
    mttf, lo, hi = f.mttf_h(1000)
    assert mttf == pytest.approx(1 / (0.02 * 1000))  # 0.05 h
    assert lo < mttf < hi


def test_projected_ett_by_hand():
    # rate 1e-3 per GPU-h at 1000 GPUs: one failure an hour.  One stretch of work W = 1 h (interval = W), no restart
    # cost, no saves: E[wall] = (e^(L W) - 1) / L = e - 1 hours, ETT% = 100 / (e - 1).
    f = fit_failure_rate(10, 10_000.0)
    p = project(f, 1000, work_h=1.0, interval_s=3600.0, blocking_s=0.0, ttr_s=0.0, runs=20_000)
    assert p.ett_pct == pytest.approx(100 / (math.e - 1))
    assert p.nof == pytest.approx(math.e - 1)
    assert p.mttf_h == pytest.approx(1.0)
    assert p.ett_low_pct < p.ett_pct < p.ett_high_pct
    assert abs(p.mc_ett_pct - p.ett_pct) < 4 * p.mc_ett_se_pct


def test_a_rate_no_job_gets_through_projects_zero_without_simulating():
    # 4 failures in 0.2 GPU-h (the bundled multi-node campaign's node failures) at 1024 GPUs: about 4e5 failures an
    # hour, 3e5 in a 30-min stretch; e^(rate x stretch) is past a float (it overflowed), and event by event each job
    # would need about e^(3e5) tries (the simulation never ended).  Closed form: ETT% 0, infinite expected failures.
    f = fit_failure_rate(4, 0.2)
    p = project(f, 1024, work_h=24.0, interval_s=1800.0, blocking_s=30.0, ttr_s=600.0)
    assert (p.ett_pct, p.ett_low_pct, p.ett_high_pct) == (0.0, 0.0, 0.0)
    assert math.isinf(p.nof) and p.mc_ett_pct is None and p.mc_ett_se_pct is None
    # one failure a stretch in expectation (e^1 - 1 of them), the simulation runs and agrees
    q = project(fit_failure_rate(2, 1.0), 1, work_h=24.0, interval_s=1800.0, blocking_s=0.0, ttr_s=0.0, runs=2000)
    assert q.nof == pytest.approx(48 * (math.e - 1)) and abs(q.mc_ett_pct - q.ett_pct) < 4 * q.mc_ett_se_pct


def test_zero_rate_projects_no_loss():
    p = project(fit_failure_rate(0, 50.0), 64, work_h=2.0, interval_s=600.0, blocking_s=0.0, ttr_s=60.0)
    assert p.ett_pct == pytest.approx(100.0) and p.ett_high_pct == pytest.approx(100.0) and p.ett_low_pct < 100.0


@pytest.mark.parametrize(
    "args, field",
    [((1, 0.0), "gpu_h"), ((1, 10.0, 1.5), "confidence")],
)
def test_bad_fits_are_input_errors(args, field):
    with pytest.raises(InputError) as e:
        fit_failure_rate(*args)
    assert e.value.problems[0].field == field
    with pytest.raises(InputError):
        fit_failure_rate(1, 10.0).mttf_h(0)


def test_fit_on_a_trace_counts_system_causes_only(tmp_path):
    # the hand trace of tests/test_nodes.py: 11 GPU-hours; A's failure has no cause (unknown), B's is user_error
    f = fit_trace(load_trace(_trace(tmp_path)))
    assert (f.failures, f.gpu_h) == (0, pytest.approx(11.0))
    f = fit_trace(load_trace(_trace(tmp_path / "h", cause_b0="hardware")))
    assert f.failures == 1 and f.rate_per_gpu_h == pytest.approx(1 / 11)


def test_cli_mttf_at(tmp_path, capsys):
    import json

    from ettcore import cli

    path = _trace(tmp_path, cause_b0="hardware")
    assert cli.main(["nodes", str(path), "--mttf-at", "11", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["mttf"]
    assert doc["fit"]["failures"] == 1
    assert doc["projection"]["mttf_h"] == pytest.approx(1.0)  # 1 / (1/11 per GPU-h x 11 GPUs)
    assert cli.main(["nodes", str(path), "--mttf-at", "0"]) == 2
    assert "Traceback" not in capsys.readouterr().err
