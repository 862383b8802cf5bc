"""Ranked opportunities: the pure ranking on hand-made frames, then ``ett opportunities`` on the sample trace.

Hand values are worked out in the comments (window of 1 day, so GPU-hours a day
are plain GPU-hours).  Best decile = 10th percentile, linear interpolation: of
two levels x <= y it is x + 0.1 (y - x).
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ettcore.planning.opportunities import lost_by_component, rank_opportunities


def lost() -> pl.DataFrame:
    rows = [
        # pt2_compile (repeated): J1 100 s, NoF 0 -> level 100; J2 600 s, NoF 2 -> level 200
        ("J1", "m", 10, 0, "pt2_compile", "Compiler", 100.0),
        ("J2", "m", 20, 2, "pt2_compile", "Compiler", 600.0),
        # shutdown (not repeated): J1 1000 s, J2 0 s
        ("J1", "m", 10, 0, "shutdown", "Model publishing", 1000.0),
        ("J2", "m", 20, 2, "shutdown", "Model publishing", 0.0),
        # trainer_init: same owner as nothing else; both jobs equal -> nothing to gain at the decile
        ("J1", "m", 10, 0, "trainer_init", "Trainer framework", 300.0),
        ("J2", "m", 20, 2, "trainer_init", "Trainer framework", 900.0),
    ]
    return pl.DataFrame(rows, schema=["job_id", "group", "gpus", "nof", "component", "owner", "seconds"], orient="row")


def test_best_decile_by_hand() -> None:
    r = rank_opportunities(lost(), window_days=1.0)
    rows = {x["component"]: x for x in r.to_dicts()}
    # shutdown: levels 1000, 0 -> target 100; J1 saves 900 s x 10 GPUs = 2.5 GPU-h
    assert rows["shutdown"]["returned_gpu_h_per_day"] == pytest.approx(2.5)
    assert rows["shutdown"]["lost_gpu_h_per_day"] == pytest.approx(10 * 1000 / 3600)
    # pt2_compile: levels 100, 200 -> target 110; J2 saves (200 - 110) x (1 + 2) = 270 s x 20 GPUs = 1.5 GPU-h
    assert rows["pt2_compile"]["returned_gpu_h_per_day"] == pytest.approx(1.5)
    assert rows["pt2_compile"]["jobs"] == 1
    # trainer_init: levels 300, 300 -> nothing returned
    assert rows["trainer_init"]["returned_gpu_h_per_day"] == pytest.approx(0.0)
    assert r["component"].to_list() == ["shutdown", "pt2_compile", "trainer_init"]
    assert r["rank"].to_list() == [1, 2, 3]
    assert r["returned_share_pct"].to_list() == pytest.approx([62.5, 37.5, 0.0])


def test_percentage_cut_by_hand_and_window() -> None:
    r = rank_opportunities(lost(), window_days=2.0, cut=0.5, by="owner")
    rows = {x["owner"]: x["returned_gpu_h_per_day"] for x in r.to_dicts()}
    # a 50 % cut returns half of every GPU-second: (10 x 50 + 20 x 300) / 3600 / 2 days for the compiler
    assert rows["Compiler"] == pytest.approx((10 * 50 + 20 * 300) / 3600 / 2)
    assert rows["Model publishing"] == pytest.approx(10 * 500 / 3600 / 2)
    assert rows["Trainer framework"] == pytest.approx((10 * 150 + 20 * 450) / 3600 / 2)
    assert r["owner"].to_list() == ["Trainer framework", "Compiler", "Model publishing"]
    assert "component" not in r.columns


def test_groups_are_compared_only_with_their_peers() -> None:
    df = lost().with_columns(pl.Series("group", ["a", "b"] * 3))
    r = rank_opportunities(df, window_days=1.0)
    assert (r["returned_gpu_h_per_day"] == 0).all()  # each group has one job: no better peer


def test_errors() -> None:
    with pytest.raises(ValueError, match="lacks column"):
        rank_opportunities(lost().drop("nof"), window_days=1)
    with pytest.raises(ValueError, match="by must be"):
        rank_opportunities(lost(), window_days=1, by="team")
    with pytest.raises(ValueError, match="window_days"):
        rank_opportunities(lost(), window_days=0)
    with pytest.raises(ValueError, match="cut"):
        rank_opportunities(lost(), window_days=1, cut=1.5)
    with pytest.raises(ValueError, match="negative.*'J1'"):
        rank_opportunities(lost().with_columns(pl.lit(-1.0).alias("seconds")), window_days=1)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 64), st.integers(0, 4), st.floats(0, 1e5), st.floats(0, 1e5)),
        min_size=1,
        max_size=12,
    ),
    st.one_of(st.none(), st.floats(0.01, 1.0)),
)
def test_ranking_properties(rows, cut) -> None:
    data = []
    for i, (gpus, nof, compile_s, shut_s) in enumerate(rows):
        data.append((f"J{i}", "m", gpus, nof, "pt2_compile", "Compiler", compile_s))
        data.append((f"J{i}", "m", gpus, nof, "shutdown", "Model publishing", shut_s))
    df = pl.DataFrame(data, schema=["job_id", "group", "gpus", "nof", "component", "owner", "seconds"], orient="row")
    r = rank_opportunities(df, window_days=1.0, cut=cut)
    for x in r.to_dicts():
        assert -1e-9 <= x["returned_gpu_h_per_day"] <= x["lost_gpu_h_per_day"] * (1 + 1e-9) + 1e-9
        if cut is not None:
            assert x["returned_gpu_h_per_day"] == pytest.approx(cut * x["lost_gpu_h_per_day"], rel=1e-9, abs=1e-9)
    v = r["returned_gpu_h_per_day"].to_list()
    assert v == sorted(v, reverse=True)


def test_lost_by_component_fills_missing_components_with_zero() -> None:
    summary = pl.DataFrame({"job_id": ["A", "B"], "model": ["m", "m"], "gpus": [8, 8], "nof": [0, 1]})
    l2 = pl.DataFrame(
        {
            "job_id": ["A", "A", "B", "B"],
            "bucket": ["tts", "productive", "recovery", "tts"],
            "phase": ["pt2_compile", "train", "pt2_compile", "shutdown"],
            "component": ["pt2_compile", "wasted_training", "pt2_compile", "shutdown"],
            "owner": ["Compiler", "Training loop and checkpointing", "Compiler", "Model publishing"],
            "seconds": [100.0, 5000.0, 50.0, 10.0],
        }
    )
    got = lost_by_component(summary, l2)
    assert got.select("job_id", "component", "seconds").rows() == [
        ("A", "pt2_compile", 100.0),
        ("A", "shutdown", 0.0),
        ("B", "pt2_compile", 50.0),
        ("B", "shutdown", 10.0),
    ]


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    """``ett`` with ``argv`` (through its main: input errors are one line each on stderr, exit 2)."""
    from ettcore import cli

    rc = cli.main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_json_on_the_sample_trace(capsys) -> None:
    from ettcore.config import SAMPLE_TRACE

    rc, out, _ = _run(["opportunities", str(SAMPLE_TRACE), "--json", "--cut", "30%"], capsys)
    assert rc == 0
    doc = json.loads(out)
    assert doc["synthetic"] is True and doc["target"] == {"kind": "cut", "fraction": 0.3}
    rows = doc["rows"]
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert sum(r["returned_share_pct"] for r in rows) == pytest.approx(100)
    for r in rows:
        assert r["returned_gpu_h_per_day"] == pytest.approx(0.3 * r["lost_gpu_h_per_day"])


def test_cli_table_is_labelled_synthetic(capsys) -> None:
    from ettcore.config import SAMPLE_TRACE

    rc, out, _ = _run(["opportunities", str(SAMPLE_TRACE), "--by", "owner"], capsys)
    assert rc == 0
    assert out.startswith("SYNTHETIC")
    assert "returned_gpu_h_per_day" in out and "Compiler" in out


def test_cli_bad_input(capsys, tmp_path) -> None:
    rc, _, err = _run(["opportunities", str(tmp_path / "missing")], capsys)
    assert rc == 2 and "missing" in err
    with pytest.raises(SystemExit) as e:
        _run(["opportunities", str(tmp_path), "--cut", "150%"], capsys)
    assert e.value.code == 2


def test_cli_unknown_comparable_column(capsys) -> None:
    from ettcore.config import SAMPLE_TRACE

    rc, _, err = _run(["opportunities", str(SAMPLE_TRACE), "--comparable", "nosuch"], capsys)
    assert rc == 2 and "--comparable" in err and "nosuch" in err


def test_wires_into_the_ett_command(capsys) -> None:
    """Listed in ettcore.cli's commands, the subcommand runs under ``ett``."""
    from ettcore import cli
    from ettcore.config import SAMPLE_TRACE

    rc = cli.main(["opportunities", str(SAMPLE_TRACE), "--json", "--days", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["window_days"] == 1.0 and doc["target"]["kind"] == "best_decile"
