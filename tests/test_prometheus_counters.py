"""What the export guarantees dashboards: millisecond resolution, the ``_total`` counters whose ``increase()`` gives
ETT% over a range, per-job series only for recent jobs, the pointer to a ``trace/`` folder inside the one given,
atomic textfile writes under a fast refresh loop with a concurrent reader, and that refresh loop itself
(``--every``).

Expected numbers are worked out by hand from the one-job trace below: 4 GPUs, running from 00:00, queued 10 min,
then training (cursor advancing, every instant productive); the counters by interruption cause from the two-job trace
``CAUSED`` (its derivation beside it).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
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


# Two jobs of model m, three interruptions of three causes.  Recovery (docs/metric.md): from the last productive
# instant before an interruption to the next one; replay is a train span's part at or below the earlier high-water
# mark (the cursor linear in time).
# - p (2 GPUs) trains 00:00-00:30 (cursor 0-300), is preempted, waits 5 min (scheduling), replays 200-250 in
#   00:35-00:40 and 250-300 in 00:40-00:45 (of 250-450 over 20 min): preemption loses 00:30-00:45 = 900 s, x 2 GPUs
#   = 1800 GPU-s.  As of 00:40 (its second attempt running, cut there): 00:30-00:40 = 600 s = 1200 GPU-s.
# - f (1 GPU) fails at 00:10 (user_error) after cursor 0-100; loads a checkpoint 00:10-00:15, replays 0-100 of its
#   0-350 train span 00:15-00:50 (35 min): 10 min, so productive from 00:25: user_error loses 00:10-00:25 = 900 s.
#   At 00:50 its node fails (node_failure); the next attempt replays 300-350 of 300-380 over 00:52-01:00 (8 min):
#   5 min, productive from 00:57: node_failure loses 00:50-00:57 = 420 s.
CAUSED = {
    "jobs.csv": "job_id,model,gpus,team\np,m,2,ads\nf,m,1,feed\n",
    "attempts.csv": "job_id,attempt,start,end,end_reason,cause\n"
    "p,0,2026-01-05T00:00:00Z,2026-01-05T00:30:00Z,preemption,preemption\n"
    "p,1,2026-01-05T00:35:00Z,2026-01-05T01:00:00Z,completed,\n"
    "f,0,2026-01-05T00:00:00Z,2026-01-05T00:10:00Z,failure,user_error\n"
    "f,1,2026-01-05T00:10:00Z,2026-01-05T00:50:00Z,failure,node_failure\n"
    "f,2,2026-01-05T00:50:00Z,2026-01-05T01:00:00Z,completed,\n",
    "spans.csv": "job_id,attempt,phase,stage,start,end,cursor_start,cursor_end\n"
    "p,0,train,,2026-01-05T00:00:00Z,2026-01-05T00:30:00Z,0,300\n"
    "p,1,train,,2026-01-05T00:35:00Z,2026-01-05T00:40:00Z,200,250\n"
    "p,1,train,,2026-01-05T00:40:00Z,2026-01-05T01:00:00Z,250,450\n"
    "f,0,train,,2026-01-05T00:00:00Z,2026-01-05T00:10:00Z,0,100\n"
    "f,1,checkpoint_load,,2026-01-05T00:10:00Z,2026-01-05T00:15:00Z,,\n"
    "f,1,train,,2026-01-05T00:15:00Z,2026-01-05T00:50:00Z,0,350\n"
    "f,2,train,,2026-01-05T00:52:00Z,2026-01-05T01:00:00Z,300,380\n",
}
CAUSED_LOST_S = {  # by hand (above): each job's seconds lost to each cause, as of 00:40 and 01:00
    "2026-01-05T00:40:00Z": {"p": {"preemption": 600}, "f": {"user_error": 900}},
    "2026-01-05T01:00:00Z": {"p": {"preemption": 900}, "f": {"user_error": 900, "node_failure": 420}},
}
GPUS = {"p": 2, "f": 1}
PROMTOOL = shutil.which("promtool")


def write_trace(folder: Path, tables: dict[str, str]) -> Path:
    folder.mkdir()
    for name, text in tables.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture()
def running(tmp_path) -> Path:
    return write_trace(tmp_path / "running", RUNNING)


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
        if "seconds" in name.split("{")[0].split("_"):  # every family in seconds, by-cause ones included
            assert v == round(v, 3), (name, v)
    assert 'ett_fleet_l1_gpu_seconds{bucket="tts"} 32696.645\n' in text  # read 32696.644999999997 before
    assert 'ett_fleet_lost_gpu_seconds_by_cause{cause="node_failure"} 384.501\n' in text  # read 384.50100000000003


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


def test_lost_time_by_cause_counters(tmp_path, capsys):
    """``ett_<level>_lost_gpu_seconds_by_cause_total`` and ``..._interruptions_by_cause_total``: the hand-derived
    values of CAUSED, equal to ``ett summarize --json``'s ``lost_s_by_cause`` x GPUs, growing from 00:40 to 01:00;
    ``promtool check metrics`` accepts the export (below)."""
    trace = write_trace(tmp_path / "caused", CAUSED)
    causes = ("preemption", "user_error", "time_limit", "node_failure", "infrastructure", "hardware", "unknown")
    got = {}
    for as_of, lost in CAUSED_LOST_S.items():
        capsys.readouterr()
        assert main(["summarize", str(trace), "--as-of", as_of, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        for j in doc["jobs"]:  # summarize agrees with the hand derivation, every cause (0 where none)
            assert j["lost_s_by_cause"] == {c: lost[j["job_id"]].get(c, 0) for c in causes}, (as_of, j["job_id"])
        got[as_of] = text = export_text(capsys, trace, "--as-of", as_of)
        s = samples(text)
        for c in causes:
            gpu_s = sum(GPUS[j] * lost[j].get(c, 0) for j in GPUS)
            nof = sum(c in lost[j] for j in GPUS)
            for level, lab in (("fleet", ""), ("model", 'model="m",')):
                assert s[f'ett_{level}_lost_gpu_seconds_by_cause_total{{{lab}cause="{c}"}}'] == gpu_s, (as_of, c)
                assert s[f'ett_{level}_lost_gpu_seconds_by_cause{{{lab}cause="{c}"}}'] == gpu_s
                assert s[f'ett_{level}_interruptions_by_cause_total{{{lab}cause="{c}"}}'] == nof, (as_of, c)
    early, late = (samples(got[t]) for t in CAUSED_LOST_S)
    increase = {
        c: late[f'ett_fleet_lost_gpu_seconds_by_cause_total{{cause="{c}"}}']
        - early[f'ett_fleet_lost_gpu_seconds_by_cause_total{{cause="{c}"}}']
        for c in ("preemption", "user_error", "node_failure")
    }
    assert increase == {"preemption": 2 * 300, "user_error": 0, "node_failure": 420}  # 00:40-00:45 x 2 GPUs; 420
    assert "# TYPE ett_fleet_lost_gpu_seconds_by_cause_total counter\n" in got["2026-01-05T01:00:00Z"]


@pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian package 'prometheus'; .ci/run installs it)"
)
def test_counters_by_cause_pass_promtool(tmp_path, capsys):
    text = export_text(capsys, write_trace(tmp_path / "caused", CAUSED), "--as-of", "2026-01-05T01:00:00Z")
    res = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


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


def test_the_bundled_slurm_fleet_folder_points_at_its_trace(capsys):
    """The case a new user meets first: ``ett export prometheus data/slurm-fleet`` (the folder above the trace)."""
    fleet = Path(__file__).parents[1] / "data" / "slurm-fleet"
    assert main(["export", "prometheus", str(fleet)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(f"a trace is in {fleet / 'trace'}: give that folder"), err


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


class Refresher:
    """``ett export prometheus ... --every`` as a real process, its stderr lines collected as they come."""

    def __init__(self, *args: str) -> None:
        cmd = [sys.executable, "-m", "ettcore.cli", "export", "prometheus", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stderr.readline, "")))
        self.reader.start()

    def wait_for(self, text: str, count: int = 1, within_s: float = 60.0) -> None:
        deadline = time.monotonic() + within_s
        while sum(text in line for line in self.lines) < count:
            assert self.proc.poll() is None, self.lines
            assert time.monotonic() < deadline, (text, self.lines)
            time.sleep(0.05)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        self.reader.join(timeout=10)
        return rc


def test_the_refresh_loop_writes_whole_exports_until_sigterm(tmp_path, capsys):
    """``--every 0.05s``: a reader polling the file sees only whole exports, each the one-shot export's bytes (the same
    trace and as-of); SIGTERM ends the loop with exit 0 and leaves no temporary file."""
    target = tmp_path / "textfile" / "ett.prom"
    want = export_text(capsys, SAMPLE_TRACE).encode()
    r = Refresher(str(SAMPLE_TRACE), "--every", "0.05s", "--out", str(target))
    seen: list[bytes] = []
    try:
        r.wait_for("wrote")
        while sum("wrote" in line for line in r.lines) < 10:
            seen.append(target.read_bytes())
    finally:
        rc = r.stop()
    assert rc == 0, r.lines
    assert len(seen) > 10 and all(s == want for s in seen), sum(s != want for s in seen)
    assert {p.name for p in target.parent.iterdir()} == {"ett.prom"}


def test_a_failed_refresh_keeps_the_last_export_and_the_loop_goes_on(tmp_path):
    trace = write_trace(tmp_path / "trace", RUNNING)
    target = tmp_path / "ett.prom"
    r = Refresher(str(trace), "--every", "0.2s", "--out", str(target))
    try:
        r.wait_for("wrote")
        good = target.read_bytes()
        (trace / "jobs.csv").write_text("job_id,model,gpus\nr,ranker,-4\n", encoding="utf-8")  # a bad row
        r.wait_for(" failed (")  # not "failed" alone: the test's own folder name holds it
        assert target.read_bytes() == good  # the collector still reads the last whole export
        wrote = sum(line.startswith("wrote") for line in r.lines)
        (trace / "jobs.csv").write_text(RUNNING["jobs.csv"], encoding="utf-8")
        r.wait_for("wrote", wrote + 1)
    finally:
        assert r.stop() == 0
    failed = next(line for line in r.lines if " failed (" in line)  # one line a failed refresh
    assert f"({target} keeps its last export)" in failed and "jobs.csv" in failed and "gpus" in failed, failed


@pytest.mark.parametrize(
    "args",
    [["--every", "2s"], ["--every", "0s", "--out", "x.prom"], ["--every", "soon", "--out", "x.prom"]],
)
def test_bad_refresh_options_are_one_line_exit_2(capsys, args):
    assert main(["export", "prometheus", str(SAMPLE_TRACE), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ett: --every"), err


def test_a_bad_trace_at_the_first_refresh_is_exit_2(tmp_path, capsys):
    trace = write_trace(tmp_path / "trace", {**RUNNING, "jobs.csv": "job_id,model,gpus\nr,ranker,-4\n"})
    assert main(["export", "prometheus", str(trace), "--every", "1s", "--out", str(tmp_path / "ett.prom")]) == 2
    assert "gpus" in capsys.readouterr().err and not (tmp_path / "ett.prom").exists()
