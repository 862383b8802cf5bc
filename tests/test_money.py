"""Lost GPU-hours as money: ``--gpu-hour-price PRICE|FILE`` and ``--currency`` in ``summarize``,
``opportunities`` and the Prometheus export.

Every expected number is worked out by hand from the two-job trace below (comments give the arithmetic).
Job ``a``: 8 GPUs, 2 h wall: 30 min queue (scheduling: no GPU held, not billed), 10 min hardware setup, 70 min
training, 10 min shutdown.  Job ``b``: 2 GPUs, 1 h wall: 15 min trainer init, 45 min training.
"""

from __future__ import annotations

import json

import pytest

from ettcore.cli import main
from ettcore.errors import InputError
from ettcore.metric import money

JOBS = "job_id,model,gpus,partition,gpu_type\na,ranker,8,gpu,h100\nb,tiny,2,gpu,a100\n"
ATTEMPTS = """job_id,attempt,start,end,end_reason
a,0,2026-01-05T00:00:00Z,2026-01-05T02:00:00Z,completed
b,0,2026-01-05T00:00:00Z,2026-01-05T01:00:00Z,completed
"""
SPANS = """job_id,attempt,phase,stage,start,end,cursor_start,cursor_end
a,0,scheduling,queue,2026-01-05T00:00:00Z,2026-01-05T00:30:00Z,,
a,0,hardware_setup,,2026-01-05T00:30:00Z,2026-01-05T00:40:00Z,,
a,0,train,,2026-01-05T00:40:00Z,2026-01-05T01:50:00Z,0,700
a,0,shutdown,,2026-01-05T01:50:00Z,2026-01-05T02:00:00Z,,
b,0,trainer_init,,2026-01-05T00:00:00Z,2026-01-05T00:15:00Z,,
b,0,train,,2026-01-05T00:15:00Z,2026-01-05T01:00:00Z,0,450
"""


def write_trace(folder):
    """The two-job trace above, as CSV files in ``folder``."""
    folder.mkdir()
    for name, text in (("jobs", JOBS), ("attempts", ATTEMPTS), ("spans", SPANS)):
        (folder / f"{name}.csv").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture()
def trace(tmp_path):
    return write_trace(tmp_path / "t")


def summarize_json(capsys, *args) -> dict:
    assert main(["summarize", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_flat_price_in_summarize_json(trace, capsys):
    doc = summarize_json(capsys, trace, "--gpu-hour-price", "2.5")
    m = doc["money"]
    assert m["currency"] == "USD" and m["gpu_hour_price"] == 2.5 and m["unbilled"] == ["scheduling"]
    jobs = {j["job_id"]: j["money"] for j in doc["jobs"]}
    # a: held 8 x (7200 - 1800) / 3600 = 12 GPU-h -> 30; lost: setup 8 x 600 / 3600 x 2.5 = 3.333.., shutdown the same
    assert jobs["a"]["held_gpu_h"] == pytest.approx(12.0)
    assert jobs["a"]["cost"] == pytest.approx(30.0)
    assert jobs["a"]["hardware_setup_cost"] == pytest.approx(8 * 600 / 3600 * 2.5)
    assert jobs["a"]["lost_cost"] == pytest.approx(2 * 8 * 600 / 3600 * 2.5)
    assert jobs["a"]["waiting_gpu_h"] == pytest.approx(4.0)  # 8 x 1800 s, shown, not billed
    assert "scheduling_cost" not in jobs["a"]
    # b: held 2 x 3600 / 3600 = 2 GPU-h -> 5; lost trainer init 2 x 900 / 3600 x 2.5 = 1.25
    assert (jobs["b"]["cost"], jobs["b"]["lost_cost"]) == pytest.approx((5.0, 1.25))
    assert m["fleet"]["cost"] == pytest.approx(35.0)
    assert m["fleet"]["lost_cost"] == pytest.approx(20 / 3 + 1.25)
    by_owner = {r["owner"]: r["lost_cost"] for r in m["lost_by_owner"]}
    assert by_owner["Cluster infrastructure"] == pytest.approx(20 / 6)
    assert by_owner["Trainer framework"] == pytest.approx(1.25)
    assert "Scheduler" not in by_owner  # never billed
    by_model = {r["model"]: r["lost_cost"] for r in m["by_model"]}
    assert by_model == pytest.approx({"ranker": 20 / 3, "tiny": 1.25})


def test_no_price_no_money(trace, capsys):
    doc = summarize_json(capsys, trace)
    assert "money" not in doc and all("money" not in j for j in doc["jobs"])
    assert main(["summarize", str(trace)]) == 0
    assert "cost" not in capsys.readouterr().out


def test_price_table_first_match_wins(trace, tmp_path, capsys):
    table = tmp_path / "prices.csv"
    # a is an h100 (row 1: 4.0) although row 2 (partition gpu) would match it too; b falls to row 2 (3.0)
    table.write_text("gpu_type,partition,price\nh100,,4.0\n,gpu,3.0\n*,*,1.0\n", encoding="utf-8")
    doc = summarize_json(capsys, trace, "--gpu-hour-price", table, "--currency", "EUR")
    jobs = {j["job_id"]: j["money"] for j in doc["jobs"]}
    assert jobs["a"]["price_per_gpu_h"] == 4.0 and jobs["b"]["price_per_gpu_h"] == 3.0
    assert jobs["a"]["cost"] == pytest.approx(48.0)  # 12 GPU-h x 4
    assert jobs["b"]["lost_cost"] == pytest.approx(0.5 * 3.0)  # 2 x 900 s = 0.5 GPU-h
    assert doc["money"]["currency"] == "EUR" and doc["money"]["fleet"]["cost"] == pytest.approx(48 + 6)
    yml = tmp_path / "prices.yaml"
    yml.write_text("prices:\n  - {model: tiny, price: 7}\n  - {price: 1}\n", encoding="utf-8")
    doc = summarize_json(capsys, trace, "--gpu-hour-price", yml)
    assert {j["job_id"]: j["money"]["price_per_gpu_h"] for j in doc["jobs"]} == {"a": 1.0, "b": 7.0}


@pytest.mark.parametrize(
    "text, where",
    [
        ("gpu_type,price\nh100,-1\n", "prices.csv, row 1, field 'price'"),
        ("gpu_type,price\nh100,cheap\n", "prices.csv, row 1, field 'price'"),
        ("rack,price\nr1,2\n", "prices.csv, row 1, field 'rack': unknown label"),
        ("gpu_type,price\nh100,2\n", "prices.csv, field 'price': no row matches job 'b'"),
    ],
)
def test_bad_price_tables_are_one_line_exit_2(trace, tmp_path, capsys, text, where):
    table = tmp_path / "prices.csv"
    table.write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert main(["summarize", str(trace), "--gpu-hour-price", str(table)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and where in err[0], err


def test_bad_flat_price_and_currency():
    with pytest.raises(InputError, match="finite number >= 0"):
        money.parse_prices("-2")
    with pytest.raises(InputError, match="neither a number nor a price table"):
        money.parse_prices("nope")
    with pytest.raises(InputError, match="one word"):
        money.parse_prices("2", "US D")


def test_opportunities_ranked_by_money(trace, capsys):
    assert main(["opportunities", str(trace), "--cut", "0.5", "--gpu-hour-price", "2", "--json", "--days", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    got = {r["component"]: r for r in rows}
    # a 50% cut returns half of each lost GPU-hour a day; scheduling (a: 8 x 1800 s = 4 GPU-h) returns 2 GPU-h a day
    # but no money: it holds no GPU.  hardware_setup: 8 x 600 s = 1.333 GPU-h lost, half returned, x 2 a GPU-hour
    assert got["scheduling"]["returned_gpu_h_per_day"] == pytest.approx(2.0)
    assert got["scheduling"]["returned_cost_per_day"] == 0
    assert got["hardware_setup"]["returned_cost_per_day"] == pytest.approx(4 / 3 / 2 * 2)
    assert got["trainer_init"]["returned_cost_per_day"] == pytest.approx(0.5 / 2 * 2)
    # ranked by money: scheduling returns the most GPU-hours but ranks below every billed component that returns some
    order = [r["component"] for r in rows]
    assert order.index("scheduling") > order.index("trainer_init")
    assert rows[0]["component"] in ("hardware_setup", "shutdown")


def test_money_in_the_prometheus_export(trace, tmp_path, capsys):
    out = tmp_path / "m.prom"
    assert main(["export", "prometheus", str(trace), "--gpu-hour-price", "2.5", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert 'ett_fleet_cost{currency="USD"} 35\n' in text
    assert (
        'ett_fleet_lost_cost{component="hardware_setup",owner="Cluster infrastructure",currency="USD"} 3.333333\n'
        in (text)
    )
    assert (
        'ett_model_lost_cost{model="tiny",component="trainer_init",owner="Trainer framework",currency="USD"} 1.25\n'
        in (text)
    )
    assert 'ett_job_lost_cost{job_id="a",model="ranker",currency="USD"} 6.666667\n' in text
    assert 'component="scheduling",owner="Scheduler",currency=' not in text  # never billed
    assert main(["export", "prometheus", str(trace), "--out", str(out)]) == 0
    assert "_cost" not in out.read_text(encoding="utf-8")
