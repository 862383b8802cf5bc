"""Lost money as the fleet reports show it (``ettcore.present.money``).

The money figures are worked out by hand from the two-job trace of ``tests/test_money.py`` (comments give the
arithmetic), at a price table by model: ``ranker`` 3 EUR a GPU-hour, anything else 1.
"""

from __future__ import annotations

import pytest
from test_money import write_trace

from ettcore import metric
from ettcore.present import charts
from ettcore.present.money import lost_money, section
from ettcore.trace import load_trace

PRICES = "model,price\nranker,3\n,1\n"


@pytest.fixture()
def trace(tmp_path):
    return load_trace(write_trace(tmp_path / "t"))


@pytest.fixture()
def cost(trace, tmp_path):
    prices = tmp_path / "prices.csv"
    prices.write_text(PRICES, encoding="utf-8")
    jobs = metric.job_summary(trace)
    return lost_money(jobs, str(prices), "EUR", phase_map=trace.phase_map, synthetic=False)


def test_money_by_component_owner_model_and_fleet(cost):
    # a (ranker, 3 EUR): 8 GPUs x 1.5 h held = 12 GPU-h -> 36 EUR; hardware setup and shutdown 8 x 10 min = 1.333
    # GPU-h each -> 4 EUR each; the 30 min queue is 8 x 0.5 = 4 GPU-h waiting, not billed.
    # b (tiny, 1 EUR): 2 GPUs x 1 h held = 2 GPU-h -> 2 EUR; trainer init 2 x 15 min = 0.5 GPU-h -> 0.5 EUR.
    f = cost.fleet
    assert (f["jobs"], f["held_gpu_h"], f["cost"], f["lost_cost"], f["waiting_gpu_h"]) == pytest.approx(
        (2, 14.0, 38.0, 8.5, 4.0)
    )
    comp = {r["component"]: r for r in cost.component_frame().iter_rows(named=True)}
    assert comp["hardware_setup"]["lost_cost"] == pytest.approx(4.0)
    assert comp["hardware_setup"]["lost_gpu_h"] == pytest.approx(8 * 10 / 60)
    assert comp["hardware_setup"]["lost_share_pct"] == pytest.approx(100 * 4.0 / 8.5)
    assert comp["shutdown"]["lost_cost"] == pytest.approx(4.0)
    assert comp["trainer_init"]["lost_cost"] == pytest.approx(0.5) and comp["trainer_init"]["owner"] == (
        "Trainer framework"
    )
    assert comp["pt2_compile"]["lost_cost"] == 0.0
    # scheduling is never billed: no money, its GPU-hours are waiting time
    s = comp["scheduling"]
    assert (s["billed"], s["lost_cost"], s["lost_gpu_h"], s["waiting_gpu_h"]) == (False, None, None, 4.0)
    assert list(comp)[-1] == "scheduling" and all(r["billed"] for k, r in comp.items() if k != "scheduling")
    owners = {r["owner"]: r for r in cost.owner_table().frame.iter_rows(named=True)}
    assert owners["Cluster infrastructure"]["lost_cost"] == pytest.approx(4.0)
    assert owners["Model publishing"]["lost_cost"] == pytest.approx(4.0)
    assert owners["Trainer framework"]["lost_cost"] == pytest.approx(0.5)
    assert owners["Scheduler"]["lost_cost"] is None and owners["Scheduler"]["waiting_gpu_h"] == pytest.approx(4.0)
    models = {r["model"]: r for r in cost.group_table().frame.iter_rows(named=True)}
    assert models["(fleet)"]["lost_share_pct"] == pytest.approx(100 * 8.5 / 38)
    assert models["ranker"]["cost"] == pytest.approx(36.0) and models["ranker"]["lost_cost"] == pytest.approx(8.0)
    assert models["tiny"]["cost"] == pytest.approx(2.0) and models["tiny"]["lost_cost"] == pytest.approx(0.5)


def test_money_tables_and_chart_say_currency_price_and_waiting(cost):
    for t in (cost.group_table(), cost.component_table(), cost.owner_table()):
        text = t.text()
        assert "(EUR)" in text and "waiting, not billed (GPU-h)" in text, text
        assert "prices.csv" in text and "ASSUMED" not in text  # the price's source is named, and it is not assumed
        assert "<table" in t.html()
    spec = charts.to_v5_spec(cost.chart())
    assert "EUR" in spec["title"] and "assumed" not in spec["title"]
    bars, words = spec["layer"]
    assert bars["encoding"]["x"]["title"] == "money lost (EUR)"
    assert bars["encoding"]["color"]["title"] == "L2 component"  # a legend
    labels = {r["component"]: r["label"] for r in spec["datasets"][spec["data"]["name"]]}
    assert labels["hardware_setup"] == "4.00 EUR"
    assert labels["scheduling"] == "not billed: 4.00 GPU-h waiting, no GPU held"
    import vl_convert

    assert vl_convert.vegalite_to_svg(spec, vl_version=charts.VL_VERSION).startswith("<svg")


def test_an_assumed_price_says_so_everywhere(trace):
    jobs = metric.job_summary(trace)
    cost = lost_money(jobs, "2.5", "USD", phase_map=trace.phase_map, synthetic=True, assumed=True)
    parts = section(cost)
    for t in parts[1:2] + parts[3:]:
        assert "ASSUMED price" in t.text() and "SYNTHETIC data." in t.text()
    assert "ASSUMED" in parts[0].text and "at 2.5 USD a GPU-hour held" in parts[0].text
    title = charts.to_v5_spec(parts[2])["title"]
    assert title.startswith("SYNTHETIC:") and "an assumed 2.5 USD/GPU-h" in title
    # held 8 x 1.5 + 2 x 1 = 14 GPU-h at 2.5 = 35 USD; lost (1.333 + 1.333 + 0.5) GPU-h x 2.5 = 7.9166..
    assert cost.fleet["cost"] == pytest.approx(35.0) and cost.fleet["lost_cost"] == pytest.approx(19 / 6 * 2.5)


def test_no_price_no_money(trace):
    jobs = metric.job_summary(trace)
    for price in ("", "  "):
        assert lost_money(jobs, price, "USD", phase_map=trace.phase_map, synthetic=False) is None
    (note,) = section(None)
    assert "no money is shown" in note.text
    bundle = note._repr_mimebundle_()
    assert bundle["text/plain"] == note.text and bundle["text/html"].startswith("<p>")
