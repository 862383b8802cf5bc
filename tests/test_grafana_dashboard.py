"""The Grafana dashboard for ``ett export prometheus`` (tools/monitoring/grafana/ett-dashboard.json).

Grafana itself is not run here.  What is checked: the JSON's structure (every panel titled, with a unit, PromQL
targets, unique ids; every metric it names documented in docs/prometheus.md), and then every panel's PromQL against
the real Prometheus of tools/monitoring/start.sh, fed by ``ett export prometheus --gpu-hour-price`` of a small
hand-written trace: each query, with the template variables replaced by literals as Grafana would, must run and
return the series its panel shows (the labels its legend names; the values checked by hand where they are simple).

The hung/slow panels read ``ett_job_hung``, ``ett_job_slow``, ``ett_job_progress_age_seconds`` and
``ett_job_stall_threshold_seconds`` of the live hang detection (the ``hangs`` branch).  A panel whose metric family
is not in the export must return nothing (no data is faked for it); once the export carries the family, the same
test asks for a non-empty result.  The stack part skips only where the Debian packages are absent, saying which.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import urllib.request

import pytest
from monitoring import needs_stack, query, stack, wait_for  # tests/monitoring.py

from ettcore.cli import main
from ettcore.config import PROJECT_ROOT
from ettcore.phases import ALL_COMPONENTS

DASHBOARD = PROJECT_ROOT / "tools" / "monitoring" / "grafana" / "ett-dashboard.json"
METRIC = re.compile(r"\b((?:ett|node)_[a-z0-9_]+)\b")
LEGEND_LABEL = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
HANG_FAMILIES = {"ett_job_hung", "ett_job_slow", "ett_job_progress_age_seconds", "ett_job_stall_threshold_seconds"}
# what Grafana puts in place of the variables; the model is a real one of the trace below
SUBSTITUTE = {"$model": "ranker", "$window": "5m", "$__range": "5m", "$__rate_interval": "1m", "$__interval": "15s"}

# Hand-written trace (as-of 02:00): job a (llama, 8 GPUs, research) fails at 00:40 and completes at 01:30; job b
# (ranker, 4 GPUs, ads) is preempted at 00:30 and is recovering (no training since 01:00); job c (ranker, 2 GPUs,
# ads) waits in the queue since 01:30 (pending).
TRACE = {
    "jobs.csv": "job_id,model,gpus,team\na,llama,8,research\nb,ranker,4,ads\nc,ranker,2,ads\n",
    "attempts.csv": "job_id,attempt,start,end,end_reason\n"
    "a,0,2026-01-05T00:00:00Z,2026-01-05T00:40:00Z,failure\n"
    "a,1,2026-01-05T00:45:00Z,2026-01-05T01:30:00Z,completed\n"
    "b,0,2026-01-05T00:00:00Z,2026-01-05T00:30:00Z,preemption\n"
    "b,1,2026-01-05T01:00:00Z,,running\n"
    "c,0,2026-01-05T01:30:00Z,,running\n",
    "spans.csv": "job_id,attempt,phase,stage,start,end,cursor_start,cursor_end\n"
    "a,0,hardware_setup,,2026-01-05T00:00:00Z,2026-01-05T00:05:00Z,,\n"
    "a,0,train,,2026-01-05T00:05:00Z,2026-01-05T00:35:00Z,0,300\n"
    "a,1,trainer_init,,2026-01-05T00:45:00Z,2026-01-05T00:50:00Z,,\n"
    "a,1,train,,2026-01-05T00:50:00Z,2026-01-05T01:25:00Z,200,550\n"
    "a,1,shutdown,,2026-01-05T01:25:00Z,2026-01-05T01:30:00Z,,\n"
    "b,0,train,,2026-01-05T00:00:00Z,2026-01-05T00:30:00Z,0,30\n"
    "b,1,hardware_setup,,2026-01-05T01:00:00Z,2026-01-05T01:10:00Z,,\n"
    "b,1,trainer_init,,2026-01-05T01:10:00Z,2026-01-05T01:55:00Z,,\n"
    "c,0,scheduling,queue,2026-01-05T01:30:00Z,2026-01-05T02:00:00Z,,\n",
}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def panels(dash: dict) -> list[dict]:
    """Every panel but rows (which only group), rows' nested panels included."""
    out = []
    for p in dash["panels"]:
        out.extend(p.get("panels", []) if p["type"] == "row" else [p])
    return out


def substituted(expr: str, **override: str) -> str:
    values = {**SUBSTITUTE, **{f"${k}": v for k, v in override.items()}}
    for var, literal in sorted(values.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(var, literal)
    assert "$" not in expr, f"a template variable without a literal: {expr}"
    return expr


def test_dashboard_structure():
    dash = dashboard()
    assert dash["title"] and dash["uid"] and 36 <= dash["schemaVersion"] <= 41
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["model"]["definition"] == "label_values(ett_model_jobs, model)"
    assert variables["model"]["allValue"] == ".*"
    all_panels = list(dash["panels"]) + [q for p in dash["panels"] for q in p.get("panels", [])]
    ids = [p["id"] for p in all_panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    documented = (PROJECT_ROOT / "docs" / "prometheus.md").read_text(encoding="utf-8")
    used = set()
    for p in panels(dash):
        assert p["title"].strip() and p.get("description", "").strip(), p["id"]
        assert p["fieldConfig"]["defaults"].get("unit"), f"panel {p['title']!r} has no unit"
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        assert {"h", "w", "x", "y"} <= set(p["gridPos"]) and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        assert p["targets"], f"panel {p['title']!r} has no query"
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs))
        for t in p["targets"]:
            assert t["expr"].strip() and t["datasource"]["uid"] == "${datasource}", p["title"]
            used |= {m for m in METRIC.findall(t["expr"]) if m.startswith("ett_")}
    # every ett metric a panel reads is one the export documents (a typo would show an empty panel forever)
    undocumented = sorted(m for m in used if not re.search(rf"`{m}[`{{]", documented))
    assert used and not undocumented, undocumented
    # no two panels (rows included) share a cell of the grid: Grafana would push one down, out of its row
    cells: dict[tuple[int, int], str] = {}
    for p in all_panels:
        g = p["gridPos"]
        for cell in ((x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])):
            assert cell not in cells, (p["title"], cells[cell])
            cells[cell] = p["title"]
    # a panel's legend names the label its query sums by
    for p in panels(dash):
        for t in p["targets"]:
            by_label = re.match(r"(?:sort(?:_desc)?\()?sum by \(([a-z_]+)\)", t["expr"])
            if by_label and "," not in by_label.group(1) and t.get("legendFormat"):
                assert LEGEND_LABEL.findall(t["legendFormat"]) == [by_label.group(1)], p["title"]
    # what the dashboard must show: ETT%, lost time by component, cause and category, crash loops, hung jobs
    exprs = " ".join(t["expr"] for p in panels(dash) for t in p["targets"])
    for needed in (
        "ett_fleet_effective_training_ratio",
        "increase(ett_fleet_productive_gpu_seconds_total",
        "ett_model_effective_training_ratio",
        "sum by (component) (ett_model_l2_gpu_seconds",
        "sum by (owner) (ett_model_l2_gpu_seconds",
        "ett_model_interruptions_by_cause_total",
        "ett_model_lost_gpu_seconds_by_cause{",
        "ett_model_lost_gpu_seconds_by_cause_total",
        "ett_model_lost_cost",
        "sum by (category) (ett_model_interruptions_by_category{",
        "sum by (category) (increase(ett_model_interruptions_by_category_total",
        "ett_model_crash_loop_restarts{",
        "increase(ett_model_crash_loop_gpu_seconds_total",
        "ett_job_pending_seconds",
        "ett_job_recovering_seconds",
        *sorted(HANG_FAMILIES),
        "node_textfile_mtime_seconds",
    ):
        assert needed in exprs, needed


@needs_stack
@pytest.mark.xdist_group("monitoring")
def test_every_panel_query_against_a_real_prometheus(tmp_path):
    trace = tmp_path / "trace"
    trace.mkdir()
    for name, text in TRACE.items():
        (trace / name).write_text(text, encoding="utf-8")
    state = tmp_path / "mon"
    out = state / "textfile" / "ett.prom"

    def export(as_of: str) -> None:
        args = ["export", "prometheus", str(trace), "--as-of", as_of, "--gpu-hour-price", "2.5", "--out", str(out)]
        assert main(args) == 0

    export("2026-01-05T01:50:00Z")  # two exports 10 trace-minutes apart, so increase() of the counters moves
    with stack(state) as ports:
        prom = int(ports["PROMETHEUS_PORT"])
        wait_for(prom, "ett_as_of_timestamp_seconds == 1767577800", 20)  # 01:50
        time.sleep(4)  # two more scrapes of the first export
        export("2026-01-05T02:00:00Z")
        wait_for(prom, "ett_as_of_timestamp_seconds == 1767578400", 20)  # 02:00
        time.sleep(4)
        check_panels(prom, out.read_bytes().decode("utf-8"))
        check_all_models(prom)


def check_panels(prom: int, exposition: str) -> None:
    exported = set(re.findall(r"^# TYPE (\S+) ", exposition, flags=re.M))
    results: dict[str, list[dict]] = {}
    checked_hang = []
    for p in panels(dashboard()):
        for t in p["targets"]:
            promql = substituted(t["expr"])
            got = query(prom, promql)  # runs without error, or the test fails here
            results[p["title"] + "/" + t["refId"]] = got
            families = {m for m in METRIC.findall(promql) if m.startswith("ett_")}
            if families & HANG_FAMILIES and not families <= exported:
                # not on this branch: the live hang detection's series are absent, so the panel must stay empty
                assert got == [], (p["title"], got)
                checked_hang.append(p["title"])
                continue
            flagged = {f for f in families & HANG_FAMILIES if re.search(rf"^{f}{{[^}}]*}} 1$", exposition, flags=re.M)}
            if families & HANG_FAMILIES and "== 1" in promql and not flagged:
                # exported, and no job of this trace is hung or slow (its running jobs are starting or recovering,
                # which the hang detection does not judge): the panel lists nothing
                assert got == [], (p["title"], got)
                checked_hang.append(p["title"])
                continue
            assert got, f"panel {p['title']!r} returned nothing for {promql}"
            for label in set(LEGEND_LABEL.findall(t.get("legendFormat", ""))):
                assert all(label in s["metric"] for s in got), (p["title"], label, got)
            if "$model" in t["expr"] and "model" in LEGEND_LABEL.findall(t.get("legendFormat", "")):
                assert {s["metric"]["model"] for s in got} == {"ranker"}, p["title"]  # the filter is applied
    if not HANG_FAMILIES <= exported:
        assert checked_hang, "the hung/slow panels were not checked"

    def one(title: str) -> float:
        (series,) = results[title + "/A"]
        return float(series["value"][1])

    def by(title: str, label: str) -> dict[str, float]:
        return {s["metric"][label]: float(s["value"][1]) for s in results[title + "/A"]}

    # by hand from the trace at 02:00: wall 8 x 90 + 4 x 120 + 2 x 30 GPU-minutes = 75600 GPU-s; productive
    # 8 x (30 + 25) + 4 x 30 = 560 GPU-minutes = 33600 GPU-s (job a replays cursor 200-300: 10 of its 35 minutes)
    assert one("Fleet ETT% (whole trace, GPU-time weighted)") == pytest.approx(33600 / 75600)
    assert one("GPU-hours measured (whole trace)") == pytest.approx(75600 / 3600)
    assert one("Jobs measured") == 3
    # from 01:50 to 02:00 only b and c run, neither trains: ETT% over the range is 0, unlike the whole trace's
    assert one("Fleet ETT% over the dashboard's time range") == 0
    assert by("ETT% per model (whole trace), worst first", "model") == pytest.approx({"ranker": 7200 / 32400})
    components = by("GPU-hours lost by component (whole trace)", "component")
    assert set(components) == set(ALL_COMPONENTS)  # every component, zeros included (ettcore/defaults/phases.yaml)
    # ranker: c queues 30 min x 2 GPUs, b's re-queue gap 00:30-01:00 x 4 GPUs = 180 GPU-minutes of scheduling
    assert components["scheduling"] == pytest.approx(180 / 60)
    assert set(by("GPU-hours lost by owner (whole trace)", "owner")) >= {"Scheduler", "Cluster infrastructure"}
    causes = ("preemption", "user_error", "time_limit", "node_failure", "infrastructure", "hardware", "unknown")
    assert by("Interruptions by cause (whole trace)", "cause") == {c: int(c == "preemption") for c in causes}
    # b's preemption at 00:30: recovery to 02:00 (re-queue, setup, init, not trained again) = 90 min x 4 GPUs = 6 GPU-h
    assert by("GPU-hours lost by cause (whole trace)", "cause") == {c: 6.0 * (c == "preemption") for c in causes}
    # the categories of the built-in causes are their groups' labels (ettcore/defaults/causes.yaml); no job of the
    # trace is in a crash loop (a fails once and resumes further on; b is preempted, not a crash)
    categories = ("preemption", "user or application", "time limit", "system (node, cluster)", "hardware", "unknown")
    assert by("Interruptions by category (whole trace)", "category") == {c: int(c == "preemption") for c in categories}
    assert by("Crash-loop restarts per model (whole trace)", "model") == {"ranker": 0}
    money = by("Money lost by component (whole trace)", "component")
    assert "scheduling" not in money and money["hardware_setup"] == pytest.approx(4 * 10 / 60 * 2.5)  # b 01:00-01:10
    assert {s["metric"]["currency"] for s in results["Money lost by owner (whole trace)/A"]} == {"USD"}
    assert by("Jobs pending now (Time to Start so far)", "job_id") == {"c": 1800}
    assert by("Jobs recovering now (Time to Recover so far)", "job_id") == {"b": 5400}
    assert {s["metric"]["owner"] for s in results["Jobs recovering now (Time to Recover so far)/A"]} == {"ads"}
    age = one("Seconds since the export file was last written")
    assert 0 <= age < 60


def check_all_models(prom: int) -> None:
    """The model variable's own query lists the trace's models, and with "All" (its allValue) every panel runs too."""
    url = f"http://127.0.0.1:{prom}/api/v1/label/model/values?" + urllib.parse.urlencode({"match[]": "ett_model_jobs"})
    with urllib.request.urlopen(url, timeout=10) as r:
        assert json.load(r)["data"] == ["llama", "ranker"]
    for p in panels(dashboard()):
        for t in p["targets"]:
            if "$model" in t["expr"] and "model" in LEGEND_LABEL.findall(t.get("legendFormat", "")):
                got = query(prom, substituted(t["expr"], model=".*"))
                assert {s["metric"]["model"] for s in got} == {"llama", "ranker"}, p["title"]
