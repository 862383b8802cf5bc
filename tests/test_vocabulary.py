"""The one vocabulary (``ettcore/defaults/vocabulary.yaml``, ``causes.yaml``; :mod:`ettcore.vocabulary`): one edit of a
copy reaches every consumer, the SQL types none of it, the check cache's key covers it, and a bad file is an input
error naming the file, the entry and the field.

The edited copy adds the cause ``network`` (group ``system``, colour ``#0a0b0c``), labels the end reason
``preemption`` ``preempted`` in ``#123456`` and the bucket ``tts`` ``time to start`` in ``#abcdef``; a process run
with ``ETT_DEFAULTS_DIR`` pointing at it reads a small trace whose first interruption records ``cause=network``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from ettcore import vocabulary
from ettcore.config import PACKAGE_DIR, PROJECT_ROOT, SQL_DIR
from ettcore.errors import InputError

DEFAULTS = PACKAGE_DIR / "defaults"

# one job of 2 GPUs: a failure the source says was the network, a preemption that says nothing (its cause is
# derived: preemption), then a completed attempt
ATTEMPTS = [
    ["job_id", "attempt", "start", "end", "end_reason", "cause"],
    ["j1", 0, "2026-02-01T00:00:00Z", "2026-02-01T00:30:00Z", "failure", "network"],
    ["j1", 1, "2026-02-01T00:35:00Z", "2026-02-01T01:00:00Z", "preemption", ""],
    ["j1", 2, "2026-02-01T01:05:00Z", "2026-02-01T01:30:00Z", "completed", ""],
]
SPANS = [
    ["job_id", "attempt", "phase", "stage", "start", "end", "cursor_start", "cursor_end"],
    ["j1", 0, "train", "", "2026-02-01T00:05:00Z", "2026-02-01T00:25:00Z", 0, 100],
    ["j1", 1, "train", "", "2026-02-01T00:40:00Z", "2026-02-01T00:55:00Z", 100, 200],
    ["j1", 2, "train", "", "2026-02-01T01:10:00Z", "2026-02-01T01:25:00Z", 200, 300],
]
JOBS = [["job_id", "model", "gpus"], ["j1", "m", 2]]


def _write_csv(path: Path, rows: list[list]) -> None:
    path.write_text("".join(",".join(str(v) for v in r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    folder = tmp_path / "trace"
    folder.mkdir()
    for name, rows in (("jobs", JOBS), ("attempts", ATTEMPTS), ("spans", SPANS)):
        _write_csv(folder / f"{name}.csv", rows)
    return folder


def _copy(tmp_path: Path, name: str, edit: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """A copy of the shipped defaults in ``tmp_path/name``; ``edit`` changes its YAML files (by file name)."""
    folder = tmp_path / name
    shutil.copytree(DEFAULTS, folder)
    if edit is not None:
        docs = {f: yaml.safe_load((folder / f).read_text(encoding="utf-8")) for f in ("vocabulary.yaml", "causes.yaml")}
        edit(docs)
        for f, doc in docs.items():
            (folder / f).write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return folder


def _entry(entries: list[dict], key: str, name: str) -> dict:
    return next(e for e in entries if e[key] == name)


def _network_and_labels(docs: dict[str, Any]) -> None:
    docs["causes.yaml"]["causes"].append(
        {"cause": "network", "group": "system", "color": "#0a0b0c", "description": "the fabric between the nodes"}
    )
    preemption = _entry(docs["vocabulary.yaml"]["end_reasons"], "end_reason", "preemption")
    preemption.update(label="preempted", color="#123456")
    _entry(docs["vocabulary.yaml"]["l1_buckets"], "bucket", "tts").update(label="time to start", color="#abcdef")


def _run(defaults: Path | None, *argv: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    env.pop("ETT_DEFAULTS_DIR", None)
    if defaults is not None:
        env["ETT_DEFAULTS_DIR"] = str(defaults)
    p = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _scales(spec: Any) -> Iterator[dict[str, str]]:
    """Every colour scale of a Vega-Lite spec, as domain value -> colour."""
    if isinstance(spec, dict):
        if isinstance(spec.get("domain"), list) and isinstance(spec.get("range"), list):
            yield dict(zip(spec["domain"], spec["range"]))
        for v in spec.values():
            yield from _scales(v)
    elif isinstance(spec, list):
        for v in spec:
            yield from _scales(v)


def _rows(spec: dict) -> list[dict]:
    return [row for rows in spec.get("datasets", {}).values() for row in rows]


CHARTS = """
import json, sys
from ettcore import metric
from ettcore.metric import intervals
from ettcore.present import charts
from ettcore.trace.load import load_trace

t = load_trace(sys.argv[1])
gantt = charts.gantt(intervals.job_timeline(t, ["j1"]), synthetic=True)
causes = charts.cause_bars(metric.cause_table(t), "nof", synthetic=True, chart_title="NoF", color_by="cause")
groups = charts.cause_bars(metric.cause_table(t), "nof", synthetic=True, chart_title="NoF")
print(json.dumps({k: charts.to_v5_spec(c) for k, c in (("gantt", gantt), ("causes", causes), ("groups", groups))}))
"""


def test_one_edit_of_the_vocabulary_reaches_summarize_the_export_and_the_charts(tmp_path: Path, trace: Path) -> None:
    edited = _copy(tmp_path, "edited", _network_and_labels)
    doc = json.loads(_run(edited, "-m", "ettcore.cli", "summarize", str(trace), "--json"))
    by_cause = doc["fleet"]["nof_by_cause"]
    assert by_cause["network"] == 1 and by_cause["preemption"] == 1
    assert sum(by_cause.values()) == 2 and doc["fleet"]["nof"] == 2

    text = _run(edited, "-m", "ettcore.cli", "export", "prometheus", str(trace))
    lines = set(text.splitlines())
    assert 'ett_fleet_interruptions_by_cause{cause="network"} 1' in lines
    assert 'ett_fleet_interruptions_by_cause{cause="preemption"} 1' in lines
    assert 'ett_fleet_interruptions_by_cause{cause="unknown"} 0' in lines  # the failure says why: network
    assert 'ett_fleet_interruptions{end_reason="failure"} 1' in lines
    assert 'ett_fleet_interruptions{end_reason="preemption"} 1' in lines
    assert 'ett_job_interruptions{job_id="j1",model="m",end_reason="preemption"} 1' in lines
    assert not [ln for ln in lines if re.search(r'(interruptions|_total)\{[^}]*cause="failure"', ln)]

    specs = json.loads(_run(edited, "-c", CHARTS, str(trace)))
    gantt = list(_scales(specs["gantt"]))
    assert {"failure", "preempted"} <= set(next(s for s in gantt if "preempted" in s))
    assert next(s for s in gantt if "preempted" in s)["preempted"] == "#123456"
    assert not [s for s in gantt if "preemption" in s]  # the end reason is shown by its label
    assert next(s for s in gantt if "time to start" in s)["time to start"] == "#abcdef"
    assert "attempt 1: preempted" in {r.get("label") for r in _rows(specs["gantt"])}
    assert next(s for s in _scales(specs["causes"]) if "network" in s)["network"] == "#0a0b0c"
    assert {r["cause"]: r["nof"] for r in _rows(specs["causes"])}["network"] == 1
    network = next(r for r in _rows(specs["groups"]) if r["cause"] == "network")
    assert network["cause group"] == "system (node, cluster)"


def test_the_shipped_vocabulary_gives_what_the_tables_and_charts_showed_before() -> None:
    from ettcore.present import charts, tables

    assert charts.L1_LABELS["recovery"] == "recovery (NoF x TTR)" and charts.L1_COLORS["tts"] == "#f2b701"
    assert charts.END_REASON_COLORS["failure"] == "#d7301f" and charts.END_REASON_LABELS["preemption"] == "preemption"
    assert (
        tables.BASE_LABELS["ttr_total"] == "recovery (NoF x TTR)" and tables.BASE_LABELS["ttr_total_gpu"] == "recovery"
    )
    assert tables.BASE_LABELS["nof_failure"] == "failures" and tables.BASE_LABELS["nof_preemption"] == "preemptions"


def test_no_sql_file_types_an_end_reason_or_a_cause() -> None:
    v = vocabulary.load(DEFAULTS)
    names = set(v.end_reason_names) | set(v.cause_names)
    found = []
    for path in sorted(SQL_DIR.rglob("*.sql")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            code = line.split("--", 1)[0]  # a comment may name one
            found += [(path.relative_to(SQL_DIR), n, w) for w in re.findall(r"'([^']*)'", code) if w in names]
    assert not found
    assert len(list(SQL_DIR.rglob("*.sql"))) > 40  # the files were found


KEY = """
import sys
from pathlib import Path
from ettcore.trace import check_cache
print(check_cache.key([("attempts", Path(sys.argv[1]))], []))
"""


def test_the_check_caches_key_covers_the_vocabulary(tmp_path: Path, trace: Path) -> None:
    attempts = str(trace / "attempts.csv")
    shipped = _run(None, "-c", KEY, attempts).strip()
    same = _run(_copy(tmp_path, "same"), "-c", KEY, attempts).strip()
    edited = _run(_copy(tmp_path, "edited", _network_and_labels), "-c", KEY, attempts).strip()
    assert len(shipped) == 40
    assert same == shipped  # the content is the key, not the folder
    assert edited != shipped


def _role(docs: dict) -> None:
    docs["vocabulary.yaml"]["end_reasons"][1]["role"] = "crash"


def _color(docs: dict) -> None:
    docs["causes.yaml"]["causes"][3]["color"] = "red"


def _group(docs: dict) -> None:
    docs["causes.yaml"]["causes"].append(
        {"cause": "network", "group": "fabric", "color": "#0a0b0c", "description": "the fabric"}
    )


def _derived(docs: dict) -> None:
    del docs["causes.yaml"]["derived"]["failure"]


def _bucket_color(docs: dict) -> None:
    docs["vocabulary.yaml"]["l1_buckets"][2]["color"] = "#12345"


@pytest.mark.parametrize(
    "edit, file, row, field, words",
    [
        (_role, "vocabulary.yaml", 2, "role", "unknown role 'crash'"),
        (_color, "causes.yaml", 4, "color", "'red'"),
        (_group, "causes.yaml", 8, "group", "unknown group 'fabric'"),
        (_derived, "causes.yaml", None, "derived.failure", "'failure'"),
        (_bucket_color, "vocabulary.yaml", 3, "color", "'#12345'"),
    ],
)
def test_a_bad_vocabulary_names_the_file_the_entry_and_the_field(
    tmp_path: Path, edit: Callable[[dict], None], file: str, row: int | None, field: str, words: str
) -> None:
    folder = _copy(tmp_path, "bad", edit)
    with pytest.raises(InputError) as e:
        vocabulary.load(folder)
    (p,) = e.value.problems
    assert (p.file, p.row, p.field) == (str(folder / file), row, field)
    assert words in p.message
