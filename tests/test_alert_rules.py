"""The shipped alerting rules: ``tools/monitoring/rules/ett.rules.yml`` is what
``ett export prometheus-rules`` makes with its defaults, ``promtool check rules`` accepts it, and every rule is
unit-tested with the real ``promtool test rules``: series in, alert expected or not, hand-written.

``promtool`` comes from Debian's ``prometheus`` package (``.ci/run`` installs it); without it these tests skip,
saying so.  The hung-job rule is tested on input series of the names the live hang detection (``hangs`` branch)
exports; nothing here computes them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ettcore.cli import main
from ettcore.config import PROJECT_ROOT as ROOT
from ettcore.exporters import alert_rules

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian package 'prometheus'; .ci/run installs it)"
)
SHIPPED = ROOT / "tools" / "monitoring" / "rules" / "ett.rules.yml"
HOSTILE = 'a"b}{\\c\nd,x="y"'  # a job id that reads like the end of a label set, with a backslash and a newline


def alert(name: str, labels: dict, summary: str, section: str, severity: str = "warning") -> dict:
    return {
        "exp_labels": {"severity": severity, "source": "ettcore", **labels},
        "exp_annotations": {"summary": summary, "runbook_url": f"docs/runbook.md#{section}"},
    }


def promql_labels(**labels: str) -> str:
    """A series selector as promtool's series notation reads it (PromQL string escapes)."""
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in labels.items()) + "}"


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def series(name: str, values: str, **labels: str) -> dict:
    return {"series": name + promql_labels(**labels), "values": values}


def storm_case(label: str, value: str, *quiet: dict) -> dict:
    """The storms of ``label=value`` take in one more interruption every 10 minutes, 6 in the last hour:
    EttRestartStorm alerts at 120 minutes, naming ``label`` and ``value``; ``quiet``: more input series."""
    return {
        "interval": "10m",
        "input_series": [series("ett_fleet_restart_storm_interruptions_total", "0+1x20", **{label: value}), *quiet],
        "alert_rule_test": [
            {
                "eval_time": "120m",
                "alertname": "EttRestartStorm",
                "exp_alerts": [
                    alert(
                        "EttRestartStorm",
                        {label: value},
                        f"6 interruptions in a restart storm in {label} {value} in the last 1h (an alert from 5, of "
                        "any cause)",
                        "restart-storm",
                    )
                ],
            }
        ],
    }


TESTS = [
    {  # a hung job alerts after `for` (5m), naming where to look; the slow job does not
        "interval": "1m",
        "input_series": [
            series("ett_job_hung", "1x15", job_id="h", model="m", first_stopped_rank="3", first_stopped_node="n7"),
            series("ett_job_hung", "0x15", job_id="s", model="m", first_stopped_rank="", first_stopped_node=""),
            series("ett_job_slow", "1x15", job_id="s", model="m"),
            series("ett_job_owner", "1x15", job_id="h", model="m", owner="ads"),
            series("ett_job_owner", "1x15", job_id="s", model="m", owner="feed"),
        ],
        "alert_rule_test": [
            {"eval_time": "4m", "alertname": "EttJobHung", "exp_alerts": []},
            {
                "eval_time": "10m",
                "alertname": "EttJobHung",
                "exp_alerts": [
                    alert(
                        "EttJobHung",
                        {
                            "job_id": "h",
                            "model": "m",
                            "owner": "ads",
                            "first_stopped_rank": "3",
                            "first_stopped_node": "n7",
                        },
                        "job h (model m, owner ads) is hung: no progress past its stall threshold; rank 3 on node n7 "
                        "stopped first",
                        "job-hung",
                        "critical",
                    )
                ],
            },
        ],
    },
    {  # fleet at 50% over the range (300 of 600 GPU-seconds a minute) alerts, naming the owner losing most
        "interval": "1m",
        "input_series": [
            series("ett_fleet_wall_gpu_seconds_total", "0+600x30"),
            series("ett_fleet_productive_gpu_seconds_total", "0+300x30"),
            series("ett_fleet_lost_gpu_seconds_total", "0+200x30", component="pt2_compile", owner="Compiler"),
            series("ett_fleet_lost_gpu_seconds_total", "0+100x30", component="scheduling", owner="Scheduler"),
            # model a at 50%, model b at 95%: only a alerts
            series("ett_model_wall_gpu_seconds_total", "0+400x30", model="a"),
            series("ett_model_productive_gpu_seconds_total", "0+200x30", model="a"),
            series("ett_model_wall_gpu_seconds_total", "0+200x30", model="b"),
            series("ett_model_productive_gpu_seconds_total", "0+190x30", model="b"),
        ],
        "alert_rule_test": [
            {
                "eval_time": "20m",
                "alertname": "EttFleetEttBelow",
                "exp_alerts": [
                    alert(
                        "EttFleetEttBelow",
                        {},
                        "fleet ETT% over the last 6h is 50%, below 80%; the owner losing most: Compiler",
                        "ett-below",
                    )
                ],
            },
            {
                "eval_time": "20m",
                "alertname": "EttModelEttBelow",
                "exp_alerts": [
                    alert(
                        "EttModelEttBelow",
                        {"model": "a"},
                        "ETT% of model a over the last 6h is 50%, below 80%",
                        "ett-below",
                    )
                ],
            },
        ],
    },
    {  # a healthy fleet (90%) stays silent
        "interval": "1m",
        "input_series": [
            series("ett_fleet_wall_gpu_seconds_total", "0+600x30"),
            series("ett_fleet_productive_gpu_seconds_total", "0+540x30"),
        ],
        "alert_rule_test": [{"eval_time": "20m", "alertname": "EttFleetEttBelow", "exp_alerts": []}],
    },
    {  # 60 node failures in the last hour (one a minute) is a burst; 4 preemptions are not, nor end reasons alone
        "interval": "1m",
        "input_series": [
            series("ett_fleet_interruptions_by_cause_total", "0+1x100", cause="node_failure"),
            series("ett_fleet_interruptions_by_cause_total", "0x60 1+1x3 4x36", cause="preemption"),
            series("ett_fleet_interruptions_total", "0+1x100", end_reason="failure"),
        ],
        "alert_rule_test": [
            {
                "eval_time": "90m",
                "alertname": "EttInterruptionBurst",
                "exp_alerts": [
                    alert(
                        "EttInterruptionBurst",
                        {"cause": "node_failure"},
                        "60 interruptions by node_failure in the last hour (a burst is 5 or more)",
                        "interruption-burst",
                    )
                ],
            }
        ],
    },
    {  # a job in a crash loop of 2 restarts alerts after `for` (5m); one restart, or a job out of its loop, does not
        "interval": "1m",
        "input_series": [
            series("ett_job_crash_loop_restarts", "0 0 1 2x30", job_id="poison", model="m"),
            series("ett_job_owner", "1x32", job_id="poison", model="m", owner="ads"),
            series("ett_job_crash_loop_restarts", "1x32", job_id="once", model="m"),
            series("ett_job_owner", "1x32", job_id="once", model="m", owner="feed"),
            series("ett_job_crash_loop_restarts", "0 1 2 0x29", job_id="recovered", model="m"),
            series("ett_job_owner", "1x32", job_id="recovered", model="m", owner="feed"),
        ],
        "alert_rule_test": [
            {"eval_time": "6m", "alertname": "EttCrashLoop", "exp_alerts": []},  # at 2 since 3m: pending
            {
                "eval_time": "20m",
                "alertname": "EttCrashLoop",
                "exp_alerts": [
                    alert(
                        "EttCrashLoop",
                        {"job_id": "poison", "model": "m", "owner": "ads"},
                        "job poison (model m, owner ads) is in a crash loop: 2 restarts crashed again from the same "
                        "checkpoint, no progress saved (an alert from 2)",
                        "crash-loop",
                    )
                ],
            },
        ],
    },
    # storms per partition (ett export prometheus --storm-by partition): low alerts, naming it; high has none
    storm_case("partition", "low", series("ett_fleet_restart_storm_interruptions_total", "0x20", partition="high")),
    {  # a fleet-wide export (no --storm-by): 2 an hour an interruption joins a storm, then 12 an hour
        "interval": "10m",
        "input_series": [series("ett_fleet_restart_storm_interruptions_total", "0 0 0 1 1 1 2 2 2 4+2x12")],
        "alert_rule_test": [
            {"eval_time": "60m", "alertname": "EttRestartStorm", "exp_alerts": []},
            {
                "eval_time": "200m",
                "alertname": "EttRestartStorm",
                "exp_alerts": [
                    alert(
                        "EttRestartStorm",
                        {},
                        "12 interruptions in a restart storm across the fleet in the last 1h (an alert from 5, of any "
                        "cause)",
                        "restart-storm",
                    )
                ],
            },
        ],
    },
    {  # 4 interruptions join a storm in partition low, then none: no alert while they are in the window, nor after;
        # the fleet's interruptions (ett_fleet_interruptions_total, 18 an hour) outside storms do not alert
        "interval": "10m",
        "input_series": [
            series("ett_fleet_restart_storm_interruptions_total", "0 1 2 3 4x17", partition="low"),
            series("ett_fleet_interruptions_total", "0+3x20", end_reason="failure"),
        ],
        "alert_rule_test": [
            {"eval_time": "50m", "alertname": "EttRestartStorm", "exp_alerts": []},
            {"eval_time": "180m", "alertname": "EttRestartStorm", "exp_alerts": []},
        ],
    },
    {  # pending and recovering too long, the one with a hostile id; a job that trains stays silent
        "interval": "1m",
        "input_series": [
            series("ett_job_pending_seconds", "0+60x50", job_id=HOSTILE, model="m"),
            series("ett_job_owner", "1x50", job_id=HOSTILE, model="m", owner='o"\\'),
            series("ett_job_pending_seconds", "0x50", job_id="ok", model="m"),
            series("ett_job_owner", "1x50", job_id="ok", model="m", owner="x"),
            series("ett_job_recovering_seconds", "0+60x50", job_id="r", model="m2"),
            series("ett_job_owner", "1x50", job_id="r", model="m2", owner="feed"),
        ],
        "alert_rule_test": [
            {"eval_time": "33m", "alertname": "EttJobPendingTooLong", "exp_alerts": []},  # over 30m since 31m only
            {
                "eval_time": "40m",
                "alertname": "EttJobPendingTooLong",
                "exp_alerts": [
                    alert(
                        "EttJobPendingTooLong",
                        {"job_id": HOSTILE, "model": "m", "owner": 'o"\\'},
                        f'job {HOSTILE} (model m, owner o"\\) has been starting for 40m 0s without training '
                        "(Time to Start over 30m)",
                        "pending-too-long",
                    )
                ],
            },
            {
                "eval_time": "40m",
                "alertname": "EttJobRecoveryTooLong",
                "exp_alerts": [
                    alert(
                        "EttJobRecoveryTooLong",
                        {"job_id": "r", "model": "m2", "owner": "feed"},
                        "job r (model m2, owner feed) has been recovering for 40m 0s (Time to Recover over 30m)",
                        "recovery-too-long",
                    )
                ],
            },
        ],
    },
    {  # the refresher died at 0 (mtime 0): stale after 15m, alert after 5m more; the pending alert still fires
        "interval": "1m",
        "input_series": [
            series("node_textfile_mtime_seconds", "0x40", file="/var/lib/node/textfile/ett.prom"),
            series("node_textfile_mtime_seconds", "0+60x40", file="/var/lib/node/textfile/other.prom"),
            series("ett_job_pending_seconds", "2400x40", job_id="p", model="m"),
            series("ett_job_owner", "1x40", job_id="p", model="m", owner="ads"),
        ],
        "alert_rule_test": [
            {"eval_time": "18m", "alertname": "EttExportStale", "exp_alerts": []},
            {
                "eval_time": "25m",
                "alertname": "EttExportStale",
                "exp_alerts": [
                    alert(
                        "EttExportStale",
                        {"file": "/var/lib/node/textfile/ett.prom"},
                        "the ETT export ett.prom was last written 25m 0s ago (or is missing): its refresher is dead; "
                        "the other ETT alerts read its last values",
                        "export-stale",
                    )
                ],
            },
            {
                "eval_time": "25m",
                "alertname": "EttJobPendingTooLong",
                "exp_alerts": [
                    alert(
                        "EttJobPendingTooLong",
                        {"job_id": "p", "model": "m", "owner": "ads"},
                        "job p (model m, owner ads) has been starting for 40m 0s without training "
                        "(Time to Start over 30m)",
                        "pending-too-long",
                    )
                ],
            },
        ],
    },
    {  # slow time growing 30 s a minute passes 1h at 121m and alerts from 126m; 10 s a minute stays silent
        "interval": "1m",
        "input_series": [
            series("ett_job_slow_seconds", "0+30x150", job_id="s", model="m"),
            series("ett_job_owner", "1x150", job_id="s", model="m", owner="ads"),
            series("ett_job_slow_seconds", "0+10x150", job_id="ok", model="m"),
            series("ett_job_owner", "1x150", job_id="ok", model="m", owner="feed"),
        ],
        "alert_rule_test": [
            {"eval_time": "124m", "alertname": "EttJobSlowTooLong", "exp_alerts": []},
            {
                "eval_time": "130m",
                "alertname": "EttJobSlowTooLong",
                "exp_alerts": [
                    alert(
                        "EttJobSlowTooLong",
                        {"job_id": "s", "model": "m", "owner": "ads"},
                        "job s (model m, owner ads) has lost 1h 5m 0s to steps slower than its ideal pace "
                        "(slow time over 1h)",
                        "job-slow",
                    )
                ],
            },
        ],
    },
    {  # no export file at all (never written, or deleted) is stale too
        "interval": "1m",
        "input_series": [series("node_textfile_mtime_seconds", "0+60x40", file="/t/other.prom")],
        "alert_rule_test": [
            {
                "eval_time": "10m",
                "alertname": "EttExportStale",
                "exp_alerts": [
                    alert(
                        "EttExportStale",
                        {},
                        "the ETT export ett.prom was last written 15m 1s ago (or is missing): its refresher is dead; "
                        "the other ETT alerts read its last values",
                        "export-stale",
                    )
                ],
            }
        ],
    },
]


def promtool_test(tmp_path: Path, rules_file: Path, tests: list[dict]) -> subprocess.CompletedProcess:
    doc = {"rule_files": [str(rules_file)], "evaluation_interval": "1m", "tests": tests}
    f = tmp_path / "ett.rules.test.yml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return subprocess.run([PROMTOOL, "test", "rules", str(f)], capture_output=True, text=True, timeout=120)


def test_shipped_rules_are_the_defaults(capsys):
    assert SHIPPED.read_text(encoding="utf-8") == alert_rules.rules_yaml()
    assert main(["export", "prometheus-rules"]) == 0
    assert capsys.readouterr().out == SHIPPED.read_text(encoding="utf-8")
    names = [r["alert"] for r in yaml.safe_load(SHIPPED.read_text())["groups"][0]["rules"]]
    runbook = (ROOT / "docs" / "runbook.md").read_text(encoding="utf-8")
    for r in yaml.safe_load(SHIPPED.read_text())["groups"][0]["rules"]:
        section = r["annotations"]["runbook_url"].split("#", 1)[1]
        assert f'<a id="{section}"></a>' in runbook, section  # every link has its section
    assert set(names) == set(alert_rules.RULE_NAMES) and len(names) == 10


@needs_promtool
def test_promtool_check_rules_passes():
    res = subprocess.run([PROMTOOL, "check", "rules", str(SHIPPED)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "SUCCESS: 10 rules found" in res.stdout, res


@needs_promtool
def test_every_rule_fires_or_stays_silent_as_expected(tmp_path):
    res = promtool_test(tmp_path, SHIPPED, TESTS)
    print(res.stdout)
    assert res.returncode == 0 and "SUCCESS" in res.stdout, res.stdout + res.stderr
    tested = {t["alertname"] for group in TESTS for t in group["alert_rule_test"]}
    assert tested == set(alert_rules.RULE_NAMES)  # each rule has its test


@needs_promtool
def test_the_unit_tests_can_fail(tmp_path):
    """Not vacuous: a healthy fleet expected to alert, and the hung job expected silent, both fail promtool."""
    wrong = [dict(TESTS[2], alert_rule_test=[dict(TESTS[1]["alert_rule_test"][0])]), dict(TESTS[0])]
    wrong[1] = dict(wrong[1], alert_rule_test=[{"eval_time": "10m", "alertname": "EttJobHung", "exp_alerts": []}])
    for t in wrong:
        assert promtool_test(tmp_path, SHIPPED, [t]).returncode != 0


@needs_promtool
def test_thresholds_are_parameters(tmp_path, capsys):
    out = tmp_path / "r.yml"
    assert main(["export", "prometheus-rules", "--ett-below", "0.4", "--for", "0s", "--out", str(out)]) == 0
    # at 0.4 the 50% fleet of TESTS[1] no longer alerts
    t = dict(TESTS[1], alert_rule_test=[{"eval_time": "20m", "alertname": "EttFleetEttBelow", "exp_alerts": []}])
    res = promtool_test(tmp_path, out, [t])
    assert res.returncode == 0, res.stdout + res.stderr
    # --storm-by qos: storms by the export's qos label
    assert main(["export", "prometheus-rules", "--storm-by", "qos", "--out", str(out)]) == 0
    res = promtool_test(tmp_path, out, [storm_case("qos", "q1")])
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--ett-below", "1.2"], "--ett-below"),
        (["--ett-below", "0"], "--ett-below"),
        (["--ett-below", "high"], "--ett-below"),
        (["--ett-range", "6 hours"], "--ett-range"),
        (["--pending-over=-5m"], "--pending-over"),
        (["--interruptions-per-hour", "nan"], "--interruptions-per-hour"),
        (["--crash-loop-restarts", "0"], "--crash-loop-restarts"),
        (["--storm-window", "90 minutes"], "--storm-window"),
        (["--storm-by", "par-tition"], "--storm-by"),
        (["--storm-by", "__name__"], "--storm-by"),
        (["--textfile", 'x"}.prom'], "--textfile"),
        (["--runbook", 'http://x/"{{'], "--runbook"),
    ],
)
def test_out_of_range_threshold_is_one_line_exit_2(capsys, argv, flag):
    assert main(["export", "prometheus-rules", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"ett: {flag}"), err
