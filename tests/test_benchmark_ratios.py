"""The benchmark's paired ratio (benchmarks/run.py): each run over the read floor measured just before it, median."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_paired_ratio_is_the_median_of_each_run_over_its_own_floor(bench):
    # runs 30, 60, 45 s after floors 2, 3, 5 s: ratios 15, 20, 9, median 15 (not 45 / 2 = 22.5, the median run over the
    # best floor)
    runs = [{"wall_s": 30.0}, {"wall_s": 60.0}, {"wall_s": 45.0}]
    assert bench.paired_ratio(runs, [2.0, 3.0, 5.0]) == pytest.approx(15.0)
    assert bench.paired_ratio(runs[:2], [2.0, 3.0]) == pytest.approx(17.5)  # an even count: the mean of the middle two


def test_paired_ratio_is_none_when_a_run_failed_or_a_floor_is_missing(bench):
    assert bench.paired_ratio([{"wall_s": 30.0}, {"error": "timed out"}], [2.0, 2.0]) is None
    assert bench.paired_ratio([{"wall_s": 30.0}], [None]) is None
    assert bench.paired_ratio([{"wall_s": 30.0}], []) is None


def test_the_targets_table_shows_the_paired_ratio_and_the_drift(bench):
    cmd = {"wall_s": 45.0, "peak_mib": 2000.0, "runs_s": [45.0], "paired_x": 14.0, "floors_s": [3.2, 3.0]}
    big = {
        "jobs": 1_000_000,
        "spans": 45_000_000,
        "repeat": 1,
        "floor_read": {"result": {"seconds": 2.5}},
        "floor_read_after": {"result": {"seconds": 3.0}},
        "cli_summarize": cmd,
        "cli_summarize_cached": {**cmd, "wall_s": 50.0, "paired_x": 16.0},
    }
    text = "\n".join(bench.targets([big]))
    row = next(ln for ln in text.splitlines() if ln.startswith("| 1. `ett summarize --json`, default settings, cold"))
    assert "| 18.00x | <= 15x | NOT MET: 1.20x the target | 14.00x (met) |" in row  # 45 / 2.5 = 18; paired 14
    assert "the attribution: one window" in row  # what limits it, written out on the first row not met ...
    cached = next(
        ln for ln in text.splitlines() if ln.startswith("| 1. `ett summarize --json`, default settings, cached")
    )
    assert (
        "| 20.00x | <= 15x | NOT MET: 1.33x the target | 16.00x (not met) | as above |" in cached
    )  # ... then referred to
    assert "2.50 s at the start" in text and "3.00 to 3.20 s" in text and "drifted by 28 %" in text  # 3.2 / 2.5 - 1


def test_same_figures_from_a_trace_and_a_store_have_one_digest_other_figures_do_not(bench, tmp_path):
    # the store's exactness check: a trace's and a store's answers differ only in the envelope's input object
    def answer(path, kind, ett):
        return (
            '{\n  "schema": {"name": "ett-summarize", "version": 1},\n'
            f'  "input": {{"path": "{path}", "kind": "{kind}", "engine": "duckdb", "spark_master": null}},\n'
            f'  "fleet": {{"ett_pct": {ett}}}\n}}\n'
        )

    (tmp_path / "t.json").write_text(answer("/x/trace", "trace", 41.5))
    (tmp_path / "s.json").write_text(answer("/y/fleet.duckdb", "store", 41.5))
    (tmp_path / "o.json").write_text(answer("/y/fleet.duckdb", "store", 41.6))
    trace = bench.output_digest(tmp_path / "t.json", "/x/trace")
    assert trace == bench.output_digest(tmp_path / "s.json", "/y/fleet.duckdb")
    assert trace != bench.output_digest(tmp_path / "o.json", "/y/fleet.duckdb")
