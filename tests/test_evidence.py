"""Evidence from outside: the window model, its grid, the measured ratios, and the scorecard's comparisons.

Expected values are worked out by hand in the comments (no call to the code under test computes them).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pytest import approx

from ettcore.planning import evidence
from ettcore.planning.expected import simulate_ett
from ettcore.present import charts, report, scorecard

# ----------------------------------------------------------------------------- the window model


def test_no_failures_fills_the_window_with_whole_stretches() -> None:
    # 12 h = 43,200 s; interval 3,200 s, blocking 800 s: 10 saved stretches of 4,000 s and a last one of 3,200 s
    # fill it exactly (10 x 4,000 + 3,200 = 43,200), so the work is 11 x 3,200 = 35,200 s: ETT 35,200 / 43,200
    fit = evidence.window_plan(evidence.Window(1, 0.5, 0), evidence.Costs(0, 800, interval_s=3200))
    assert fit.plan.work_s == approx(35_200, rel=1e-6)
    assert fit.ett_pct == approx(100 * 35_200 / 43_200, abs=1e-4)
    assert fit.expectation.nof == 0


def test_planned_interruptions_cost_their_restart_and_no_work() -> None:
    # one planned stop at 4,000 s leaves 39,200 s = 9 x 4,000 + 3,200: work 10 x 3,200 = 32,000 s
    fit = evidence.window_plan(evidence.Window(1, 0.5, 0, planned=1), evidence.Costs(4000, 800, interval_s=3200))
    assert fit.ett_pct == approx(100 * 32_000 / 43_200, abs=1e-4)
    # a planned stop with its own (shorter) restart: 43,200 - 3,200 = 40,000 = 9 x 4,000 + 4,000 -> 10 stretches of
    # 4,000 s would need a last one of 4,000 > 3,200; the largest work that fits is 10 x 3,200 = 32,000 s again,
    # leaving 800 s of the window unused by the model (the jump of one save)
    fit = evidence.window_plan(
        evidence.Window(1, 0.5, 0, planned=1), evidence.Costs(4000, 800, interval_s=3200, planned_restart_s=3200)
    )
    assert fit.plan.tts_s == 3200 and fit.plan.work_s == approx(32_000, rel=1e-6)


def test_one_failure_without_costs_gives_ln2() -> None:
    # No restart cost, no blocking, one stretch: each try either survives the work W or fails after an exponential
    # time, so E[wall] = (e^(L W) - 1) / L and E[NoF] = e^(L W) - 1. With E[NoF] = 1 and E[wall] = one day:
    # L = 1 per day and W = ln 2 days, so ETT% = 100 ln 2 and the fitted rate is exactly 1 per GPU-day.
    fit = evidence.window_plan(evidence.Window(1, 1.0, 1), evidence.Costs(0, 0, interval_s=2 * 86_400))
    assert fit.failures_per_gpu_day == approx(1.0, rel=1e-6)
    assert fit.ett_pct == approx(100 * math.log(2), abs=1e-4)
    assert fit.expectation.nof == approx(1.0, rel=1e-9)


def test_the_fitted_plan_matches_the_window_and_monte_carlo() -> None:
    window = evidence.Window(16_384, 54, 419, 47)  # Llama 3's published snapshot
    fit = evidence.window_plan(window, evidence.Costs(600, 3.24))
    assert fit.expectation.nof == approx(419, rel=1e-8)
    assert fit.expectation.wall_s == approx(54 * 86_400, rel=1e-8)
    # Young's interval sqrt(2 b / L) with L the fitted rate per second of training loop
    lam = fit.failures_per_gpu_day * 16_384 / 86_400
    assert fit.interval_s == approx(math.sqrt(2 * 3.24 / lam), rel=1e-9)
    mc = simulate_ett(fit.plan, runs=300, seed=3)  # an independent computation of the same model
    assert abs(mc.ett_pct - fit.ett_pct) < 4 * mc.ett_se_pct + 1e-9
    assert abs(mc.nof - 419) < 4 * 419**0.5 / 300**0.5 * 3


def test_window_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="gpus"):
        evidence.Window(0, 1, 1)
    with pytest.raises(ValueError, match="days"):
        evidence.Window(1, 0, 1)
    with pytest.raises(ValueError, match="failures"):
        evidence.Window(1, 1, -1)
    with pytest.raises(ValueError, match="planned interruptions"):
        evidence.window_plan(evidence.Window(1, 1, 0, planned=30), evidence.Costs(3600, 0, interval_s=600))
    with pytest.raises(ValueError, match="Young's interval"):
        evidence.window_plan(evidence.Window(1, 1, 1), evidence.Costs(60, 0))


def test_another_run_at_the_same_rate() -> None:
    w = evidence.Window(16_384, 54, 419, 47).at(9_600, 91)
    assert w.failures == approx(419 / (16_384 * 54) * 9_600 * 91, rel=1e-12) and w.planned == 0


def test_holding_range_on_a_grid() -> None:
    # one planned stop and nothing else: ETT% = 100 (86,400 - R) / 86,400, at least 95 for R <= 4,320 s
    grid = [600.0, 3600.0, 4200.0, 4400.0, 7200.0]
    (g,) = evidence.holding_range(
        evidence.Window(1, 1, 0, planned=1),
        evidence.Costs(0, 0, interval_s=2 * 86_400),
        target=95,
        op="ge",
        tolerance=0,
        restarts_s=grid,
        blockings_s=[0.0],
    )
    assert (g["restart_min_s"], g["restart_max_s"]) == (600.0, 4200.0)  # 4,400 s gives 94.91
    assert [round(e, 6) for _, e, _ in g["points"]] == [round(100 * (86_400 - r) / 86_400, 6) for r in grid]
    assert evidence.range_text([g], grid) == "restart 10-70 min (b 0 s); grid 10-120 min, 5 points"
    (none,) = evidence.holding_range(
        evidence.Window(1, 1, 0, planned=1),
        evidence.Costs(0, 0, interval_s=2 * 86_400),
        target=100,
        op="ge",
        tolerance=0,
        restarts_s=grid,
        blockings_s=[0.0],
    )
    assert none["restart_min_s"] is None and evidence.range_text([none], grid).startswith("restart none (b 0 s);")


# ----------------------------------------------------------------------------- measured ratios


def test_reduction_pct_and_its_standard_error() -> None:
    # before 2, 4: mean 3, sd sqrt 2, se 1; after 1, 1: mean 1, se 0. 1 - 1/3 = 66.67 %; se(1/3) = (1/3)(1/3)
    value, se = evidence.reduction_pct([2, 4], [1, 1])
    assert value == approx(200 / 3) and se == approx(100 / 9)


def test_paired_reduction_pct() -> None:
    # pooled 1 - 60/150 = 60 %; per pair 80 % and 20 %: sd 42.43, se 30
    value, se = evidence.paired_reduction_pct([100, 50], [20, 40])
    assert value == approx(60.0) and se == approx(30.0)
    with pytest.raises(ValueError, match="same length"):
        evidence.paired_reduction_pct([1, 2], [1])
    with pytest.raises(ValueError, match="at least two"):
        evidence.paired_reduction_pct([1], [1])


def test_restart_rule_ratio() -> None:
    # baseline: start-up 20 s (1 run) and 40 s (2 runs): 20 s a run, 1.5 runs a job; optimized: 10 s, 10 s (1 run
    # each): 10 s a run. Saving a start 10 s x (1 + 0.5 restarts) = 15 s predicted; measured 30 - 10 = 20 s
    r = evidence.restart_rule_ratio([20, 40], [1, 2], [10, 10], [1, 1], resamples=200)
    assert r["predicted_s"] == approx(15.0) and r["measured_s"] == approx(20.0) and r["ratio"] == approx(4 / 3)
    assert r["ratio_se"] > 0
    with pytest.raises(ValueError, match="two jobs"):
        evidence.restart_rule_ratio([20], [1], [10, 10], [1, 1])


# ----------------------------------------------------------------------------- the scorecard


def test_external_inputs_are_the_published_numbers() -> None:
    x = scorecard.external_inputs()
    assert (x["llama3_gpus"], x["llama3_days"], x["llama3_interruptions"]) == (16_384, 54, 466)
    assert (x["llama3_planned"], x["llama3_unexpected"]) == (47, 419)
    assert (x["byterobust_gpus"], x["byterobust_months"]) == (9_600, 3)
    rows = scorecard.published()
    assert rows["llama3_ett"].value == ">90" and rows["byterobust_ettr"].value == "97"
    assert rows["llama3_ett"].source.startswith("Llama 3 (arXiv 2407.21783)")


def test_external_inputs_name_a_bad_value(tmp_path: Path) -> None:
    bad = tmp_path / "external.csv"
    bad.write_text(
        "id,role,publication,source,quantity,value,unit,read_from,note\nx_gpus,input,P,s,q,many,GPUs,,\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"external.csv: row 'x_gpus', field 'value': not a number"):
        scorecard.external_inputs(bad)


def test_an_id_in_both_files_is_refused(tmp_path: Path) -> None:
    clash = tmp_path / "external.csv"
    clash.write_text(
        "id,role,publication,source,quantity,value,unit,read_from,note\nrep_wall,result,P,s,q,1,min,,\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="ids in both"):
        scorecard.published(external=clash)


def test_a_failing_comparison_is_a_finding_not_a_broken_reproduction(tmp_path: Path) -> None:
    card = scorecard.Scorecard("97-ext", "ext", synthetic=False, trace=scorecard.PUBLISHED_INPUTS)
    c = card.check("llama3_ett", 67.4, tolerance=0, evidence="external", basis="model", holds_over="restart 1-12 min")
    assert not c.passed and c.comparison  # an external check is always a comparison
    assert card.reproductions_passed and not card.all_passed
    assert "1 comparison FAIL (a finding, kept)" in card.summary()
    assert "FAIL (comparison)" in repr(card) and "holds over" in repr(card)
    real = scorecard.Scorecard("98-real", "real", synthetic=False)
    real.check("ckpt_blocking", 66.0, tolerance=4.1, evidence="measured", comparison=True, basis="fleet")
    real.check("rep_wall", 151.5, tolerance=0.05, evidence="measured", basis="a real job")
    card.save(tmp_path)
    real.save(tmp_path)
    board = scorecard.combine(scorecard.load_cards(tmp_path))
    assert not board["all_passed"] and board["reproductions_passed"] and board["comparisons_failed"] == 2
    assert board["evidence_rows"] == {"measured": 2, "calibrated": 0, "analytic": 0, "external": 1}
    html = report.index_html([], scorecard.load_cards(tmp_path), board, 1.0)
    assert '<b id="count-external">1</b> external' in html
    assert 'id="evidence-external"' in html and "FAIL (comparison)" in html
    assert "2 comparisons FAIL: findings, kept" in html and "(42 of the paper," in html
    assert "1 comparison FAIL (a finding, kept)" in report._evidence_counts(card.as_dict()["checks"])
    assert 'class="ett-banner published"' in report.banner_html(False, scorecard.PUBLISHED_INPUTS)
    # the index's chart colours and counts the classes, the new one included
    spec = charts.to_v5_spec(charts.evidence_scatter(board["detail"]))
    assert spec["title"]["subtitle"] == "3 checks (2 measured, 1 external); on the dashed line the two agree"
    colours = [layer["encoding"]["color"] for layer in spec["layer"] if "color" in layer.get("encoding", {})]
    assert colours[0]["scale"]["domain"] == ["measured", "external"]
    assert colours[0]["scale"]["range"] == [charts.EVIDENCE_COLORS["measured"], charts.EVIDENCE_COLORS["external"]]
