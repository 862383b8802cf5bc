"""Each source's own horizon: a store of two sources polled at different instants measures each source's running
jobs up to that source's own latest snapshot, not up to the other's.

The store holds the SYNTHETIC sample (``data/sample``, source ``default``: its running job is seen at 2026-01-06)
and the bundled Slurm campaign (``data/slurm-fleet/trace``, source ``slurm``: December 2026).  Each source's figures
in the store must equal its own one-shot measurement (the source's trace loaded and measured alone): per job, the
source's fleet row (``--by source``) and its running jobs' live progress; whether the stored results answer or the
rows are attributed again (another mapping, a window off the grid); after the other source's removal; and the
outputs say each source's horizon (``ett store info``, the JSON envelope's ``as_of``).  The Spark mirror's side is in
``tests/test_store_spark.py`` (two sources with different horizons, Spark against the store).
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ettcore import metric, store
from ettcore.cli import main
from ettcore.metric import hangs
from ettcore.trace.instants import iso
from ettcore.trace.load import load_trace

SOURCES = {"default": "data/sample", "slurm": "data/slurm-fleet/trace"}
COLUMNS = ["job_id", "status", "wall_s", "productive_s", "ett_pct"]


def _jobs(t) -> pl.DataFrame:
    return metric.job_summary(t).select(COLUMNS).sort("job_id")


def _prefixed(frame: pl.DataFrame, source: str) -> pl.DataFrame:
    return frame.with_columns((pl.lit(f"{source}/") + pl.col("job_id")).alias("job_id"))


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    s = tmp_path_factory.mktemp("horizons") / "fleet.duckdb"
    for source, folder in SOURCES.items():
        store.ingest_path(s, folder, source=source)
    return s


def _same_per_source(t, sources, **kw) -> None:
    """Each source's jobs and fleet row (``--by source``) in ``t`` equal the source's trace measured alone (with the
    same options ``kw``)."""
    jobs = _jobs(t)
    fleet = metric.fleet_summary(t, by="source")
    for source in sources:
        alone = load_trace(SOURCES[source], **kw)
        got = jobs.filter(pl.col("job_id").str.starts_with(f"{source}/"))
        want = _prefixed(_jobs(alone), source)
        print(source, "wall_s", got["wall_s"].sum(), "alone", want["wall_s"].sum())
        assert_frame_equal(got, want, check_dtypes=False, rel_tol=1e-9)
        row = fleet.filter(pl.col("source") == source)
        one = metric.fleet_summary(alone)
        print(source, "ETT%", row["ett_pct"][0], "alone", one["ett_pct"][0])
        assert row["ett_pct"][0] == pytest.approx(one["ett_pct"][0], rel=1e-12)


def test_each_source_is_measured_to_its_own_horizon(both):
    t = store.open_store(both)
    assert t.recomputed is None
    _same_per_source(t, SOURCES)
    # the running job of the sample lasts its own 6 h (2026-01-05T22:00Z to its horizon 2026-01-06T04:00Z), not
    # until December
    running = _jobs(t).filter(pl.col("job_id") == "default/sample-running").row(0, named=True)
    assert (running["status"], running["wall_s"]) == ("running", 6 * 3600.0)
    fleet = metric.fleet_summary(t)["ett_pct"][0]
    print("fleet ETT%", fleet)
    assert fleet > 1.0  # 0.17 % when the sample's running job was measured to December


@pytest.mark.parametrize(
    "kw",
    [{"since": "2026-01-05T00:30:00Z"}, {"mapping": "mapping"}],
    ids=["off-grid window", "--mapping"],
)
def test_attributed_again_each_source_to_its_own_horizon(both, kw, tmp_path):
    if "mapping" in kw:
        mapping = tmp_path / "mapping.yaml"
        mapping.write_text("phases:\n  - {phase: checkpoint_load, component: pt2_compile}\n")
        kw = {"mapping": str(mapping)}
    t = store.open_store(both, **kw)
    assert t.recomputed is not None
    _same_per_source(t, SOURCES, **kw)


def test_live_progress_each_source_to_its_own_horizon(both):
    """The running jobs' progress (``ett stalls --live``): the age of the last advance is taken at the job's own
    source's horizon."""
    got = hangs.live_progress(store.open_store(both)).sort("job_id")
    want = pl.concat([_prefixed(hangs.live_progress(load_trace(f)), s) for s, f in SOURCES.items()]).sort("job_id")
    assert got.height == want.height > 0
    assert_frame_equal(got, want, check_dtypes=False, rel_tol=1e-9)


def test_the_outputs_say_each_sources_horizon(both, capsys):
    """``ett store info`` lists each source's horizon, and a ``--json`` answer's ``as_of`` is one instant a source;
    one instant where ``--as-of`` is given."""
    horizons = {s: iso(load_trace(f).as_of_ms) for s, f in SOURCES.items()}
    assert main(["store", "info", str(both)]) == 0
    out = capsys.readouterr().out
    for source, at in horizons.items():
        assert f"horizon of {source}: {at}" in out
    assert main(["summarize", str(both), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["as_of"] == horizons
    assert main(["summarize", str(both), "--json", "--as-of", horizons["slurm"]]) == 0
    assert json.loads(capsys.readouterr().out)["as_of"] == horizons["slurm"]


def test_after_a_removal_the_other_source_keeps_its_horizon(both, tmp_path):
    s = tmp_path / "fleet.duckdb"
    s.write_bytes(both.read_bytes())
    removal = store.remove_source(s, "slurm")
    assert removal.as_of_ms == load_trace(SOURCES["default"]).as_of_ms
    # one source left: its job ids without the source, its figures its own one-shot measurement's
    alone = _jobs(load_trace(SOURCES["default"]))
    assert_frame_equal(_jobs(store.open_store(s)), alone, check_dtypes=False, rel_tol=1e-9)
