"""Report machinery: scorecard parsing and combining, chart specs, parameters, canonical form, HTML, index.

The end-to-end test builds two real reports (``ett report 01-trace-overview 13-live-job``)
into a temporary folder; the Chromium test (``tests/browser.py``, the DevTools
protocol over a pipe) opens the index and both reports headless, fails on any
network request or JavaScript error, checks that every chart was drawn (an SVG
per chart), follows the index/previous/next links, and saves screenshots under
``reports/screenshots/`` (git-ignored).  It is skipped when Chromium is not
installed (Debian/Ubuntu: ``apt-get install chromium``; ``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import browser
import nbformat
import polars as pl
import pytest

from ettcore import metric
from ettcore.config import DATA_DIR, REPORT_DIR, SAMPLE_TRACE
from ettcore.errors import TraceError
from ettcore.metric import intervals as timeline
from ettcore.present import calendar as buckets
from ettcore.present import charts, report, scorecard, tables
from ettcore.trace import load_trace

# ----------------------------------------------------------------------------- scorecard


def test_every_published_row_parses() -> None:
    paper = scorecard.published(external=None)
    assert len(paper) == 42  # the paper's figures (published-figures.csv)
    rows = scorecard.published()  # and other publications' results (external-figures.csv, role "result")
    assert len(rows) == 45 and {"llama3_ett", "byterobust_ettr", "mpg_scheduling_goodput"} <= set(rows)
    assert "llama3_gpus" not in rows  # an input, not a figure to check
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
    assert card.check("rep_wall", 151.5, tolerance=0.05, basis="test", evidence="calibrated").passed
    assert not card.check("bench_ett_base", 50.0, part="low", tolerance=0.5, basis="test", evidence="calibrated").passed
    assert card.check("rep_restart_bound", 204, tolerance=0.5, basis="C x (1 + F)", evidence="identity").passed
    assert card.check("rep_gpu_hours_day", 3400, tolerance=50, basis="formula", evidence="analytic").passed
    with pytest.raises(KeyError):
        card.check("no_such_row", 1.0, tolerance=0, basis="test", evidence="calibrated")
    with pytest.raises(KeyError):
        card.check("rep_wall", 1.0, part="low", tolerance=0, basis="test", evidence="calibrated")
    with pytest.raises(TypeError):  # the evidence class is required on every check
        card.check("rep_wall", 1.0, tolerance=0, basis="test")
    with pytest.raises(ValueError, match="evidence must be one of"):
        card.check("rep_wall", 1.0, tolerance=0, basis="test", evidence="reproduced")
    with pytest.raises(ValueError, match="cannot give measured evidence"):
        card.check("rep_wall", 1.0, tolerance=0, basis="test", evidence="measured")
    with pytest.raises(ValueError, match="needs a synthetic trace"):
        scorecard.Scorecard("99-real", "real", synthetic=False).check(
            "rep_wall", 1.0, tolerance=0, basis="t", evidence="calibrated"
        )
    assert (
        card.trace_evidence == "calibrated"
        and scorecard.Scorecard("x", "x", synthetic=False).trace_evidence == "measured"
    )
    assert card.save("") is None
    path = card.save(tmp_path)
    assert path == tmp_path / "99-test.scorecard.json"
    real = scorecard.Scorecard("98-real", "real", synthetic=False)
    real.check("rep_wall", 150.0, tolerance=2, basis="a real job", evidence="measured")
    real.save(tmp_path)
    board = scorecard.combine(scorecard.load_cards(tmp_path))
    assert board["checked_rows"] == 4 and board["checks"] == 5 and board["checks_passed"] == 4
    assert not board["all_passed"]
    rows = {r["id"]: r for r in board["rows"]}
    assert {k: r["passed"] for k, r in rows.items()} == {
        "rep_wall": True,
        "bench_ett_base": False,
        "rep_restart_bound": True,
        "rep_gpu_hours_day": True,
    }
    # rep_wall is checked twice with different evidence: counted once, under the strongest class
    assert rows["rep_wall"]["evidence"] == "measured" and rows["rep_wall"]["evidence_classes"] == [
        "measured",
        "calibrated",
    ]
    assert board["evidence_rows"] == {"measured": 1, "calibrated": 1, "analytic": 1, "external": 0}
    assert board["identity_rows"] == 1
    assert board["evidence_checks"] == {"measured": 1, "calibrated": 2, "analytic": 1, "external": 0, "identity": 1}
    assert not board["reproductions_passed"]  # bench_ett_base failed and is not a comparison
    assert all(c["evidence"] in scorecard.EVIDENCE for c in board["detail"])
    missing = {m["id"]: m["reason"] for m in board["not_reproduced"]}
    assert len(missing) == 41 and "rep_wall" not in missing
    assert "Table III" in missing["compile_cold"]
    assert "SYNTHETIC" in repr(card) and "calibrated" in repr(card)


def test_combine_refuses_a_figure_counted_twice(tmp_path: Path) -> None:
    for nb in ("97-a", "96-b"):
        card = scorecard.Scorecard(nb, nb, synthetic=True)
        card.check("rep_nontraining_share", 40.6, tolerance=1, basis="t", evidence="identity")
        card.save(tmp_path)
    with pytest.raises(ValueError, match="checked twice"):
        scorecard.combine(scorecard.load_cards(tmp_path))


# ----------------------------------------------------------------------------- charts


@pytest.fixture(scope="module")
def sample():
    return load_trace(SAMPLE_TRACE)


def _chart_specs(t) -> dict[str, dict]:
    s = metric.job_summary(t)
    built = {
        "gantt": charts.gantt(timeline.job_timeline(t, "worked-example"), synthetic=True),
        "gantt_relative": charts.gantt(
            timeline.job_timeline(t, ["worked-example", "sample-preempted"]), synthetic=True, relative=True
        ),
        "drilldown": charts.drilldown(s, synthetic=True),
        "evidence": charts.evidence_scatter(
            [
                {
                    "id": "rep_wall",
                    "part": "value",
                    "quantity": "q",
                    "unit": "min",
                    "evidence": "calibrated",
                    "passed": True,
                    "published": "151.5",
                    "reproduced": 151.5,
                }
            ]
        ),
        "stacked": charts.stacked_components(charts.l2_long(s), synthetic=True),
        "l1": charts.l1_bars(s.row(0, named=True), synthetic=True),
        "owners": charts.owner_bars(metric.owner_gpu_hours(t), synthetic=True),
        "waterfall": charts.waterfall([("base", 31.8), ("a", 30.2), ("b", 25.4)], synthetic=True),
        "trend": charts.trend_panels(
            buckets.coverage(metric.trend(t, every="day"), "day", *buckets.window_ms(s)), synthetic=True, every="day"
        ),
        "lines": charts.lines(
            pl.DataFrame({"x": [1.0, 2.0], "y": [3.0, 4.0], "c": ["a", "a"]}),
            "x",
            "y",
            "c",
            synthetic=True,
            chart_title="lines",
        ),
        "panels": charts.grouped_bars(
            charts.l2_long(s).join(s.select("job_id", "model"), on="job_id"),
            "component",
            "minutes",
            "job_id",
            column="model",
            independent_y=True,
            synthetic=True,
            chart_title="panels",
        ),
    }
    return {k: charts.to_v5_spec(c) for k, c in built.items()}


def test_chart_specs_compile_with_vega_lite_v5_and_say_synthetic(sample) -> None:
    import vl_convert

    for name, spec in _chart_specs(sample).items():
        assert spec["$schema"].endswith("/v5.json")
        assert "SYNTHETIC" in json.dumps(spec) or name == "evidence", name
        svg = vl_convert.vegalite_to_svg(spec, vl_version=charts.VL_VERSION)
        assert svg.startswith("<svg") and "<path" in svg, name


def test_gantt_draws_every_instant_in_its_component_colour(sample) -> None:
    tl = timeline.job_timeline(sample, "worked-example")
    spec = charts.to_v5_spec(charts.gantt(tl, synthetic=True))
    layers = spec["vconcat"][0]["layer"]
    data = spec["datasets"]
    l2 = next(layer for layer in layers if layer["encoding"].get("color", {}).get("field") == "component")
    rows = data[l2["data"]["name"]]
    # the coloured L2 lane is the attribution: its minutes per component are the job's L2 row
    got: dict[str, float] = {}
    for r in rows:
        got[r["component"]] = got.get(r["component"], 0.0) + (r["end_ms"] - r["start_ms"]) / 60000
    row = metric.job_summary(sample).filter(pl.col("job_id") == "worked-example").row(0, named=True)
    want = {"effective_training": row["productive_s"] / 60, **{c: row[f"{c}_s"] / 60 for c in metric.ALL_COMPONENTS}}
    assert {k: round(v, 6) for k, v in got.items()} == {k: round(v, 6) for k, v in want.items() if v}
    # replay is not drawn in the productive green, and queue time and hangs are drawn
    assert {"wasted_training", "scheduling", "unattributed"} <= set(got)
    assert charts.COMPONENT_COLORS["wasted_training"] != charts.COMPONENT_COLORS["effective_training"]
    # a 24-hour axis and tooltips with times and durations
    x = l2["encoding"]["x"]
    assert x["axis"]["format"] == "%H:%M" and x["scale"]["type"] == "utc"
    tips = {t["field"] for t in l2["encoding"]["tooltip"]}
    assert {"start (UTC)", "end (UTC)", "duration"} <= tips
    first = min(rows, key=lambda r: r["start_ms"])
    assert first["start (UTC)"] == "2026-01-05 00:00:00.000 UTC" and first["duration"] == "5 min 0 s"
    # no white stroke washing out short spans; a zoom brush
    assert all(layer["mark"].get("stroke") != "white" for layer in layers)
    params = spec.get("params", []) + spec["vconcat"][1].get("params", [])
    assert any(p["name"] == "zoom" and p["select"]["type"] == "interval" for p in params)
    assert l2["encoding"]["x"]["scale"]["domain"] == {"param": "zoom"}
    # attempts and their end reasons are marked
    texts = [r["shown"] for layer in layers if layer["mark"]["type"] == "text" for r in data[layer["data"]["name"]]]
    assert texts == ["attempt 0: failure", "attempt 1: completed"]


def test_gantt_relative_mode_shares_one_axis(sample) -> None:
    tl = timeline.job_timeline(sample, ["worked-example", "sample-preempted"])
    spec = charts.to_v5_spec(charts.gantt(tl, synthetic=True, relative=True))
    l2 = next(
        layer for layer in spec["vconcat"][0]["layer"] if layer["encoding"].get("color", {}).get("field") == "component"
    )
    assert l2["encoding"]["x"]["type"] == "quantitative" and "since the job's start" in l2["encoding"]["x"]["title"]
    rows = spec["datasets"][l2["data"]["name"]]
    assert {r["job_id"] for r in rows if r["x0"] == 0} == {"worked-example", "sample-preempted"}


def test_l1_colours_keep_green_for_productive_only() -> None:
    assert charts.L1_COLORS["productive"] == charts.COMPONENT_COLORS["effective_training"]
    others = [c for k, c in charts.L1_COLORS.items() if k != "productive"]
    assert charts.L1_COLORS["productive"] not in others and len(set(others)) == len(others)
    spec = charts.to_v5_spec(
        charts.l1_bars(
            {"productive_s": 60, "tts_s": 60, "ttr_total_s": 60, "in_training_loss_s": 60, "shutdown_tail_s": 60},
            synthetic=False,
        )
    )
    scale = spec["encoding"]["color"]["scale"]
    assert dict(zip(scale["domain"], scale["range"]))["shutdown tail"] == charts.L1_COLORS["shutdown_tail"]


def test_trend_marks_partial_buckets_and_ticks_per_bucket() -> None:
    from datetime import date

    trend = pl.DataFrame(
        {
            "bucket_start": [date(2026, 1, 1), date(2026, 2, 1), date(2026, 3, 1)],
            "ett_pct": [80.0, 85.0, 90.0],
            "wall_gpu_h": [310.0, 280.0, 50.0],
            "scheduling_gpu_h": [31.0, 28.0, 5.0],
        }
    )
    start = 1767225600000 + 86_400_000 * 3  # 2026-01-04
    end = 1772323200000 + 86_400_000 * 5  # 2026-03-06
    cov = buckets.coverage(trend, "month", start, end)
    assert cov["partial"].to_list() == [True, False, True]
    assert cov["observed_days"].to_list() == [28.0, 28.0, 5.0]
    assert cov["bucket"].to_list() == ["Jan 2026", "Feb 2026", "Mar 2026"]
    spec = charts.to_v5_spec(charts.trend_panels(cov, synthetic=True, every="month"))
    labels = [r["label"] for r in next(iter(spec["datasets"].values()))]
    assert labels == ["Jan 2026 (partial)", "Feb 2026", "Mar 2026 (partial)"]
    bottom = spec["vconcat"][1]
    assert bottom["encoding"]["x"]["type"] == "ordinal"  # one tick per bucket
    rate = {r["label"]: r["gpu_h_per_day"] for r in spec["datasets"][bottom["data"]["name"]]}
    assert rate["Mar 2026 (partial)"] == pytest.approx(1.0) and rate["Feb 2026"] == pytest.approx(1.0)
    assert "axis" in bottom["encoding"]["x"] and "bucket_start" not in json.dumps(bottom["encoding"])
    with pytest.raises(ValueError):
        charts.trend_panels(trend, synthetic=True, every="month")


def test_waterfall_bars() -> None:
    spec = charts.to_v5_spec(charts.waterfall([("base", 10.0), ("cut", 7.0)], synthetic=False))
    rows = next(iter(spec["datasets"].values()))
    assert [(r["label"], r["lo"], r["hi"], r["kind"]) for r in rows] == [
        ("base", 0.0, 10.0, "total"),
        ("cut", 7.0, 10.0, "reduction"),
        ("after all", 0.0, 7.0, "total"),
    ]


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
    assert plan[nbs[0]] == {
        "output_dir": str(tmp_path),
        "worst": 3,
        "model": "ranker-a",
        "trace": str(SAMPLE_TRACE.resolve()),
    }
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
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
            nbformat.v4.new_code_cell("x = 2", metadata={"tags": ["injected-parameters"]}),
            nbformat.v4.new_code_cell(
                "x", metadata={"papermill": {"duration": 1.2}, "execution": {"iopub.status.busy": "t"}}
            ),
        ]
    )
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


def test_canonical_joins_a_streams_pieces() -> None:
    """A kernel may split one print into two stream messages; the committed notebook must not depend on it."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(...)")])
    out = nbformat.v4.new_output
    nb.cells[0].outputs = [
        out("stream", name="stdout", text="0 problem(s)"),
        out("stream", name="stdout", text="\n"),
        out("stream", name="stderr", text="warn\n"),
        out("stream", name="stdout", text="next\n"),
    ]
    c = report.canonical(nb)
    assert [(o["name"], o["text"]) for o in c.cells[0].outputs] == [
        ("stdout", "0 problem(s)\n"),
        ("stderr", "warn\n"),
        ("stdout", "next\n"),
    ]


def test_charts_to_html_replaces_vegalite_outputs() -> None:
    spec = {"$schema": charts.VEGALITE_V5_SCHEMA, "mark": "bar", "title": "</script><b>"}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("c")])
    nb.cells[0].outputs = [
        nbformat.v4.new_output("display_data", {report.VEGALITE_MIMETYPE: spec, "text/plain": "<Chart>"})
    ]
    assert report.charts_to_html(nb) == 1
    html = nb.cells[0].outputs[0]["data"]["text/html"]
    assert 'vegaEmbed("#ett-chart-1"' in html and "</script><b>" not in html
    assert list(nb.cells[0].outputs[0]["data"]) == ["text/html"]


# ----------------------------------------------------------------------------- an end-to-end report

_NETWORK = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


@pytest.fixture(scope="module")
def built_report(tmp_path_factory) -> Path:
    """``ett report 01-trace-overview 04-trainer-init 13-live-job --out DIR`` through the CLI entry point of this
    module."""
    import argparse

    from ettcore.cli import report as report_command

    out = tmp_path_factory.mktemp("reports")
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    report_command.register(sub)
    args = parser.parse_args(
        [
            "report",
            "01-trace-overview",
            "04-trainer-init",
            "13-live-job",
            "--out",
            str(out),
            "--quiet",
            "-p",
            "worst",
            "3",
        ]
    )
    assert args.func(args) == 0
    return out


@pytest.mark.slow
def test_report_outputs(built_report: Path) -> None:
    out = built_report
    for name in (
        "index.html",
        "scorecard.json",
        "01-trace-overview.html",
        "01-trace-overview.ipynb",
        "01-trace-overview.scorecard.json",
        "13-live-job.html",
    ):
        assert (out / name).is_file(), name
    board = json.loads((out / "scorecard.json").read_text())
    assert board["published_rows"] == 45 and board["reports"][0]["ok"]  # 42 of the paper, 3 of other publications
    assert len(board["not_reproduced"]) == 45 - board["checked_rows"]
    assert (
        set(board["evidence_rows"]) == {"measured", "calibrated", "analytic", "external"} and "identity_rows" in board
    )
    # 13: the compile cache on restarts against Table III, measured, a comparison of scale (it passes, widely)
    assert board["evidence_rows"]["measured"] == 1 and board["reproductions_passed"]
    index = (out / "index.html").read_text()
    assert 'href="01-trace-overview.html"' in index and "SYNTHETIC" in index and "fleet ETT%" in index
    import html as html_lib

    assert html_lib.escape(board["calibrated_meaning"]) in index and 'id="count-calibrated"' in index
    assert board["evidence_rows"]["calibrated"] == 5 and board["identity_rows"] == 1  # 04: Model D, and 23.1 - 18.6
    assert index.count('class="ett-chart"') == 1  # published versus ettcore value, by evidence class
    assert "published figures reproduced" not in index  # nothing calibrated is presented as reproduced
    page = (out / "01-trace-overview.html").read_text()
    # L2 stack, owners, drill-down, timeline
    assert page.count('class="ett-chart"') == board["reports"][0]["charts"] == 4
    assert "window.vegaEmbed" in page  # the library is inline
    assert "charts.use_renderer(renderer)" not in page and "import polars" not in page  # no code cells
    assert "<title>01 Trace overview" in page and 'class="ett-banner synthetic"' in page
    assert 'href="index.html"' in page and 'class="ett-nav-next" href="04-trainer-init.html"' in page
    assert "ett-nav-prev" not in page
    live = (out / "13-live-job.html").read_text()
    assert 'class="ett-banner real"' in live and 'class="ett-nav-prev" href="04-trainer-init.html"' in live
    assert "ett-nav-next" not in live
    assert "shape: (" not in page and "shape: (" not in live  # tables are formatted, not Polars reprs
    for html in (index, page, live):
        assert not _NETWORK.search(html), _NETWORK.search(html).group(0)
    executed = nbformat.read(out / "01-trace-overview.ipynb", as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "worst = 3" in injected[0].source


def _chromium() -> str | None:
    return browser.chromium()


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="headless Chromium not installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(built_report: Path) -> None:
    """Every page draws every chart, requests nothing from the network, logs no JavaScript error, and links to the
    index and to its neighbours (followed); screenshots go to reports/screenshots/."""
    shots = REPORT_DIR / "screenshots"
    pages = {
        "index": built_report / "index.html",
        "01-trace-overview": built_report / "01-trace-overview.html",
        "04-trainer-init": built_report / "04-trainer-init.html",
        "13-live-job": built_report / "13-live-job.html",
    }
    with browser.Browser() as b:
        s = b.open()
        seen = {}
        for name, path in pages.items():
            v = b.visit(s, path.as_uri())
            assert v.network == [], (name, v.network)
            assert v.errors == [], (name, v.errors)
            assert v.charts >= 1 and v.drawn == v.charts, (name, v.charts, v.drawn)
            seen[name] = v
            png = b.screenshot(s, shots / f"{name}.png")
            assert png.stat().st_size > 10_000, name
        assert seen["01-trace-overview"].title.startswith("01 Trace overview")
        # navigation: index, previous and next, generated from the run's notebooks; follow each link
        assert set(seen["01-trace-overview"].links) == {"ett-nav-index", "ett-nav-next"}
        assert set(seen["04-trainer-init"].links) == {"ett-nav-prev", "ett-nav-index", "ett-nav-next"}
        assert set(seen["13-live-job"].links) == {"ett-nav-prev", "ett-nav-index"}
        for name in ("01-trace-overview", "04-trainer-init", "13-live-job"):
            for cls, href in seen[name].links.items():
                v = b.visit(s, href)
                assert v.network == [] and v.errors == [], (href, v.network, v.errors)
                assert v.title and v.charts == v.drawn >= 1, href
        assert seen["01-trace-overview"].links["ett-nav-next"] == pages["04-trainer-init"].as_uri()
        assert seen["04-trainer-init"].links["ett-nav-next"] == pages["13-live-job"].as_uri()
        assert seen["13-live-job"].links["ett-nav-index"] == pages["index"].as_uri()
        # the worked example's timeline, alone
        b.visit(s, pages["01-trace-overview"].as_uri())
        n = b.evaluate(
            s, "[...document.querySelectorAll('.ett-chart')].findIndex(e => e.textContent.includes('Timeline of'))"
        )
        assert n >= 0
        b.screenshot(s, shots / "01-timeline-worked-example.png", ".ett-chart", n)


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="headless Chromium not installed (apt-get install chromium)")
def test_fleet_reports_render_in_headless_chromium(tmp_path: Path) -> None:
    """The Slurm-fleet report (14, with its money at an assumed price) and the reliability report (18) as built by
    ``ett report``: every chart drawn, nothing requested from the network, no JavaScript error; the money chart says
    its currency and that the price is assumed.  Screenshots go to reports/screenshots/."""
    from ettcore.cli import main

    assert main(["report", "14-slurm-fleet", "18-reliability", "--out", str(tmp_path), "--quiet"]) == 0
    shots = REPORT_DIR / "screenshots"
    with browser.Browser() as b:
        s = b.open()
        for name in ("18-reliability", "14-slurm-fleet"):
            v = b.visit(s, (tmp_path / f"{name}.html").as_uri())
            assert v.network == [] and v.errors == [], (name, v.network, v.errors)
            assert v.charts >= 4 and v.drawn == v.charts, (name, v.charts, v.drawn)
        n = b.evaluate(
            s, "[...document.querySelectorAll('.ett-chart')].findIndex(e => e.textContent.includes('Money lost by'))"
        )
        assert n >= 0
        drawn = b.evaluate(s, f"document.querySelectorAll('.ett-chart')[{n}].textContent")
        assert "USD at an assumed 2.5 USD/GPU-h" in drawn and "not billed" in drawn and "money lost (USD)" in drawn
        assert b.screenshot(s, shots / "14-money.png", ".ett-chart", n).stat().st_size > 5_000


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium not installed (apt-get install chromium)")
def test_the_browser_check_catches_network_requests_and_script_errors(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    # 127.0.0.1:9 (discard): nothing listens, and nothing leaves the machine
    page.write_text(
        '<html><head><title>bad</title></head><body><img src="http://127.0.0.1:9/x.png">'
        '<script>console.error("oops"); throw new Error("boom");</script></body></html>'
    )
    # the visit ends when the page has loaded (settle_s only bounds a page that never does)
    with browser.Browser() as b:
        v = b.visit(b.open(), page.as_uri())
    assert v.network == ["http://127.0.0.1:9/x.png"]
    assert any("boom" in e for e in v.errors) and any("oops" in e for e in v.errors)


@pytest.mark.slow
def test_failing_notebook_is_reported_not_hidden(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                'output_dir: str = ""  # where the scorecard goes', metadata={"tags": ["parameters"]}
            ),
            nbformat.v4.new_code_cell("raise ValueError('bad trace: spans.csv, row 3')"),
        ]
    )
    nb.metadata["kernelspec"] = dict(report.CANONICAL_KERNELSPEC)
    path = tmp_path / "99-broken.ipynb"
    nbformat.write(nb, str(path))
    res = report.run_one(str(path), str(tmp_path / "out"), {"output_dir": str(tmp_path / "out")})
    assert not res.ok and "bad trace: spans.csv, row 3" in res.error
    board = report.build_index(tmp_path / "out", [res], 1.0)
    assert board["reports"][0]["ok"] is False
    assert "FAILED" in (tmp_path / "out" / "index.html").read_text()


# ----------------------------------------------------------------------------- tables


def test_table_labels_units_formats_and_no_truncation() -> None:
    long_text = "Table III quantity " + "x" * 120
    frame = pl.DataFrame(
        {
            "job_id": ["a", "b"],
            "wall_min": [120.0, 3000.25],
            "ett_pct": [41.666, 99.0],
            "nof": [1, 12345],
            "d_shutdown_tail_s": [3.5, -0.001],
            "note": [long_text, None],
            "ok": [True, False],
        }
    )
    t = tables.table(frame, title="T", decimals={"ett_pct": 2})
    assert t.headers == ["job", "wall (min)", "ETT%", "NoF", "d shutdown tail (s)", "note", "ok"]
    text = t.text()
    assert "shape:" not in text and "str" not in text.split("\n")[1] and "f64" not in text
    assert long_text in text and "…" not in text
    assert "3,000" in text and "41.67" in text and "12,345" in text and "yes" in text and tables.MISSING in text
    assert " -0.00" not in text  # no negative zero
    h = t.html()
    assert long_text in h and 'id="' + t.id + '"' in h and "wall (min)" in h
    assert not _NETWORK.search(h) and "http" not in h
    assert tables.table(frame, title="T", decimals={"ett_pct": 2}).id == t.id  # deterministic: nbval compares the HTML
    bundle = t._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}


def test_table_headers_never_mangle_names() -> None:
    # 10-cascade once turned d_shutdown_tail_s into d_minhutdown_tail_min with a blanket str.replace
    assert tables.label_of("d_shutdown_tail_s") == "d shutdown tail (s)"
    assert tables.label_of("wall_gpu_h") == "wall (GPU-h)"
    assert (
        tables.label_of("compile_share_of_tts_pct", {"compile_share_of_tts_pct": "compilation share of TTS"})
        == "compilation share of TTS (%)"
    )
    assert tables.label_of("ttr_to_tts", units={"ttr_to_tts": "x"}) == "ttr to tts (x)"


def test_table_refuses_what_it_cannot_format() -> None:
    with pytest.raises(TypeError):
        tables.table([1, 2, 3])


def test_scorecard_displays_as_a_formatted_table() -> None:
    card = scorecard.Scorecard("99-test", "test", synthetic=True)
    card.check("rep_wall", 151.5, tolerance=0.05, basis="test", evidence="calibrated")
    bundle = card._repr_mimebundle_()
    assert "ett-table-" in bundle["text/html"] and scorecard.CALIBRATED_MEANING in bundle["text/plain"]
    assert "1/1 checks pass (1 calibrated)" in bundle["text/plain"]


def test_report_kernels_are_not_interrupted_on_shutdown(monkeypatch):
    """jupyter_client's shutdown sends SIGINT first; a finished report kernel gets only the shutdown request."""
    import signal

    from jupyter_client.manager import KernelManager

    sent = []
    send = KernelManager._async_signal_kernel

    async def record(self, signum):
        sent.append(signum)
        await send(self, signum)

    monkeypatch.setattr(KernelManager, "_async_signal_kernel", record)
    km = report._ipc_kernel_manager()(kernel_name=report.KERNEL_NAME)
    km.start_kernel()
    try:
        km.interrupt_kernel()  # asked for while running (a cell past its timeout): still sent
        assert sent == [signal.SIGINT]
    finally:
        km.shutdown_kernel()
    assert sent == [signal.SIGINT], "the shutdown interrupted the kernel"
    assert not km.is_alive()


def test_lines_on_bucket_labels_keep_the_buckets_order():
    """Monthly buckets drawn by their labels: one tick per bucket, in the frame's order (not days of a time axis)."""
    frame = pl.DataFrame({"bucket": ["Nov 2026", "Dec 2026", "Jan 2027"], "ett_pct": [91.0, 85.5, 88.0]})
    spec = charts.to_v5_spec(
        charts.lines(frame, "bucket", "ett_pct", None, synthetic=True, chart_title="t", y_zero=False)
    )
    enc = spec["layer"][0]["encoding"]
    assert enc["x"]["type"] == "ordinal" and enc["x"]["sort"] is None
    assert enc["y"]["scale"] == {"zero": False}
    values = next(iter(spec["datasets"].values()))
    assert [v["bucket"] for v in values] == ["Nov 2026", "Dec 2026", "Jan 2027"]


def test_stacked_bars_keep_the_frames_order_of_jobs():
    """Slurm job ids 1, 2, 10 stay in that order (Vega-Lite would order the aggregated bars as text: 1, 10, 2)."""
    long = pl.DataFrame(
        {
            "job_id": ["1", "1", "2", "10"],
            "component": ["effective_training", "pt2_compile"] + ["effective_training"] * 2,
            "minutes": [1.0, 0.5, 2.0, 3.0],
        }
    )
    spec = charts.to_v5_spec(charts.stacked_components(long, synthetic=False))
    assert spec["encoding"]["y"]["sort"] == ["1", "2", "10"]


def test_clock_labels_of_a_short_timeline_have_seconds():
    """A 12-minute job gets ticks 30 s apart; HH:MM alone would print every minute twice."""
    assert charts._time_axis(12 * 60_000, False, 1000, "s")["format"] == "%H:%M:%S"
    assert charts._time_axis(6 * 3_600_000, False, 1000, "s")["format"] == "%H:%M"


# ----------------------------------------------------------------------------- seen in the browser


def test_an_empty_table_says_so_in_html_and_text():
    t = tables.table(pl.DataFrame(schema={"job_id": pl.String, "wall_s": pl.Float64}), title="Every stall")
    assert tables.NO_ROWS in t.html() and t.text().splitlines()[-1] == tables.NO_ROWS
    assert tables.NO_ROWS not in tables.table(pl.DataFrame({"a": [1]})).html()


def test_headers_never_break_inside_a_unit():
    # 01's "wall (GPU-|h)": the browser broke the header at the unit's hyphen; HTML uses a non-breaking one
    t = tables.table(pl.DataFrame({"wall_gpu_h": [1.0]}))
    assert "wall (GPU\u2011h)" in t.html() and "GPU-h" not in t.html()
    assert t.text().splitlines()[0] == "wall (GPU-h)"  # the text form (terminals, nbval) keeps the plain hyphen


def test_format_specs_show_small_p_values():
    t = tables.table(pl.DataFrame({"node": ["a", "b"], "p_value": [7.5e-11, 0.567]}), formats={"p_value": ".2g"})
    assert t.cells["p_value"].to_list() == ["7.5e-11", "0.57"]
    # without a spec the fixed decimals hide it
    assert tables.table(pl.DataFrame({"p_value": [7.5e-11]}), decimals=6).cells["p_value"][0] == "0.000000"


def test_time_axes_keep_one_clock_and_legends_are_not_cut():
    start = datetime(2026, 12, 1, 11, 40)
    minutes = pl.DataFrame({"t": [start + timedelta(minutes=5 * i) for i in range(6)], "y": [1.0] * 6})
    days = pl.DataFrame({"t": [start + timedelta(days=i) for i in range(30)], "y": [1.0] * 30})
    for frame, fmt in ((minutes, "%H:%M"), (days, "%Y-%m-%d")):
        spec = charts.to_v5_spec(charts.lines(frame, "t", "y", None, synthetic=False, chart_title="x"))
        x = spec["layer"][0]["encoding"]["x"]
        assert x["axis"]["format"] == fmt and x["axis"]["labelOverlap"] is True
    long = pl.DataFrame({"x": [1.0, 2.0], "y": [1.0, 2.0], "c": ["SYNTHETIC lemon fleet, interval high"] * 2})
    enc = charts.to_v5_spec(charts.lines(long, "x", "y", "c", synthetic=True, chart_title="x"))["layer"][0]
    assert enc["encoding"]["color"]["legend"]["labelLimit"] == 0


def test_one_bar_per_category_when_not_side_by_side():
    frame = pl.DataFrame({"cause": ["preemption", "user_error"], "nof": [6, 12], "group": ["preemption", "user"]})
    on = charts.to_v5_spec(charts.grouped_bars(frame, "cause", "nof", "group", synthetic=False, chart_title="x"))
    off = charts.to_v5_spec(
        charts.grouped_bars(frame, "cause", "nof", "group", synthetic=False, chart_title="x", side_by_side=False)
    )
    assert "xOffset" in on["encoding"] and "xOffset" not in off["encoding"]


def test_attempt_labels_fit_their_boxes():
    """The Slurm campaign's job 7 ran four times (notebook 14's timeline): the whole label is written where it fits,
    a shorter one (or the number) where it does not; no text runs into the next attempt."""
    t = load_trace(DATA_DIR / "slurm-fleet" / "trace")
    width = 760
    spec = charts.to_v5_spec(charts.gantt(timeline.job_timeline(t, "7"), synthetic=False, width=width))
    text = next(layer for layer in spec["vconcat"][0]["layer"] if layer["mark"]["type"] == "text")
    assert text["encoding"]["text"]["field"] == "shown"
    rows = spec["datasets"][text["data"]["name"]]
    span = max(r["end_ms"] for r in rows) - min(r["start_ms"] for r in rows)
    for r in rows:
        box = (r["end_ms"] - r["start_ms"]) * width / span - 8 - (10 if r["interrupted"] else 0)
        assert len(r["shown"]) * charts.LABEL_PX <= box, r
        assert r["shown"] in ("", str(r["attempt"]), r["label"], r["label"].removeprefix("attempt "))
    shown = [r["shown"] for r in sorted(rows, key=lambda r: r["start_ms"])]
    assert shown[0] == "attempt 0: preemption" and shown[-1] == "attempt 3: completed"
    assert json.dumps(shown) != json.dumps([r["label"] for r in sorted(rows, key=lambda r: r["start_ms"])])
