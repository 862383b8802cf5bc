"""Hang to alert, end to end, with no mock: real PyTorch jobs under the recorder, ``ett`` refreshing the
export into node_exporter's textfile folder, Prometheus scraping it and evaluating the project's rules, Alertmanager
posting to a webhook receiver of the test's own.

The jobs are ``tools/campaigns/jobs/hang_job.py`` (plain PyTorch, one process each, recorded by ``record_worker``;
training data SYNTHETIC), in one run folder:

- ``hung`` (team ``ads``) trains in steps of ``STEP_S``, then, when the test creates a file, stops advancing: it
  sleeps with its process and attempt open;
- ``slow`` (team ``feed``) trains ``SLOW_AFTER`` steps, then every step takes ``SLOW_FACTOR`` times longer (still
  advancing); it checkpoints every ``CHECKPOINT_EVERY`` steps; the test sends it SIGTERM (a preemption, which the
  recorder writes before the process dies by it) and starts it again: the next attempt restores the checkpoint,
  replays the steps since, and trains on.

The jobs write their progress at most every ``PROGRESS_S`` (the recorder's ``progress_interval_s``; 1 s by default),
so that a 20 s range of exports every 2 s reads a steady ETT ratio.
``ett export prometheus RUN --every REFRESH --stall-after STALL_AFTER --out TEXTFILE`` refreshes the export; the
rules are ``ett export prometheus-rules --for 0s --ett-range ETT_RANGE`` (the documented overrides that make this
fit in CI; the defaults are 60 s and 10 x the median step for the stall threshold, 5m for ``for``, 6h for the range).

Ground truth is the jobs' own output (``step N T`` lines, ``hung after step N``, ``resumed at step N``) and the
test's own actions (the file it created, the SIGTERM it sent), never ettcore.  What must hold:

- the hang reaches the webhook as EttJobHung for ``hung`` (its owner, rank 0 and this machine named) within
  ``HUNG_BOUND_S`` of its last step.  What sets the bound: the stall threshold (the job is hung once it has not
  advanced for longer), one refresh interval (the next export sees it) plus the export's own time, one scrape
  interval, one evaluation interval, ``for: 0s``, Alertmanager's group_wait, and ``SLACK_S`` for a loaded 2-core
  machine (an export of the run folder takes about a second, several when the machine is busy);
- EttJobHung never fires for ``slow``, over a stretch of slow steps longer than that bound, its preemption and its
  restart; ett_job_slow says it is slow while Prometheus never held ett_job_hung == 1 for it;
- EttFleetEttBelow fires after the hang: with two 1-GPU jobs, the fleet's ratio over ``ETT_RANGE`` drops below
  ``ETT_BELOW`` once the hung job has been idle for ``2 x (1 - ETT_BELOW)`` of the range (8 s of 20 s), so its bound
  is that plus the same refresh, scrape, evaluation, group_wait and slack.  At start-up the jobs' Time to Start
  makes the 20 s range's ETT low and the alert may rightly fire; the test waits until the range holds only training
  and the alert is resolved, and then the alert must not start before the hang;
- the preemption reaches Prometheus as NoF and lost GPU-seconds by cause ``preemption``;
- at the end, the series Prometheus holds are the numbers ``ett summarize`` and ``ett stalls --live`` give for the
  same snapshot of the run folder at the same as-of time;
- node_exporter never failed to read the file the refresher rewrote every 2 s (``node_textfile_scrape_error``).

The measured delays are printed (``pytest -s``) and stated in docs/guides/alerts-and-money.md.  Needs the ``torch``
extra and the Debian monitoring packages; skips, saying which, only where one is absent.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from conftest import needs  # tests/conftest.py
from monitoring import Webhook, api, needs_stack, query, stack, value, wait_for  # tests/monitoring.py

from ettcore.cli import main
from ettcore.config import REPORT_DIR
from tools.campaigns.jobs import JOBS_DIR
from tools.campaigns.jobs.ground_truth import child_env

pytestmark = [
    needs_stack,
    pytest.mark.xdist_group("monitoring"),
    pytest.mark.torch,
    needs("torch", extra="torch"),
    pytest.mark.slow,
]

STEP_S = 0.05
SLOW_AFTER, SLOW_FACTOR = 100, 8  # steps of 0.4 s: eight times the job's own pace
CHECKPOINT_EVERY = 10
PROGRESS_S = 0.25  # the recorder's progress records at most this often (default 1 s): how far the live view lags
STALL_AFTER = 5.0  # s (--stall-after)
REFRESH, SCRAPE, EVAL, GROUP_WAIT = 2.0, 2.0, 2.0, 1.0  # s: --every, tools/monitoring's defaults
ETT_RANGE, ETT_BELOW = 20, 0.8
SLACK_S = 15.0
HUNG_BOUND_S = STALL_AFTER + REFRESH + SCRAPE + EVAL + GROUP_WAIT + SLACK_S  # 27 s
ETT_BOUND_S = 2 * (1 - ETT_BELOW) * ETT_RANGE + REFRESH + SCRAPE + EVAL + GROUP_WAIT + SLACK_S  # 30 s
HOST = socket.gethostname()
RATIO = (  # the fleet's ETT ratio over the range, as EttFleetEttBelow computes it
    f"increase(ett_fleet_productive_gpu_seconds_total[{ETT_RANGE}s]) "
    f"/ increase(ett_fleet_wall_gpu_seconds_total[{ETT_RANGE}s])"
)


class Job:
    """One hang_job.py process (its own session, so that it and nothing else gets the test's signals)."""

    def __init__(self, run: Path, job_id: str, log: Path, *args: str) -> None:
        self.log = log
        cmd = [sys.executable, str(JOBS_DIR / "hang_job.py"), "--step-s", str(STEP_S)]
        cmd += ["--progress-interval", str(PROGRESS_S), *args]
        env = child_env(ETT_RUN_DIR=str(run), ETT_JOB_ID=job_id)
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT, start_new_session=True
        )

    def steps(self) -> list[tuple[int, float]]:
        return steps_of(self.log)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)


def steps_of(log: Path) -> list[tuple[int, float]]:
    """The job's own ``step N T`` lines: each step and the instant it ended."""
    lines = (ln.split() for ln in log.read_text().splitlines())
    return [(int(w[1]), float(w[2])) for w in lines if w[:1] == ["step"] and len(w) == 3]


def median_step(steps: list[tuple[int, float]]) -> float:
    return statistics.median(b[1] - a[1] for a, b in zip(steps, steps[1:]))


def until(what, within_s: float, why: str, every_s: float = 0.2):
    deadline = time.monotonic() + within_s
    while not (got := what()):
        assert time.monotonic() < deadline, why
        time.sleep(every_s)
    return got


def test_hang_to_alert_end_to_end(tmp_path, capsys):
    t_test = time.monotonic()
    run, state = tmp_path / "run", tmp_path / "mon"
    hook = Webhook()
    rules = tmp_path / "rules.yml"
    args = ["export", "prometheus-rules", "--for", "0s", "--ett-range", f"{ETT_RANGE}s", "--ett-below", str(ETT_BELOW)]
    assert main([*args, "--out", str(rules)]) == 0
    hang_file = tmp_path / "hang-now"
    checkpoint = tmp_path / "slow.pt"
    slow_args = ["--team", "feed", "--slow-after", str(SLOW_AFTER), "--slow-factor", str(SLOW_FACTOR)]
    slow_args += ["--checkpoint", str(checkpoint), "--checkpoint-every", str(CHECKPOINT_EVERY)]
    jobs: list[Job] = []
    refresher = None
    textfile = state / "textfile" / "ett.prom"
    seen_as_of: dict[float, float] = {}  # as-of time of an export -> when Prometheus first held it (time.time())
    with stack(state, rules, hook) as ports:
        prom = int(ports["PROMETHEUS_PORT"])
        try:
            hung = Job(
                run, "hung", tmp_path / "hung.log", "--team", "ads", "--hang-when", str(hang_file), "--hang-rank", "0"
            )
            slow = Job(run, "slow", tmp_path / "slow-0.log", *slow_args)
            jobs += [hung, slow]
            until(lambda: hung.steps() and slow.steps(), 120, "the jobs never trained")
            cmd = [sys.executable, "-m", "ettcore.cli", "export", "prometheus", str(run), "--every", f"{REFRESH:g}s"]
            cmd += ["--stall-after", f"{STALL_AFTER:g}", "--out", str(textfile)]
            with (tmp_path / "refresher.err").open("w") as err:  # the child keeps its own descriptor
                refresher = subprocess.Popen(cmd, env=child_env(), stdout=subprocess.DEVNULL, stderr=err)

            def watch() -> None:  # the latest export Prometheus holds, and when it first held it
                got = value(prom, "ett_as_of_timestamp_seconds")
                if got is not None and got not in seen_as_of:
                    seen_as_of[got] = time.time()
                assert refresher.poll() is None, (tmp_path / "refresher.err").read_text()
                assert not hook.firing("EttJobHung", job_id="slow"), "EttJobHung fired for the job that is only slow"

            def in_prometheus(promql: str):
                watch()
                return query(prom, promql)

            # both jobs in Prometheus; the slow job slow (its recent steps over 3 x its median) and the fleet's ETT
            # over the range computed from the counters, healthy, before the hang
            until(lambda: in_prometheus('ett_job_progress_age_seconds{job_id="hung"}'), 120, "no export reached it")
            until(lambda: in_prometheus('ett_job_slow{job_id="slow"} == 1'), 90, "the slow job was never slow")
            # A start-up counts as lost time (the jobs' Time to Start): over a 20 s range the fleet's ETT starts low
            # and EttFleetEttBelow may fire then, rightly; once the range holds only training, the alert must be
            # resolved before the hang (its notification after the hang is then a new one, startsAt after it).
            first_export = min(seen_as_of)

            def steady() -> bool:
                return (
                    time.time() > first_export + ETT_RANGE + SCRAPE
                    and bool(in_prometheus(f"({RATIO}) >= {ETT_BELOW}"))
                    and not query(prom, 'ALERTS{alertname="EttFleetEttBelow"}')
                )

            until(steady, 90, "the fleet's ETT never settled above the threshold")
            steady_at = time.time()
            startup_alerts = len(hook.firing("EttFleetEttBelow"))
            assert not hook.firing("EttJobHung"), hook.got

            hang_file.touch()  # the hung job stops at its next step
            until(lambda: "hung after step" in hung.log.read_text(), 30, "the job did not hang")
            hang_at = hung.steps()[-1][1]  # its last step: from then on it does not advance
            fired = until(
                lambda: (watch(), hook.firing("EttJobHung", wall=True, job_id="hung"))[1],
                HUNG_BOUND_S + 30,
                "no EttJobHung at the webhook",
            )
            hung_delay = fired[0][0] - hang_at
            alert = fired[0][1]
            ett_fired = until(
                lambda: (watch(), [f for f in hook.firing("EttFleetEttBelow", wall=True) if starts(f[1]) > steady_at])[
                    1
                ],
                ETT_BOUND_S + 30,
                "no EttFleetEttBelow at the webhook after the hang",
            )
            assert starts(ett_fired[0][1]) >= hang_at, "EttFleetEttBelow fired on a steady fleet, before the hang"
            ett_delay = ett_fired[0][0] - hang_at

            # the slow job has been slow longer than the hang bound without an alert: preempt it, start it again
            slow_from = next(t for s, t in slow.steps() if s == SLOW_AFTER)  # its first slow step starts
            until(lambda: (watch(), time.time() - slow_from > HUNG_BOUND_S)[1], 120, "never here")
            before = slow.steps()[-1][0]
            slow.proc.send_signal(signal.SIGTERM)
            assert slow.proc.wait(timeout=60) == -signal.SIGTERM
            preempted_at = time.time()
            slow = Job(run, "slow", tmp_path / "slow-1.log", *slow_args)  # the next attempt, started at once
            jobs.append(slow)
            nof = 'ett_fleet_interruptions_by_cause_total{cause="preemption"} == 1'
            until(lambda: in_prometheus(nof), 60, "the preemption never reached Prometheus")
            preemption_seen = time.time() - preempted_at
            resumed = until(
                lambda: [w for w in slow.log.read_text().split("\n") if w.startswith("resumed at step")],
                120,
                "the slow job did not resume",
            )
            resumed_at = int(resumed[0].split()[-1])
            assert before - CHECKPOINT_EVERY < resumed_at <= before  # the last save before the preemption
            until(lambda: (watch(), slow.steps() and slow.steps()[-1][0] > before + 3)[1], 120, "no new training")
            lost = 'ett_fleet_lost_gpu_seconds_by_cause_total{cause="preemption"} > 0'
            until(lambda: in_prometheus(lost), 30, "no time lost to the preemption in Prometheus")
            no_alert_window = preempted_at - slow_from
            watch()
            assert not hook.firing("EttJobHung", job_id="slow")

            # what Prometheus held over the run, for the slow job: slow at times, never hung
            span = f"{int(time.time() - slow_from) + 5}s"
            assert value(prom, f'max(max_over_time(ett_job_hung{{job_id="slow"}}[{span}]))') == 0
            assert value(prom, f'max(max_over_time(ett_job_slow{{job_id="slow"}}[{span}]))') == 1
            assert value(prom, f"max(max_over_time(node_textfile_scrape_error[{span}]))") == 0  # never a bad read
            # the ETT alert came after the fleet crossed the threshold, not before the hang
            first_low = first_below(prom, RATIO, steady_at, ett_fired[0][0])
            assert first_low is not None and first_low >= hang_at - REFRESH, (first_low, hang_at)

            # the series are the numbers ett summarize gives: a snapshot of the run folder, exported at one as-of
            refresher.send_signal(signal.SIGTERM)
            assert refresher.wait(timeout=60) == 0, (tmp_path / "refresher.err").read_text()
            snap = tmp_path / "snapshot"
            assert main(["from-recorder", str(run), str(snap)]) == 0
            as_of = round(time.time(), 3)
            export = ["export", "prometheus", str(snap), "--as-of", str(as_of), "--stall-after", f"{STALL_AFTER:g}"]
            assert main([*export, "--out", str(textfile)]) == 0
            wait_for(prom, f"ett_as_of_timestamp_seconds == {as_of}", 30)
            capsys.readouterr()
            compare(prom, snap, as_of, capsys)
        finally:
            if refresher is not None and refresher.poll() is None:
                refresher.kill()
                refresher.wait(timeout=30)
            for job in jobs:
                job.kill()

    # the hang alert named the job, its owner, model, rank and node
    assert alert["labels"]["first_stopped_rank"] == "0" and alert["labels"]["first_stopped_node"] == HOST
    assert alert["labels"]["owner"] == "ads" and alert["labels"]["model"] == "hang-demo"
    assert alert["annotations"]["runbook_url"].endswith("#job-hung")
    # ground truth of the slow job: its slow steps several times its fast ones, and still advancing
    steps = steps_of(tmp_path / "slow-0.log")
    fast, slowed = median_step(steps[:SLOW_AFTER]), median_step(steps[SLOW_AFTER:])
    assert slowed > 3 * fast and len(steps) > SLOW_AFTER + 20
    lags = [seen - as_of for as_of, seen in seen_as_of.items()]
    wall = time.monotonic() - t_test
    timings = (
        f"\n[monitoring e2e] stack started in {ports['start_s']:.1f} s; export as-of -> in Prometheus: median "
        f"{statistics.median(lags):.1f} s, max {max(lags):.1f} s ({len(lags)} exports, every {REFRESH:g} s);"
        f"\n[monitoring e2e] hang -> EttJobHung at the webhook {hung_delay:.1f} s (bound {HUNG_BOUND_S:g} s); "
        f"hang -> EttFleetEttBelow {ett_delay:.1f} s (bound {ETT_BOUND_S:g} s; the ratio over {ETT_RANGE} s "
        f"first below {ETT_BELOW:g} {first_low - hang_at:.1f} s after the hang);"
        f"\n[monitoring e2e] slow job: {no_alert_window:.1f} s slow without an alert, then preempted; the "
        f"preemption in Prometheus after {preemption_seen:.1f} s; EttFleetEttBelow at start-up (the jobs' Time to "
        f"Start over the {ETT_RANGE} s range): {startup_alerts} notification(s); test wall time {wall:.0f} s"
    )
    with capsys.disabled():
        print(timings)
    # also kept in reports/ (under pytest-xdist a worker's print does not reach the terminal): .ci/run prints it
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    (REPORT_DIR / "monitoring-e2e.txt").write_text(timings.lstrip("\n") + "\n")
    assert hung_delay <= HUNG_BOUND_S
    assert ett_delay <= ETT_BOUND_S
    assert no_alert_window > HUNG_BOUND_S


def starts(alert: dict) -> float:
    """An alert's ``startsAt`` (when Prometheus first found it firing), as Unix seconds."""
    return datetime.fromisoformat(alert["startsAt"].replace("Z", "+00:00")).timestamp()


def first_below(prom: int, ratio: str, start: float, end: float) -> float | None:
    """The first instant, at 1 s steps, at which Prometheus computes the fleet's ratio below the threshold."""
    data = api(prom, "query_range", query=f"({ratio}) < {ETT_BELOW}", start=f"{start:.3f}", end=f"{end:.3f}", step="1")
    points = [float(t) for series in data["result"] for t, _ in series["values"]]
    return min(points) if points else None


def compare(prom: int, snap: Path, as_of: float, capsys) -> None:
    """Prometheus' series against ``ett summarize --json`` and ``ett stalls --live --json`` on the same snapshot at the
    same as-of, and against the test's own ground truth (one preemption, of the slow job)."""
    assert main(["summarize", str(snap), "--as-of", str(as_of), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    live_args = ["--live", "--json", "--as-of", str(as_of), "--stall-after", f"{STALL_AFTER:g}"]
    assert main(["stalls", str(snap), *live_args]) == 0
    live = {j["job_id"]: j for j in json.loads(capsys.readouterr().out)["jobs"]}
    fleet = doc["fleet"]

    def one(promql: str) -> float:
        got = value(prom, promql)
        assert got is not None, promql
        return got

    approx = pytest.approx
    assert one("ett_fleet_wall_gpu_seconds") == approx(fleet["wall_gpu_h"] * 3600, abs=1e-3)
    assert one("ett_fleet_wall_gpu_seconds_total") == approx(fleet["wall_gpu_h"] * 3600, abs=1e-3)
    assert one("ett_fleet_productive_gpu_seconds_total") == approx(fleet["productive_gpu_h"] * 3600, abs=1e-3)
    assert one("ett_fleet_effective_training_ratio") == approx(fleet["ett_pct"] / 100, rel=1e-9)
    for cause, lost_h in fleet["lost_gpu_h_by_cause"].items():
        assert one(f'ett_fleet_lost_gpu_seconds_by_cause_total{{cause="{cause}"}}') == approx(lost_h * 3600, abs=1e-3)
        assert one(f'ett_fleet_interruptions_by_cause_total{{cause="{cause}"}}') == fleet["nof_by_cause"][cause]
    jobs = {j["job_id"]: j for j in doc["jobs"]}
    assert set(jobs) == {"hung", "slow"} and fleet["nof_by_cause"]["preemption"] == 1  # the one SIGTERM sent
    assert jobs["slow"]["nof_by_cause"]["preemption"] == 1 and jobs["hung"]["nof"] == 0
    assert jobs["slow"]["lost_s_by_cause"]["preemption"] > 0  # the restart and the replayed steps
    for job_id, j in jobs.items():
        lab = f'job_id="{job_id}",model="hang-demo"'
        assert one(f"ett_job_wall_seconds{{{lab}}}") == approx(j["wall_s"], abs=1e-3)
        assert one(f"ett_job_effective_training_ratio{{{lab}}}") == approx(j["ett_pct"] / 100, rel=1e-9)
        assert one(f'ett_job_interruptions{{{lab},end_reason="preemption"}}') == j["nof_preemption"]
        assert one(f"ett_job_progress_age_seconds{{{lab}}}") == approx(live[job_id]["progress_age_s"], abs=1e-3)
        assert one(f"max(ett_job_hung{{{lab}}})") == int(live[job_id]["state"] == "hung")
    assert live["hung"]["state"] == "hung" and live["slow"]["state"] != "hung"
