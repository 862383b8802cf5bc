"""Report machinery: scorecard parsing and combining, chart specs, parameters, canonical form, HTML, index.

The end-to-end test builds one real report (``ett report 01-trace-overview``)
into a temporary folder; the Chromium test opens its ``index.html`` and the
report headless, checks that every chart was drawn (an SVG per chart in the
rendered DOM) and saves screenshots under ``reports/screenshots/``.  It is
skipped when Chromium is not installed (Debian/Ubuntu: ``apt-get install
chromium``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import polars as pl
import pytest

from ettcore import charts, metric, report, scorecard
from ettcore.config import REPORT_DIR, SAMPLE_TRACE
from ettcore.errors import TraceError
from ettcore.trace import load_trace

# ----------------------------------------------------------------------------- scorecard


def test_every_published_row_parses() -> None:
    rows = scorecard.published()
    assert len(rows) == 40
    assert all(r.targets for r in rows.values())


@pytest.mark.parametrize(
    "text, expected",
    [
        ("151.5", {"value": ("eq", 151.5)}),
        ("59-85", {"low": ("eq", 59.0), "high": ("eq", 85.0)}),
        ("2050 -> 254", {"before": ("eq", 2050.0), "after": ("eq", 254.0)}),
        ("<=3.3", {"value": ("le", 3.3)}),
        ("~80 -> >90", {"before": ("eq", 80.0), "after": ("ge", 90.0)}),
        ("7 (6 paired)", {"value": ("eq", 7.0), "paired": ("eq", 6.0)}),
        ("15 s / 3", {"blocking_s": ("eq", 15.0), "failures_per_day": ("eq", 3.0)}),
    ],
)
def test_parse_value(text: str, expected: dict) -> None:
    got = {k: (t.op, t.value) for k, t in scorecard.parse_value(text).items()}
    assert got == expected


def test_parse_value_rejects_unknown_text() -> None:
    with pytest.raises(ValueError):
        scorecard.parse_value("about five")


def test_compare_bounds_and_tolerance() -> None:
    le = scorecard.Target("value", 3.3, "le")
    assert scorecard.compare(le, 3.3, 0) and scorecard.compare(le, 0.5, 0)
    assert not scorecard.compare(le, 3.31, 0)
    ge = scorecard.Target("after", 90, "ge")
    assert scorecard.compare(ge, 92, 0) and not scorecard.compare(ge, 89.9, 0)
    eq = scorecard.Target("value", 151.5)
    assert scorecard.compare(eq, 151.54, 0.05) and not scorecard.compare(eq, 151.56, 0.05)
    assert not scorecard.compare(eq, float("nan"), 1)


def test_scorecard_check_save_and_combine(tmp_path: Path) -> None:
    card = scorecard.Scorecard("99-test", "test", synthetic=True)
    assert card.check("rep_wall", 151.5, tolerance=0.05, basis="test").passed
    assert not card.check("bench_ett_base", 50.0, part="low", tolerance=0.5, basis="test").passed
    with pytest.raises(KeyError):
        card.check("no_such_row", 1.0, tolerance=0, basis="test")
    with pytest.raises(KeyError):
        card.check("rep_wall", 1.0, part="low", tolerance=0, basis="test")
    assert card.save("") is None
    path = card.save(tmp_path)
    assert path == tmp_path / "99-test.scorecard.json"
    board = scorecard.combine(scorecard.load_cards(tmp_path))
    assert board["reproduced_rows"] == 2 and board["checks"] == 2 and board["checks_passed"] == 1
    assert not board["all_passed"]
    assert {r["id"]: r["passed"] for r in board["rows"]} == {"rep_wall": True, "bench_ett_base": False}
    missing = {m["id"]: m["reason"] for m in board["not_reproduced"]}
    assert len(missing) == 38 and "rep_wall" not in missing
    assert "Table III" in missing["compile_cold"]
    assert "SYNTHETIC" in repr(card)


# ----------------------------------------------------------------------------- charts


@pytest.fixture(scope="module")
def sample():
    return load_trace(SAMPLE_TRACE)


def _chart_specs(t) -> dict[str, dict]:
    s = metric.job_summary(t)
    built = {
        "gantt": charts.gantt(charts.timeline_frame(t, "worked-example"), "worked-example", synthetic=True),
        "stacked": charts.stacked_components(charts.l2_long(s), synthetic=True),
        "l1": charts.l1_bars(s.row(0, named=True), synthetic=True),
        "owners": charts.owner_bars(metric.owner_gpu_hours(t), synthetic=True),
        "linked": charts.linked_jobs(s, synthetic=True),
        "waterfall": charts.waterfall([("base", 31.8), ("a", 30.2), ("b", 25.4)], synthetic=True),
        "trend": charts.trend_panels(metric.trend(t, every="day"), synthetic=True, every="day"),
        "lines": charts.lines(pl.DataFrame({"x": [1.0, 2.0], "y": [3.0, 4.0], "c": ["a", "a"]}), "x", "y", "c",
                              synthetic=True, chart_title="lines"),
        "panels": charts.grouped_bars(charts.l2_long(s).join(s.select("job_id", "model"), on="job_id"), "component",
                                      "minutes", "job_id", column="model", independent_y=True, synthetic=True,
                                      chart_title="panels"),
    }
    return {k: charts.to_v5_spec(c) for k, c in built.items()}


def test_chart_specs_compile_with_vega_lite_v5_and_say_synthetic(sample) -> None:
    import vl_convert

    for name, spec in _chart_specs(sample).items():
        assert spec["$schema"].endswith("/v5.json")
        assert "SYNTHETIC" in json.dumps(spec), name
        svg = vl_convert.vegalite_to_svg(spec, vl_version=charts.VL_VERSION)
        assert svg.startswith("<svg") and "<path" in svg, name


def test_timeline_frame_is_the_jobs_spans(sample) -> None:
    f = charts.timeline_frame(sample, "worked-example")
    # spec section 7: two attempts, 6 + 6 spans
    assert f.filter(pl.col("phase") == "attempt").height == 2
    assert f.filter(pl.col("phase") != "attempt").height == 12
    assert f.filter(pl.col("phase") == "pt2_compile")["minutes"].sort().to_list() == [6.0, 10.0]


def test_waterfall_bars() -> None:
    spec = charts.to_v5_spec(charts.waterfall([("base", 10.0), ("cut", 7.0)], synthetic=False))
    rows = next(iter(spec["datasets"].values()))
    assert [(r["label"], r["lo"], r["hi"], r["kind"]) for r in rows] == [
        ("base", 0.0, 10.0, "total"), ("cut", 7.0, 10.0, "reduction"), ("after all", 0.0, 7.0, "total")]


def test_ett_renderer_bundle_is_stable() -> None:
    bundle = charts.ett_renderer({"$schema": "x", "title": "T", "mark": "bar"})
    assert bundle["text/plain"] == "<Chart: T>"
    assert bundle[charts.VEGALITE_MIMETYPE]["$schema"] == charts.VEGALITE_V5_SCHEMA


# ----------------------------------------------------------------------------- parameters and canonical form


def test_resolve_names() -> None:
    first = report.discover()[0]
    assert report.resolve([first.stem[:2]]) == [first]
    assert report.resolve([first.stem[3:]]) == [first]
    assert report.resolve([first.stem, first.stem[:2]]) == [first]
    with pytest.raises(TraceError) as e:
        report.resolve(["no-such-notebook"])
    assert e.value.problems[0].field == "NOTEBOOK"


def test_plan_parameters(tmp_path: Path) -> None:
    nbs = report.resolve(["01"])
    plan = report.plan_parameters(nbs, [("worst", "3"), ("model", "ranker-a")], str(SAMPLE_TRACE), tmp_path)
    assert plan[nbs[0]] == {"output_dir": str(tmp_path), "worst": 3, "model": "ranker-a", "trace": str(SAMPLE_TRACE.resolve())}
    with pytest.raises(TraceError) as e:
        report.plan_parameters(nbs, [("no_such_param", "1")], None, tmp_path)
    assert e.value.problems[0].field == "no_such_param"
    with pytest.raises(TraceError) as e:
        report.plan_parameters(nbs, [("worst", "many")], None, tmp_path)
    assert "not a valid int" in e.value.problems[0].message


def test_coerce_bool() -> None:
    assert report.coerce("false", "bool", "x") is False and report.coerce("True", "bool", "x") is True
    with pytest.raises(TraceError):
        report.coerce("maybe", "bool", "x")


def test_canonical_strips_volatile_metadata() -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("x = 2", metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_code_cell("x", metadata={"papermill": {"duration": 1.2}, "execution": {"iopub.status.busy": "t"}}),
    ])
    nb.cells[2].execution_count = 7
    nb.cells[2].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=7)]
    nb.metadata["papermill"] = {"start_time": "2026-01-01T00:00:00", "duration": 3.0}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.9"}
    c = report.canonical(nb)
    text = report.dumps(c)
    assert "papermill" not in text and "iopub" not in text and "3.11.9" not in text
    assert [cell.source for cell in c.cells] == ["x = 1", "x"]
    assert c.cells[1].execution_count == 2 and c.cells[1].outputs[0]["execution_count"] == 2
    assert report.dumps(report.canonical(c)) == text  # idempotent


def test_charts_to_html_replaces_vegalite_outputs() -> None:
    spec = {"$schema": charts.VEGALITE_V5_SCHEMA, "mark": "bar", "title": "</script><b>"}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("c")])
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", {report.VEGALITE_MIMETYPE: spec, "text/plain": "<Chart>"})]
    assert report.charts_to_html(nb) == 1
    html = nb.cells[0].outputs[0]["data"]["text/html"]
    assert 'vegaEmbed("#ett-chart-1"' in html and "</script><b>" not in html
    assert list(nb.cells[0].outputs[0]["data"]) == ["text/html"]


# ----------------------------------------------------------------------------- an end-to-end report

_NETWORK = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


@pytest.fixture(scope="module")
def built_report(tmp_path_factory) -> Path:
    """``ett report 01-trace-overview --out DIR`` through the CLI entry point of this module."""
    import argparse

    out = tmp_path_factory.mktemp("reports")
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    report.register(sub)
    args = parser.parse_args(["report", "01-trace-overview", "--out", str(out), "--quiet", "-p", "worst", "3"])
    assert args.func(args) == 0
    return out


@pytest.mark.slow
def test_report_outputs(built_report: Path) -> None:
    out = built_report
    for name in ("index.html", "scorecard.json", "01-trace-overview.html", "01-trace-overview.ipynb",
                 "01-trace-overview.scorecard.json"):
        assert (out / name).is_file(), name
    board = json.loads((out / "scorecard.json").read_text())
    assert board["published_rows"] == 40 and board["reports"][0]["ok"]
    assert len(board["not_reproduced"]) == 40 - board["reproduced_rows"]
    index = (out / "index.html").read_text()
    assert 'href="01-trace-overview.html"' in index and "SYNTHETIC" in index and "fleet ETT%" in index
    page = (out / "01-trace-overview.html").read_text()
    assert page.count('class="ett-chart"') == board["reports"][0]["charts"] == 4  # L2 stack, owners, linked view, timeline
    assert "window.vegaEmbed" in page  # the library is inline
    assert "charts.use_renderer(renderer)" not in page and "import polars" not in page  # no code cells
    for html in (index, page):
        assert not _NETWORK.search(html), _NETWORK.search(html).group(0)
    executed = nbformat.read(out / "01-trace-overview.ipynb", as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "worst = 3" in injected[0].source


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _headless(browser: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--virtual-time-budget=10000", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="headless Chromium not installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(built_report: Path) -> None:
    browser = _chromium()
    shots = REPORT_DIR / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page = built_report / "01-trace-overview.html"
    dom = _headless(browser, "--dump-dom", page.as_uri()).stdout
    n_charts = (page.read_text()).count('class="ett-chart"')
    # vega-embed adds an SVG with class "marks" inside each chart's div once it has drawn it
    assert dom.count('class="marks"') == n_charts, "not every chart rendered"
    assert not re.search(r'id="ett-chart-\d+"[^>]*>\s*chart error', dom)
    for name, target in (("index", built_report / "index.html"), ("01-trace-overview", page)):
        png = shots / f"{name}.png"
        png.unlink(missing_ok=True)
        _headless(browser, f"--screenshot={png}", "--window-size=1280,2400", target.as_uri())
        assert png.is_file() and png.stat().st_size > 10_000, name


@pytest.mark.slow
def test_failing_notebook_is_reported_not_hidden(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('output_dir: str = ""  # where the scorecard goes', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("raise ValueError('bad trace: spans.csv, row 3')"),
    ])
    nb.metadata["kernelspec"] = dict(report.CANONICAL_KERNELSPEC)
    path = tmp_path / "99-broken.ipynb"
    nbformat.write(nb, str(path))
    res = report.run_one(str(path), str(tmp_path / "out"), {"output_dir": str(tmp_path / "out")})
    assert not res.ok and "bad trace: spans.csv, row 3" in res.error
    board = report.build_index(tmp_path / "out", [res], 1.0)
    assert board["reports"][0]["ok"] is False
    assert "FAILED" in (tmp_path / "out" / "index.html").read_text()
