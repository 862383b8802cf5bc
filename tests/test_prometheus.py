"""``ett export prometheus``: checked by the real ``promtool check metrics``, naming rules included.

``promtool`` comes from Debian's ``prometheus`` package (``.ci/run`` installs it); without it these tests are
skipped with a message naming it.  Each export is also read back with ``prometheus_client``'s text parser (an
independent reader of the format) to check that every job id, model and owner arrives unchanged as a label value,
that no series appears twice, and that the values are the metric's.  Traces: the bundled sample (SYNTHETIC), a
generated 10,000-job fleet (SYNTHETIC) and the sample with hostile job ids and models.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ettcore import metric
from ettcore.cli import main
from ettcore.config import SAMPLE_TRACE, SCENARIO_DIR
from ettcore.exporters import prometheus
from ettcore.trace import load_trace

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian package 'prometheus'; .ci/run installs it)"
)

HOSTILE_IDS = {
    "worked-example": 'a"b\\c\nd} x{y="z",w',
    "sample-preempted": "# HELP ett_fleet_jobs evil\n# TYPE ett_fleet_jobs counter\nett_fleet_jobs 1e9",
    "sample-running": "tab\there\rcr\x00nul",
    "sample-startup-failure": "Ünïcode 列 🚀 ' ; DROP TABLE spans; --",
}
HOSTILE_MODELS = {"ranker-a": 'model "a"\n', "ranker-b": "m\\b\\", "ranker-c": "}{=,"}


def promtool_check(text: str) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode("utf-8"), capture_output=True, timeout=300)


def export(trace_path, *args) -> str:
    """The export of a trace (every job's series unless ``args`` set ``--job-series-within``)."""
    out = Path(str(trace_path) + ".prom")
    if "--job-series-within" not in args:
        args = (*args, "--job-series-within", "all")
    assert main(["export", "prometheus", str(trace_path), *args, "--out", str(out)]) == 0
    return out.read_bytes().decode("utf-8")  # bytes as written: no newline translation (a raw CR in an id stays one)


def series(text: str) -> dict[tuple[str, tuple], float]:
    """Every sample, keyed by (name, sorted labels); a series seen twice fails."""
    seen: Counter = Counter()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            # counters are the cumulative _total families; everything else is a gauge
            assert fam.type == ("counter" if s.name.endswith("_total") else "gauge"), s.name
            key = (s.name, tuple(sorted(s.labels.items())))
            seen[key] += 1
            out[key] = s.value
    dup = [k for k, n in seen.items() if n > 1]
    assert not dup, f"series written twice: {dup[:3]}"
    return out


def value(got: dict, name: str, **labels) -> float:
    return got[(name, tuple(sorted(labels.items())))]


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("prom") / "hostile"
    folder.mkdir()
    for name in ("jobs", "attempts", "spans"):
        df = pl.read_csv(SAMPLE_TRACE / f"{name}.csv", infer_schema=False).with_columns(
            pl.col("job_id").replace(HOSTILE_IDS)
        )
        if name == "jobs":
            df = df.with_columns(pl.col("model").replace(HOSTILE_MODELS))
        df.write_parquet(folder / f"{name}.parquet")
    shutil.copy(SAMPLE_TRACE / "trace.json", folder / "trace.json")
    return folder


def test_label_escaping():
    assert prometheus.escape_label('a\\b"c\nd\re') == 'a\\\\b\\"c\\nd\re'
    assert prometheus.labels([("job_id", 'x"}'), ("model", "m")]) == '{job_id="x\\"}",model="m"}'
    assert [prometheus.number(v) for v in (3, 0.25, None, float("nan"), float("inf"), True)] == [
        "3",
        "0.25",
        "NaN",
        "NaN",
        "+Inf",
        "1",
    ]


@needs_promtool
def test_promtool_refuses_what_breaks_the_rules():
    """The check is not vacuous: promtool fails a non-base unit, a counter without _total and a line cut by a raw
    newline."""
    assert promtool_check("# HELP a_ms x\n# TYPE a_ms gauge\na_ms 1\n").returncode != 0
    bad = 'ett_job_wall_seconds{job_id="a\nb"} 1\n'
    assert promtool_check("# HELP ett_job_wall_seconds x\n# TYPE ett_job_wall_seconds gauge\n" + bad).returncode != 0


@needs_promtool
def test_sample_passes_promtool_and_carries_the_metric(tmp_path):
    shutil.copytree(SAMPLE_TRACE, tmp_path / "sample")
    text = export(tmp_path / "sample")
    res = promtool_check(text)
    assert res.returncode == 0 and not res.stdout and not res.stderr, res
    got = series(text)
    t = load_trace(SAMPLE_TRACE)
    fleet = metric.fleet_summary(t).row(0, named=True)
    assert value(got, "ett_fleet_effective_training_ratio") == pytest.approx(fleet["ett_pct"] / 100, rel=1e-12)
    assert value(got, "ett_fleet_wall_gpu_seconds") == pytest.approx(fleet["wall_gpu_h"] * 3600)
    buckets = ("productive", "tts", "recovery", "in_training_loss", "shutdown_tail")
    assert sum(value(got, "ett_fleet_l1_gpu_seconds", bucket=b) for b in buckets) == pytest.approx(
        fleet["wall_gpu_h"] * 3600
    )
    owners = metric.owner_gpu_hours(t)
    for r in owners.iter_rows(named=True):
        assert value(got, "ett_fleet_l2_gpu_seconds", component=r["component"], owner=r["owner"]) == pytest.approx(
            r["gpu_h"] * 3600
        )
    jobs = metric.job_summary(t)
    for r in jobs.iter_rows(named=True):
        lab = {"job_id": r["job_id"], "model": r["model"]}
        assert value(got, "ett_job_wall_seconds", **lab) == r["wall_s"]
        assert value(got, "ett_job_interruptions", end_reason="failure", **lab) == r["nof_failure"]
        assert sum(value(got, "ett_job_l1_seconds", bucket=b, **lab) for b in buckets) == pytest.approx(r["wall_s"])
    # the worked example of the spec: 50 of 120 minutes productive
    assert value(got, "ett_job_effective_training_ratio", job_id="worked-example", model="ranker-a") == pytest.approx(
        50 / 120
    )
    assert value(got, "ett_trace_info", trace=str(tmp_path / "sample"), synthetic="true") == 1


@needs_promtool
def test_hostile_ids_cannot_break_the_format(hostile_trace):
    text = export(hostile_trace)
    res = promtool_check(text)
    assert res.returncode == 0 and not res.stdout and not res.stderr, res
    got = series(text)
    ids = {dict(k[1]).get("job_id") for k in got if k[0] == "ett_job_wall_seconds"}
    assert ids == set(HOSTILE_IDS.values())  # every id arrives as itself, none split or merged
    models = {dict(k[1])["model"] for k in got if k[0] == "ett_model_jobs"}
    assert models == set(HOSTILE_MODELS.values())
    # an id that reads like exposition lines stays one label value: the fleet still has 4 jobs
    assert value(got, "ett_fleet_jobs") == 4
    assert sum(1 for k in got if k[0] == "ett_job_info") == 4


HOSTILE_TEAMS = {"ads": 'ads"} 1\nett_fleet_jobs 9', "feed": '\\feed\\\r\t{x="y"}'}
HOSTILE_OWNER = 'Compiler "team"\n# TYPE x counter'


@needs_promtool
def test_hostile_owners_and_owner_renames_cannot_break_the_format(hostile_trace, tmp_path):
    """Owners are label values too: a team column (``ett_job_owner``) and a mapping's owner names (the ``owner`` of
    every L2, lost-time and money series) that read like exposition lines pass promtool and parse back unchanged."""
    trace = tmp_path / "owners"
    shutil.copytree(hostile_trace, trace)
    jobs = pl.read_parquet(trace / "jobs.parquet").with_columns(pl.col("team").replace(HOSTILE_TEAMS))
    jobs.write_parquet(trace / "jobs.parquet")
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps({"owners": {"pt2_compile": HOSTILE_OWNER}}), encoding="utf-8")
    text = export(trace, "--mapping", str(mapping), "--gpu-hour-price", "2")
    res = promtool_check(text)
    assert res.returncode == 0 and not res.stdout and not res.stderr, res
    got = series(text)
    owners = {dict(k[1])["owner"] for k in got if k[0] == "ett_job_owner"}
    assert owners == set(jobs["team"]) and set(HOSTILE_TEAMS.values()) <= owners  # the teams as written
    for name in ("ett_fleet_l2_gpu_seconds", "ett_fleet_lost_gpu_seconds_total", "ett_fleet_lost_cost"):
        assert value(got, name, **{"component": "pt2_compile", "owner": HOSTILE_OWNER, **money_label(name)}) >= 0


def money_label(name: str) -> dict:
    return {"currency": "USD"} if "cost" in name else {}


@needs_promtool
def test_fleet_of_10k_jobs_passes_promtool(tmp_path):
    from ettcore.synthetic.generator import generate

    folder = generate(SCENARIO_DIR / "fleet.yaml", tmp_path / "fleet", n_jobs=10_000, seed=3)
    text = export(folder)
    res = promtool_check(text)
    assert res.returncode == 0 and not res.stdout and not res.stderr, res.stdout[:2000]
    got = series(text)
    assert value(got, "ett_fleet_jobs") == 10_000
    assert sum(1 for k in got if k[0] == "ett_job_wall_seconds") == 10_000
    fleet = metric.fleet_summary(load_trace(folder)).row(0, named=True)
    assert value(got, "ett_fleet_effective_training_ratio") == pytest.approx(fleet["ett_pct"] / 100, rel=1e-12)
    # model level adds up to the fleet level
    model_wall = sum(v for k, v in got.items() if k[0] == "ett_model_wall_gpu_seconds")
    assert model_wall == pytest.approx(value(got, "ett_fleet_wall_gpu_seconds"), rel=1e-9)


@needs_promtool
def test_window_and_exclusions_in_the_export(tmp_path):
    ex = tmp_path / "ex.csv"
    ex.write_text(
        "start,end,reason,label\n2026-01-05T00:40:00Z,2026-01-05T01:20:00Z,maintenance,\n"
        "2026-01-05T05:55:00Z,2026-01-05T08:00:00Z,incident,team=search\n",
        encoding="utf-8",
    )
    shutil.copytree(SAMPLE_TRACE, tmp_path / "sample")
    text = export(
        tmp_path / "sample", "--since", "2026-01-05T00:30:00Z", "--until", "2026-01-05T12:00:00Z", "--exclude", str(ex)
    )
    assert promtool_check(text).returncode == 0
    got = series(text)
    assert value(got, "ett_window_start_timestamp_seconds") == 1767573000.0
    t = load_trace(SAMPLE_TRACE, since="2026-01-05T00:30:00Z", until="2026-01-05T12:00:00Z", exclude=ex)
    fleet = metric.fleet_summary(t).row(0, named=True)
    assert fleet["excluded_gpu_h"] > 0
    assert value(got, "ett_fleet_excluded_gpu_seconds") == pytest.approx(fleet["excluded_gpu_h"] * 3600)
    assert value(got, "ett_fleet_effective_training_ratio") == pytest.approx(fleet["ett_pct"] / 100)
    ratio = value(got, "ett_job_effective_training_ratio", job_id="sample-startup-failure", model="ranker-c")
    assert math.isnan(ratio)  # listed (it ran inside the window) but all its time there is excluded
    assert value(got, "ett_job_excluded_seconds", job_id="sample-startup-failure", model="ranker-c") == 104 * 60
    assert (
        "ett_job_wall_seconds",
        (("job_id", "sample-running"), ("model", "ranker-b")),
    ) not in got  # starts after the window


def test_export_to_stdout(capsys):
    assert main(["export", "prometheus", str(SAMPLE_TRACE)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# HELP ett_trace_info ") and "\nett_fleet_jobs 4\n" in out


def test_recent_jobs_series_equal_the_full_summary(tmp_path):
    """Only the recent jobs' components are pivoted (metric.job_components): their series are the rows of the whole
    trace's job_summary, and the other jobs have none.  The sample's as-of is 2026-01-06T04:00Z; 21 h before it is
    07:00 on the 5th: the jobs ending at 08:00 and 07:44 and the running one are recent, worked-example (02:00) is
    not."""
    shutil.copytree(SAMPLE_TRACE, tmp_path / "sample")
    got = series(export(tmp_path / "sample", "--job-series-within", "21h"))
    full = metric.job_summary(load_trace(SAMPLE_TRACE))
    written = {dict(k[1])["job_id"] for k in got if k[0] == "ett_job_wall_seconds"}
    assert written == {"sample-preempted", "sample-running", "sample-startup-failure"}
    assert value(got, "ett_export_jobs_with_series") == 3
    owners = dict(metric.owner_gpu_hours(load_trace(SAMPLE_TRACE)).select("component", "owner").iter_rows())
    checked = 0
    for r in full.filter(pl.col("job_id").is_in(list(written))).iter_rows(named=True):
        lab = {"job_id": r["job_id"], "model": r["model"]}
        for c, owner in owners.items():
            assert value(got, "ett_job_l2_gpu_seconds", component=c, owner=owner, **lab) == pytest.approx(
                r[f"{c}_s"] * r["gpus"]
            )
            checked += 1
    assert checked >= 3
