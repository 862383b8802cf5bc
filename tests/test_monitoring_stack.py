"""The real monitoring stack: Debian's Prometheus, node_exporter and Alertmanager started by
``tools/monitoring/start.sh`` (free ports, read back from its ``ports`` file), fed by ``ett export prometheus --out``
refreshed into the textfile folder, read back through Prometheus' HTTP API, with an alert routed by Alertmanager to a
webhook receiver of the test's own on 127.0.0.1.  No mock: every part is the real program.

The trace is hand-written and replayed: each refresh exports it at an as-of time one trace-minute later (one real
second apart), so an hour of a job runs in a minute.  Job ``r`` (4 GPUs) trains for 20 trace-minutes, fails, then
waits in the queue (re-queue: recovery, no productive time).  With the rules made by
``ett export prometheus-rules --ett-range 30s --for 0s``, the fleet's ETT ratio over the last 30 s falls from 1 to
below 0.8 some seconds after the failure, and the EttFleetEttBelow alert must reach the webhook within
``ALERT_BOUND_S``: what sets it is the range (the ratio crosses 0.8 once a fifth of the range is bad, 6 s), one
scrape (2 s) and one evaluation (2 s) interval, Alertmanager's group_wait (1 s), and slack for a loaded 2-core
machine.  A second test exports the SYNTHETIC crash-loop example once and waits for EttCrashLoop at the webhook.
The measured delays are printed (``pytest -s``) and stated in docs/guides/alerts-and-money.md.

Skips only where a package is absent (saying which); a stack that is installed and fails to start is a failure.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from monitoring import Webhook, needs_stack, query, stack  # tests/monitoring.py

from ettcore.cli import main

pytestmark = [needs_stack, pytest.mark.xdist_group("monitoring")]
ALERT_BOUND_S = 25.0
T0 = 1767571200  # 2026-01-05T00:00:00Z

TRACE = {
    "jobs.csv": "job_id,model,gpus,team\nr,ranker,4,ads\n",
    "attempts.csv": "job_id,attempt,start,end,end_reason\n"
    "r,0,2026-01-05T00:00:00Z,2026-01-05T00:20:00Z,failure\n"
    "r,1,2026-01-05T00:20:00Z,,running\n",
    "spans.csv": "job_id,attempt,phase,stage,start,end,cursor_start,cursor_end\n"
    "r,0,train,,2026-01-05T00:00:00Z,2026-01-05T00:20:00Z,0,1200\n"
    "r,1,scheduling,queue,2026-01-05T00:20:00Z,2026-01-05T05:00:00Z,,\n",
}


@pytest.fixture()
def replayed(tmp_path):
    hook = Webhook()
    rules = tmp_path / "rules.yml"
    assert main(["export", "prometheus-rules", "--ett-range", "30s", "--for", "0s", "--out", str(rules)]) == 0
    state = tmp_path / "mon"
    (state / "textfile").mkdir(parents=True)
    trace = tmp_path / "trace"
    trace.mkdir()
    for name, text in TRACE.items():
        (trace / name).write_text(text, encoding="utf-8")
    export(trace, state / "textfile" / "ett.prom", 0)  # the first export is there before Prometheus looks
    with stack(state, rules, hook) as ports:
        yield {"ports": ports, "hook": hook, "trace": trace, "state": state, "start_s": ports["start_s"]}


def export(trace: Path, out: Path, minute: int) -> None:
    as_of = str(T0 + 60 * minute)
    assert main(["export", "prometheus", str(trace), "--as-of", as_of, "--out", str(out)]) == 0


def summarize_fleet(trace: Path, minute: int, capsys) -> dict:
    capsys.readouterr()
    assert main(["summarize", str(trace), "--as-of", str(T0 + 60 * minute), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["fleet"]


def test_stack_series_and_the_ett_alert_through_alertmanager(replayed, capsys):
    stack = replayed
    prom = int(stack["ports"]["PROMETHEUS_PORT"])
    out = Path(stack["ports"]["TEXTFILE_DIR"]) / "ett.prom"
    hook: Webhook = stack["hook"]
    # the rules are loaded, the node_exporter target is up
    deadline = time.monotonic() + 30
    while not query(prom, 'up{job="node"} == 1') and time.monotonic() < deadline:
        time.sleep(0.5)
    assert query(prom, 'up{job="node"} == 1')
    # refresh every second, one trace-minute a refresh; the job fails at minute 20
    failed_at = None
    first_seen = None
    t_write = time.monotonic()
    for minute in range(1, 90):
        export(stack["trace"], out, minute)
        now = time.monotonic()
        if minute == 5:  # a written export reaches Prometheus within a scrape or two
            want = 4 * 5 * 60
            t_write = now
            while time.monotonic() - t_write < 15:
                got = query(prom, "ett_fleet_wall_gpu_seconds")
                if got and float(got[0]["value"][1]) == want:
                    first_seen = time.monotonic() - t_write
                    break
                time.sleep(0.2)
        if minute == 21:
            failed_at = now  # the first export with time after the failure
        if failed_at and hook.firing("EttFleetEttBelow"):
            break
        if minute < 21:
            assert not hook.firing("EttFleetEttBelow"), "the ETT alert fired while the job trained"
        time.sleep(max(0.0, 1.0 - (time.monotonic() - now)))
    assert first_seen is not None, "the export's value never reached Prometheus"
    fired = hook.firing("EttFleetEttBelow")
    assert fired, f"no EttFleetEttBelow at the webhook ({len(hook.got)} posts)"
    delay = fired[0][0] - failed_at
    with capsys.disabled():
        print(
            f"\n[monitoring] stack started in {stack['start_s']:.1f} s; export -> Prometheus: {first_seen:.1f} s; "
            f"failure -> EttFleetEttBelow at the webhook: {delay:.1f} s (bound {ALERT_BOUND_S:g} s)"
        )
    assert delay <= ALERT_BOUND_S
    alert = fired[0][1]
    assert alert["annotations"]["runbook_url"].endswith("#ett-below")
    assert "the owner losing most: Scheduler" in alert["annotations"]["summary"]  # the re-queue loses the most
    # the series Prometheus holds are the numbers ett summarize gives for the same as-of time
    export(stack["trace"], out, minute)
    time.sleep(5)  # two scrapes
    fleet = summarize_fleet(stack["trace"], minute, capsys)
    wall = float(query(prom, "ett_fleet_wall_gpu_seconds")[0]["value"][1])
    ratio = float(query(prom, "ett_fleet_effective_training_ratio")[0]["value"][1])
    assert wall == pytest.approx(fleet["wall_gpu_h"] * 3600)
    assert ratio == pytest.approx(fleet["ett_pct"] / 100)
    assert wall == 4 * 60 * minute  # by hand: 4 GPUs, every second since 00:00 is wall time
    owner = query(prom, "ett_job_owner")
    assert [(s["metric"]["job_id"], s["metric"]["owner"]) for s in owner] == [("r", "ads")]


CRASH_LOOP_BOUND_S = 30.0  # first export -> webhook: start-up scrapes, one evaluation, group_wait, loaded-machine slack


def test_a_crash_loop_reaches_alertmanager(tmp_path, capsys):
    """The crash-loop worked example of docs/metric.md (SYNTHETIC, tests/test_crash_loops.py) exported at 50 minutes,
    while job ``poison`` is in its loop (2 restarts from cursor 100, its retry running): EttCrashLoop (rules made with
    ``--for 0s``) reaches the webhook for poison with its owner, and for no other job; Prometheus holds the loop's
    2 restarts and the fleet's 9600 GPU-seconds of crash-loop restarts (8 GPUs x 2 x 10 minutes, by hand)."""
    from test_cause_properties import _write
    from test_crash_loops import MIN, B, worked_example

    hook = Webhook()
    rules = tmp_path / "rules.yml"
    assert main(["export", "prometheus-rules", "--for", "0s", "--out", str(rules)]) == 0
    state = tmp_path / "mon"
    (state / "textfile").mkdir(parents=True)
    trace = _write(worked_example(), tmp_path / "trace")
    as_of = str((B + 50 * MIN) / 1000)
    assert (
        main(["export", "prometheus", str(trace), "--as-of", as_of, "--out", str(state / "textfile" / "ett.prom")]) == 0
    )
    written = time.monotonic()
    with stack(state, rules, hook) as ports:
        prom = int(ports["PROMETHEUS_PORT"])
        deadline = time.monotonic() + CRASH_LOOP_BOUND_S + ports["start_s"]
        while not hook.firing("EttCrashLoop") and time.monotonic() < deadline:
            time.sleep(0.3)
        fired = hook.firing("EttCrashLoop")
        assert fired, f"no EttCrashLoop at the webhook ({len(hook.got)} posts)"
        with capsys.disabled():
            print(
                f"\n[monitoring] export -> EttCrashLoop at the webhook: {fired[0][0] - written:.1f} s (with start-up)"
            )
        assert {a["labels"]["job_id"] for _, a in fired} == {"poison"}
        alert = fired[0][1]
        assert (alert["labels"]["model"], alert["labels"]["owner"]) == ("m", "ads")
        assert alert["annotations"]["runbook_url"].endswith("#crash-loop")
        assert "is in a crash loop: 2 restarts" in alert["annotations"]["summary"]
        held = {s["metric"]["job_id"]: float(s["value"][1]) for s in query(prom, "ett_job_crash_loop_restarts")}
        assert held == {"poison": 2.0, "advancing": 0.0, "preempted": 0.0}
        assert float(query(prom, "ett_fleet_crash_loop_gpu_seconds_total")[0]["value"][1]) == 9600.0
