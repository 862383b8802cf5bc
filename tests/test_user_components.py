"""A mapping file that adds a component: ``data_warmup`` moved into ``data_loading``, owned by "Data platform".

The trace is written here by hand, so every expected number is read off it, not computed by ettcore: one job of
8 GPUs, one attempt of an hour, whose 180 s of ``data_warmup`` lie inside 480 s of trainer init.  With the mapping,
``data_loading`` holds exactly those 180 s (0.4 GPU-hours) and ``trainer_init`` keeps 300 s; nothing else moves.
The component comes after the six defaults and before ``unattributed``, in the mapping's order, in the JSON of
``summarize``, the trend, the Prometheus export, the charts and the reports.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import polars as pl
import pytest

from ettcore import metric
from ettcore.cli import main
from ettcore.errors import InputError
from ettcore.exporters import prometheus
from ettcore.present import charts
from ettcore.trace import load_trace

DEFAULTS = ["scheduling", "hardware_setup", "trainer_init", "pt2_compile", "wasted_training", "shutdown"]
T = "2026-02-02T10:"  # every instant of the trace lies in this hour (UTC)

# (phase, start mm:ss, end mm:ss) of attempt 0, [10:00, 11:00)
SPANS = [
    ("hardware_setup", "00:00", "05:00"),  # 300 s
    ("trainer_init", "05:00", "08:00"),  # 180 s
    ("data_warmup", "08:00", "11:00"),  # 180 s: trainer_init by default, data_loading with the mapping
    ("trainer_init", "11:00", "13:00"),  # 120 s
    ("pt2_compile", "13:00", "20:00"),  # 420 s
    ("train", "20:00", "55:00"),  # 2100 s, all productive
    ("shutdown", "55:00", "59:00"),  # 240 s, then 60 s unattributed to the attempt's end
]


def _ts(mmss: str) -> str:
    return f"{T}{mmss}Z" if mmss != "60:00" else "2026-02-02T11:00:00Z"


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("user-components") / "trace"
    d.mkdir()
    (d / "jobs.csv").write_text("job_id,model,gpus\nj1,ranker,8\n")
    (d / "attempts.csv").write_text(
        f"job_id,attempt,start,end,end_reason\nj1,0,{_ts('00:00')},{_ts('60:00')},completed\n"
    )
    rows = ["job_id,attempt,phase,start,end,cursor_start,cursor_end"]
    for phase, a, b in SPANS:
        cursors = "0,2100" if phase == "train" else ","
        rows.append(f"j1,0,{phase},{_ts(a)},{_ts(b)},{cursors}")
    (d / "spans.csv").write_text("\n".join(rows) + "\n")
    (d / "trace.json").write_text(json.dumps({"synthetic": True, "source": "tests/test_user_components.py, by hand"}))
    return d


def _mapping(tmp: Path, *entries: tuple[str, str], owners: dict | None = None) -> Path:
    m = tmp / "mapping.yaml"
    lines = ["phases:"] + [f"  - {{phase: {p}, component: {c}}}" for p, c in entries]
    if owners:
        lines += ["owners:"] + [f"  {c}: {o}" for c, o in owners.items()]
    m.write_text("\n".join(lines) + "\n")
    return m


@pytest.fixture(scope="module")
def mapping(tmp_path_factory) -> Path:
    return _mapping(
        tmp_path_factory.mktemp("map"), ("data_warmup", "data_loading"), owners={"data_loading": "Data platform"}
    )


def _cli_json(*args: str) -> dict:
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main([*args, "--json"]) == 0
    return json.loads(buf.getvalue())


def test_seconds_move_exactly(trace_dir: Path, mapping: Path) -> None:
    before = metric.job_summary(load_trace(trace_dir)).row(0, named=True)
    after = metric.job_summary(load_trace(trace_dir, mapping=mapping)).row(0, named=True)
    assert before["trainer_init_s"] == 480.0 and "data_loading_s" not in before
    assert after["trainer_init_s"] == 300.0 and after["data_loading_s"] == 180.0
    for c in ("hardware_setup", "pt2_compile", "wasted_training", "shutdown", "scheduling", "unattributed"):
        assert after[f"{c}_s"] == before[f"{c}_s"], c
    assert (after["hardware_setup_s"], after["pt2_compile_s"], after["shutdown_s"]) == (300.0, 420.0, 240.0)
    assert after["unattributed_s"] == 60.0 and after["productive_s"] == 2100.0 and after["wall_s"] == 3600.0
    # the L1 numbers do not move
    l1 = ("wall_s", "productive_s", "ett_pct", "tts_s", "nof", "ttr_total_s", "in_training_loss_s", "shutdown_tail_s")
    assert [after[k] for k in l1] == [before[k] for k in l1]


def test_summarize_json_lists_the_component_after_the_defaults(trace_dir: Path, mapping: Path) -> None:
    out = _cli_json("summarize", str(trace_dir), "--mapping", str(mapping))
    comps = out["jobs"][0]["components"]
    assert list(comps) == [*DEFAULTS, "data_loading", "unattributed"]
    assert comps["data_loading"] == 180.0 and comps["trainer_init"] == 300.0
    fleet = out["fleet"]["components_gpu_h"]
    assert list(fleet) == [*DEFAULTS, "data_loading", "unattributed"]
    assert fleet["data_loading"] == pytest.approx(180 * 8 / 3600, abs=1e-12)  # 0.4 GPU-hours
    assert fleet["trainer_init"] == pytest.approx(300 * 8 / 3600, abs=1e-12)


def test_two_user_components_keep_the_mapping_order(trace_dir: Path, tmp_path: Path) -> None:
    m = _mapping(tmp_path, ("pt2_compile", "zz_compile"), ("data_warmup", "aa_data"))  # not alphabetical
    out = _cli_json("summarize", str(trace_dir), "--mapping", str(m))
    assert list(out["jobs"][0]["components"]) == [*DEFAULTS, "zz_compile", "aa_data", "unattributed"]
    assert out["jobs"][0]["components"]["zz_compile"] == 420.0 and out["jobs"][0]["components"]["pt2_compile"] == 0.0
    t = metric.trend(load_trace(trace_dir, mapping=m), every="day")
    names = [c for c in t.columns if c.endswith("_gpu_h") and c not in ("wall_gpu_h", "productive_gpu_h")]
    assert names == [f"{c}_gpu_h" for c in [*DEFAULTS, "zz_compile", "aa_data", "unattributed"]]


def test_trend_daily_and_rolling(trace_dir: Path, mapping: Path) -> None:
    for args in (["--every", "day"], ["--every", "hour", "--window", "24h"]):
        out = _cli_json("trend", str(trace_dir), "--mapping", str(mapping), *args)
        assert out["mapping"] == {"file": str(mapping), "components": [*DEFAULTS, "data_loading", "unattributed"]}
        rows = [r for r in out["buckets"] if r["wall_gpu_h"]]
        assert rows, out
        row = rows[-1]
        assert row["data_loading_gpu_h"] == pytest.approx(0.4, abs=1e-12)
        assert row["trainer_init_gpu_h"] == pytest.approx(300 * 8 / 3600, abs=1e-12)
        keys = list(row)
        assert keys.index("shutdown_gpu_h") + 1 == keys.index("data_loading_gpu_h")
        assert keys.index("data_loading_gpu_h") + 1 == keys.index("unattributed_gpu_h")


def test_prometheus_export(trace_dir: Path, mapping: Path) -> None:
    lines = list(prometheus.exposition(load_trace(trace_dir, mapping=mapping)))
    job = [ln for ln in lines if ln.startswith("ett_job_l2_gpu_seconds{")]
    assert (
        'ett_job_l2_gpu_seconds{job_id="j1",model="ranker",component="data_loading",owner="Data platform"} 1440' in job
    )
    assert (
        'ett_job_l2_gpu_seconds{job_id="j1",model="ranker",component="trainer_init",owner="Trainer framework"} 2400'
        in job
    )
    assert [ln.split('component="')[1].split('"')[0] for ln in job] == [*DEFAULTS, "data_loading", "unattributed"]
    assert 'ett_fleet_l2_gpu_seconds{component="data_loading",owner="Data platform"} 1440' in lines


def test_the_timeline_draws_it(trace_dir: Path, mapping: Path) -> None:
    from ettcore.metric import intervals

    t = load_trace(trace_dir, mapping=mapping)
    tl = intervals.job_timeline(t, "j1")
    dl = tl.intervals.filter(pl.col("component") == "data_loading")
    assert dl.height == 1 and (dl["end_ms"] - dl["start_ms"])[0] == 180_000 and dl["owner"][0] == "Data platform"
    spec = charts.to_v5_spec(charts.gantt(tl, synthetic=True))
    scales = [
        e["scale"]
        for e in _encodings(spec)
        if e.get("field") == "component" and "scale" in e and "data_loading" in e["scale"].get("domain", [])
    ]
    assert scales and all(s["range"][s["domain"].index("data_loading")] == charts.EXTRA_COLORS[0] for s in scales)


def _encodings(spec):
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k == "color" and isinstance(v, dict):
                yield v
            yield from _encodings(v)
    elif isinstance(spec, list):
        for v in spec:
            yield from _encodings(v)


def test_colours_are_the_same_each_run() -> None:
    domain = ["effective_training", *DEFAULTS, "data_loading", "io_wait", "unattributed"]
    a = charts.component_scale(domain).to_dict()
    b = charts.component_scale(list(domain)).to_dict()
    assert a == b
    assert a["range"][-3:] == [charts.EXTRA_COLORS[0], charts.EXTRA_COLORS[1], charts.COMPONENT_COLORS["unattributed"]]
    assert len(set(a["range"])) == len(domain)  # no two components share a colour


def test_a_label_may_not_take_a_user_components_column(trace_dir: Path, mapping: Path, tmp_path: Path) -> None:
    d = tmp_path / "t"
    d.mkdir()
    for f in trace_dir.iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    (d / "jobs.csv").write_text("job_id,model,gpus,data_loading_s\nj1,ranker,8,x\n")
    load_trace(d)  # without the mapping the name is free
    with pytest.raises(InputError) as e:
        load_trace(d, mapping=mapping)
    assert e.value.problems[0].field == "data_loading_s"


@pytest.mark.parametrize("name", ["wall", "effective_training", "unattributed", "Data-Loading", "x y", "9lives"])
def test_a_new_component_needs_a_free_lower_case_name(trace_dir: Path, tmp_path: Path, name: str) -> None:
    m = tmp_path / "m.json"
    m.write_text(json.dumps({"phases": [{"phase": "data_warmup", "component": name}]}))
    with pytest.raises(InputError) as e:
        load_trace(trace_dir, mapping=m)
    p = e.value.problems[0]
    assert (p.file, p.row, p.field) == (str(m), 1, "component")


def test_an_owner_for_a_component_nobody_maps_is_refused(trace_dir: Path, tmp_path: Path) -> None:
    m = tmp_path / "m.yaml"
    m.write_text("owners:\n  data_loading: Data platform\n")
    with pytest.raises(InputError) as e:
        load_trace(trace_dir, mapping=m)
    assert e.value.problems[0].field == "owners"


@pytest.mark.slow
@pytest.mark.notebook
def test_the_reports_show_it(trace_dir: Path, mapping: Path, tmp_path: Path) -> None:
    """``ett report 03-decomposition --trace T -p mapping M``: the component and its owner in the report."""
    out = tmp_path / "reports"
    proc = subprocess.run(
        [sys.executable, "-m", "ettcore.cli", "report", "03-decomposition", "--trace", str(trace_dir), "-p", "mapping"]
        + [str(mapping), "--out", str(out), "--quiet", "--jobs", "1"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (out / "03-decomposition.html").read_text()
    assert "data_loading" in page and "Data platform" in page


def test_a_component_carved_from_repeated_phases_still_repeats(tmp_path: Path) -> None:
    """``ett opportunities`` counts (1 + NoF) for the phases every restart repeats, whichever component holds them."""
    from ettcore.phases import load_phase_map
    from ettcore.planning.opportunities import REPEATED, repeated_components

    carved = _mapping(tmp_path, ("data_warmup", "data_loading"), ("eval", "evaluation"))
    assert repeated_components(load_phase_map(carved)) == REPEATED | {"data_loading"}  # eval is not repeated
    (tmp_path / "new.yaml").write_text("phases:\n  - {phase: stream_negotiation, component: trainer_init}\n")
    assert repeated_components(load_phase_map(tmp_path / "new.yaml")) == REPEATED
    assert sorted(REPEATED) == ["hardware_setup", "pt2_compile", "scheduling", "trainer_init"]
