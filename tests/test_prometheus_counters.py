"""The export's fixes of issue 29: millisecond resolution, the ``_total`` counters whose ``increase()`` gives ETT%
over a range, per-job series only for recent jobs, the pointer to a ``trace/`` folder inside the one given, and
atomic textfile writes under a fast refresh loop with a concurrent reader.

Expected numbers are worked out by hand from the one-job trace below: 4 GPUs, running from 00:00, queued 10 min,
then training (cursor advancing, every instant productive).
"""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path

import pytest

from ettcore.atomic import write_text
from ettcore.cli import main
from ettcore.config import SAMPLE_TRACE
from ettcore.exporters import prometheus
from ettcore.trace import load_trace

RUNNING = {
    "jobs.csv": "job_id,model,gpus\nr,ranker,4\n",
    "attempts.csv": "job_id,attempt,start,end,end_reason\nr,0,2026-01-05T00:00:00Z,,running\n",
    "spans.csv": "job_id,attempt,phase,stage,start,end,cursor_start,cursor_end\n"
    "r,0,scheduling,queue,2026-01-05T00:00:00Z,2026-01-05T00:10:00Z,,\n"
    "r,0,train,,2026-01-05T00:10:00Z,2026-01-05T03:00:00Z,0,1700\n",
}


@pytest.fixture()
def running(tmp_path) -> Path:
    folder = tmp_path / "running"
    folder.mkdir()
    for name, text in RUNNING.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def samples(text: str) -> dict[str, float]:
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line[:1] != "#"}


def export_text(capsys, *args) -> str:
    capsys.readouterr()
    assert main(["export", "prometheus", *map(str, args)]) == 0
    return capsys.readouterr().out


def test_sums_at_millisecond_resolution():
    assert prometheus.number(32696.644999999997, 3) == "32696.645"
    assert prometheus.number(36543.0000000001, 3) == "36543"
    assert prometheus.number(-0.0001, 3) == "0"
    assert prometheus.number(0.05248696056700326) == "0.05248696056700326"  # ratios keep every digit


def test_no_float_noise_in_a_real_export(capsys):
    text = export_text(capsys, Path(__file__).parents[1] / "data" / "slurm-fleet" / "trace")
    for name, v in samples(text).items():
        if re.match(r"^ett_\w+_seconds(_total)?\b", name):
            assert v == round(v, 3), (name, v)
    assert 'ett_fleet_l1_gpu_seconds{bucket="tts"} 32696.645\n' in text  # read 32696.644999999997 before


def test_counters_give_ett_over_a_range(running, capsys):
    at = {
        t: samples(export_text(capsys, running, "--as-of", t))
        for t in ("2026-01-05T00:05:00Z", "2026-01-05T01:00:00Z", "2026-01-05T02:00:00Z")
    }
    wall = {t: s["ett_fleet_wall_gpu_seconds_total"] for t, s in at.items()}
    prod = {t: s["ett_fleet_productive_gpu_seconds_total"] for t, s in at.items()}
    # 4 GPUs x 5 min queued; x 60 min of which 50 productive; x 120 min of which 110 productive
    assert wall == {"2026-01-05T00:05:00Z": 1200, "2026-01-05T01:00:00Z": 14400, "2026-01-05T02:00:00Z": 28800}
    assert prod == {"2026-01-05T00:05:00Z": 0, "2026-01-05T01:00:00Z": 12000, "2026-01-05T02:00:00Z": 26400}
    # increase() over 01:00..02:00: (26400 - 12000) / (28800 - 14400) = 1.0, the window's own ETT% ...
    t1, t2 = "2026-01-05T01:00:00Z", "2026-01-05T02:00:00Z"
    assert (prod[t2] - prod[t1]) / (wall[t2] - wall[t1]) == 1.0
    windowed = samples(export_text(capsys, running, "--as-of", t2, "--since", t1))
    assert windowed["ett_fleet_effective_training_ratio"] == 1.0
    # ... while the gauge over the whole history reads 110 / 120
    assert at[t2]["ett_fleet_effective_training_ratio"] == pytest.approx(110 / 120)
    assert at[t2]['ett_fleet_lost_gpu_seconds_total{component="scheduling",owner="Scheduler"}'] == 4 * 600
    # a window's totals are not cumulative: no counters then
    assert "_total" not in "".join(windowed)
    # the running job's current spell: 5 min into its queue at 00:05, none at 01:00
    assert at["2026-01-05T00:05:00Z"]['ett_job_pending_seconds{job_id="r",model="ranker"}'] == 300
    assert at[t1]['ett_job_pending_seconds{job_id="r",model="ranker"}'] == 0


def test_per_job_series_only_for_recent_jobs(capsys):
    # the sample's as-of time is 2026-01-06T04:00Z (trace.json); worked-example ended 2026-01-05T02:00Z (26 h
    # before), sample-preempted 08:00Z (20 h), sample-startup-failure 07:44Z (20.3 h), sample-running still runs
    def jobs_with_series(*args) -> set[str]:
        s = samples(export_text(capsys, SAMPLE_TRACE, *args))
        return {re.search(r'job_id="([^"]*)"', k).group(1) for k in s if k.startswith("ett_job_info")}

    assert jobs_with_series() == {"sample-preempted", "sample-startup-failure", "sample-running"}  # default 24h
    assert jobs_with_series("--job-series-within", "1h") == {"sample-running"}
    assert len(jobs_with_series("--job-series-within", "all")) == 4
    s = samples(export_text(capsys, SAMPLE_TRACE, "--job-series-within", "1h"))
    assert s["ett_fleet_jobs"] == 4  # fleet and model series keep every job
    assert s["ett_export_jobs_with_series"] == 1 and s["ett_export_job_series_within_seconds"] == 3600
    assert main(["export", "prometheus", str(SAMPLE_TRACE), "--job-series-within", "yesterday"]) == 2
    assert "--job-series-within" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "prometheus"],
        ["summarize"],
        ["stalls"],
        ["trend"],
        ["validate"],
        ["opportunities"],
    ],
)
def test_the_folder_above_a_trace_points_inside(tmp_path, capsys, argv):
    shutil.copytree(SAMPLE_TRACE, tmp_path / "campaign" / "trace")
    assert main([*argv, str(tmp_path / "campaign")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"a trace is in {tmp_path / 'campaign' / 'trace'}: give that folder" in err[0], err


def test_textfile_writes_are_atomic_under_a_fast_refresh(tmp_path):
    """A reader polling the file while it is rewritten hundreds of times sees only whole exports, never a part."""
    texts = []
    for as_of in ("2026-01-05T12:00:00Z", "2026-01-06T04:00:00Z"):
        lines = list(prometheus.exposition(load_trace(SAMPLE_TRACE, as_of=as_of)))
        texts.append("\n".join(lines) + "\n")
    assert texts[0] != texts[1]
    target = tmp_path / "textfile" / "ett.prom"
    write_text(target, texts[0])
    seen: list[bytes] = []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            seen.append(target.read_bytes())

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(400):
            write_text(target, texts[i % 2])
    finally:
        stop.set()
        t.join()
    whole = {x.encode() for x in texts}
    assert len(seen) > 50 and all(s in whole for s in seen), sum(s not in whole for s in seen)
    assert {p.name for p in target.parent.iterdir()} == {"ett.prom"}  # no temporary file left behind
