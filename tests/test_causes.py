"""The cause vocabulary, the cause mapping file's rules and bad inputs, the trace's cause column and its check, and
the derived-from-end_reason default (expected values written by hand)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ettcore import metric
from ettcore.causes import CAUSES, GROUP_OF, Signals, derived_cause, load_cause_map
from ettcore.errors import InputError
from ettcore.trace import load_trace

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z


def test_vocabulary_and_derived_default():
    assert CAUSES == (
        "preemption",
        "user_error",
        "time_limit",
        "node_failure",
        "infrastructure",
        "hardware",
        "unknown",
    )
    assert GROUP_OF["node_failure"] == GROUP_OF["infrastructure"] == "system"
    assert derived_cause("preemption") == "preemption"
    assert derived_cause("failure") == "unknown"
    assert derived_cause("cancelled") is None and derived_cause("completed") is None


@pytest.mark.parametrize(
    "signals, cause",
    [
        (Signals("slurm", "preemption", state="PREEMPTED"), "preemption"),
        (Signals("slurm", "failure", state="NODE_FAIL", exit_code=0, signal=0), "node_failure"),
        (Signals("slurm", "failure", state="BOOT_FAIL"), "infrastructure"),
        (Signals("slurm", "failure", state="TIMEOUT", exit_code=0, signal=15), "time_limit"),
        (Signals("slurm", "failure", state="DEADLINE"), "time_limit"),
        (Signals("slurm", "failure", state="OUT_OF_MEMORY", exit_code=0, signal=125), "user_error"),
        (Signals("slurm", "failure", state="FAILED", exit_code=1, signal=0), "user_error"),
        (Signals("slurm", "failure", state="FAILED", exit_code=0, signal=9), "unknown"),
        (Signals("slurm", "failure", state="FAILED", exit_code=1, signal=0, reason="NodeFail"), "node_failure"),
        (Signals("slurm", "failure", state="FAILED", reason="launch failed requeued held"), "infrastructure"),
        (Signals("slurm", "failure", state="REQUEUED", exit_code=3, signal=0), "user_error"),
        (Signals("recorder", "failure", exception="RuntimeError: loss is nan"), "user_error"),
        (Signals("recorder", "failure", exception="torch.distributed.DistBackendError: NCCL error"), "infrastructure"),
        (Signals("recorder", "failure", exception="RuntimeError: CUDA error: uncorrectable ECC error"), "hardware"),
        (Signals("recorder", "failure", exception="RuntimeError: CUDA error: an illegal instruction"), "hardware"),
        (Signals("recorder", "preemption", signal=15), "preemption"),
        (Signals("recorder", "failure"), "unknown"),
        (Signals("goodput", "failure"), "unknown"),
    ],
)
def test_default_rules(signals, cause):
    assert load_cause_map().classify(signals) == cause


def test_not_an_interruption_has_no_cause_and_unknown_is_counted():
    m = load_cause_map()
    assert m.classify(Signals("slurm", "cancelled", state="CANCELLED")) is None
    assert m.classify(Signals("slurm", "completed", state="COMPLETED")) is None
    m.classify(Signals("mlperf", "failure"))
    m.classify(Signals("mlperf", "failure"))
    assert m.counts == {"unknown": 2}


def test_a_user_rule_comes_first(tmp_path):
    f = tmp_path / "causes.yaml"
    f.write_text("rules:\n  - {source: slurm, signal: SIGKILL, cause: hardware}\n")
    m = load_cause_map(f)
    assert m.classify(Signals("slurm", "failure", state="FAILED", exit_code=0, signal=9)) == "hardware"
    assert m.classify(Signals("slurm", "failure", state="NODE_FAIL")) == "node_failure"  # the shipped rules follow


@pytest.mark.parametrize(
    "text, row, field, words",
    [
        ("rules:\n  - {state: FAILED, cause: cosmic_rays}\n", 1, "cause", "unknown cause 'cosmic_rays'"),
        (
            "rules:\n  - {state: FAILED, cause: unknown}\n  - {reason: '(unclosed', cause: hardware}\n",
            2,
            "reason",
            "malformed regular expression",
        ),
        ("rules:\n  - {exception: '[a-', cause: hardware}\n", 1, "exception", "malformed regular expression"),
        ("rules:\n  - {colour: red, cause: hardware}\n", 1, "colour", "unknown field"),
        ("rules:\n  - {signal: SIGNOPE, cause: hardware}\n", 1, "signal", "signal"),
        ("rules:\n  - {exit_code: -1, cause: hardware}\n", 1, "exit_code", "exit status"),
        ("rules:\n  - {source: pbs, cause: hardware}\n", 1, "source", "unknown source"),
        ("rules:\n  - {end_reason: completed, cause: hardware}\n", 1, "end_reason", "failure or preemption"),
        ("rules: [1]\n", 1, None, "a rule is a mapping"),
        ("colours: []\n", None, None, "one key, 'rules'"),
    ],
)
def test_bad_mapping_file(tmp_path, text, row, field, words):
    f = tmp_path / "m.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as e:
        load_cause_map(f)
    p = e.value.problems[0]
    assert p.file == str(f) and p.row == row and p.field == field and words in p.message


def _trace(tmp_path: Path, rows: str) -> Path:
    d = tmp_path / "t"
    d.mkdir()
    (d / "attempts.csv").write_text("job_id,attempt,start,end,end_reason,cause\n" + rows)
    (d / "spans.csv").write_text(
        "job_id,attempt,phase,start,end,cursor_start,cursor_end\n"
        f"a,0,train,{T0 + 10},{T0 + 90},0,80\n"
        f"a,1,train,{T0 + 120},{T0 + 190},50,120\n"
        f"a,2,train,{T0 + 220},{T0 + 290},100,170\n"
    )
    return d


def test_cause_column_and_derived_default_by_hand(tmp_path):
    # attempt 0 fails (node_failure), attempt 1 is preempted (no cause: preemption), attempt 2 completes.
    # By hand: productive 10-90, replay 120-150 (cursor 50..80 done), productive 150-190, replay 220-240, productive
    # 240-290.  Recovery 90-150 (60 s, holds the failure at 100) -> node_failure; 190-240 (50 s, holds the
    # preemption at 200) -> preemption.
    d = _trace(
        tmp_path,
        f"a,0,{T0},{T0 + 100},failure,node_failure\na,1,{T0 + 110},{T0 + 200},preemption,\n"
        f"a,2,{T0 + 210},{T0 + 300},completed,\n",
    )
    got = {r["cause"]: (r["nof"], r["lost_s"]) for r in metric.job_causes(load_trace(d)).iter_rows(named=True)}
    assert got == {"node_failure": (1, 60.0), "preemption": (1, 50.0)}


def test_cause_check_names_file_row_field(tmp_path):
    d = _trace(
        tmp_path,
        f"a,0,{T0},{T0 + 100},failure,gremlins\na,1,{T0 + 110},{T0 + 200},preemption,\n"
        f"a,2,{T0 + 210},{T0 + 300},completed,hardware\n",
    )
    with pytest.raises(InputError) as e:
        load_trace(d)
    found = sorted((Path(p.file).name, p.row, p.field, p.message.split(" (")[0]) for p in e.value.problems)
    assert found == [
        ("attempts.csv", 1, "cause", "unknown cause gremlins"),
        ("attempts.csv", 3, "cause", "a cause is given only for an interruption"),
    ]
    r = subprocess.run([sys.executable, "-m", "ettcore.cli", "validate", str(d)], capture_output=True, text=True)
    assert r.returncode != 0 and "gremlins" in r.stdout + r.stderr


def test_summarize_json_and_text_by_cause(tmp_path):
    d = _trace(
        tmp_path,
        f"a,0,{T0},{T0 + 100},failure,node_failure\na,1,{T0 + 110},{T0 + 200},preemption,\n"
        f"a,2,{T0 + 210},{T0 + 300},completed,\n",
    )
    import json

    r = subprocess.run(
        [sys.executable, "-m", "ettcore.cli", "summarize", str(d), "--json"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    job = doc["jobs"][0]
    # by hand (test_cause_column_and_derived_default_by_hand): 60 s node_failure, 50 s preemption; 1 GPU
    assert job["nof_by_cause"] == {c: {"node_failure": 1, "preemption": 1}.get(c, 0) for c in CAUSES}
    assert job["lost_s_by_cause"] == {c: {"node_failure": 60.0, "preemption": 50.0}.get(c, 0.0) for c in CAUSES}
    assert job["cancelled"] == 0 and job["nof"] == 2
    assert doc["fleet"]["lost_gpu_h_by_cause"]["node_failure"] == pytest.approx(60 / 3600)
    assert doc["fleet"]["nof_by_cause"]["unknown"] == 0
    text = subprocess.run([sys.executable, "-m", "ettcore.cli", "summarize", str(d)], capture_output=True, text=True)
    line = next(x for x in text.stdout.splitlines() if x.strip().startswith("node_failure"))
    # cause, its category (a cause of the vocabulary: its group's label, "system (node, cluster)"), NoF, lost s, GPU-h
    assert line.split() == ["node_failure", "system", "(node,", "cluster)", "1", "60.00", "0.02"]


def test_prometheus_by_cause(tmp_path):
    d = _trace(
        tmp_path,
        f"a,0,{T0},{T0 + 100},failure,node_failure\na,1,{T0 + 110},{T0 + 200},preemption,\n"
        f"a,2,{T0 + 210},{T0 + 300},completed,\n",
    )
    r = subprocess.run(
        [sys.executable, "-m", "ettcore.cli", "export", "prometheus", str(d)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    lines = set(r.stdout.splitlines())
    assert 'ett_fleet_interruptions_by_cause{cause="node_failure"} 1' in lines
    assert 'ett_fleet_interruptions_by_cause{cause="unknown"} 0' in lines
    assert 'ett_fleet_lost_gpu_seconds_by_cause{cause="node_failure"} 60' in lines  # 1 GPU x 60 s, by hand (ms form)
    assert 'ett_model_lost_gpu_seconds_by_cause{model="a",cause="preemption"} 50' in lines


SACCT_HEAD = "JobID|JobIDRaw|JobName|State|ExitCode|Reason|Submit|Start|End|AllocTRES\n"


@pytest.mark.parametrize(
    "state, exit_code, reason, end_reason, cause",
    [
        ("PREEMPTED", "0:15", "None", "preemption", "preemption"),
        ("NODE_FAIL", "0:0", "NodeFail", "failure", "node_failure"),
        ("TIMEOUT", "0:15", "TimeLimit", "failure", "time_limit"),
        ("FAILED", "1:0", "NonZeroExitCode", "failure", "user_error"),
        ("FAILED", "0:9", "None", "failure", "unknown"),
        ("FAILED", "1:0", "NodeFail", "failure", "node_failure"),
        ("OUT_OF_MEMORY", "0:125", "OutOfMemory", "failure", "user_error"),
        ("DEADLINE", "0:0", "DeadLine", "failure", "time_limit"),
        ("REQUEUED", "0:0", "None", "preemption", "preemption"),
        ("REQUEUED", "3:0", "None", "failure", "user_error"),
        ("CANCELLED by 1000", "0:15", "None", "cancelled", None),
        ("COMPLETED", "0:0", "None", "completed", None),
    ],
)
def test_slurm_state_exit_reason_table(tmp_path, state, exit_code, reason, end_reason, cause):
    from ettcore.importers.slurm import import_sacct

    f = tmp_path / "sacct.txt"
    f.write_text(SACCT_HEAD + f"7|7|train|{state}|{exit_code}|{reason}|{T0}|{T0 + 10}|{T0 + 100}|cpu=1,gres/gpu=2\n")
    frames, _ = import_sacct([f])
    row = frames.attempts.row(0, named=True)
    assert row["end_reason"] == end_reason
    assert row.get("cause") == cause


def test_slurm_bad_cause_mapping_exits_2(tmp_path):
    f = tmp_path / "sacct.txt"
    f.write_text(SACCT_HEAD + f"7|7|train|FAILED|1:0|None|{T0}|{T0 + 10}|{T0 + 100}|gres/gpu=2\n")
    m = tmp_path / "m.yaml"
    m.write_text("rules:\n  - {reason: '(', cause: hardware}\n")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ettcore.cli",
            "import",
            "slurm",
            str(f),
            "--out",
            str(tmp_path / "t"),
            "--cause-mapping",
            str(m),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "m.yaml" in r.stderr and "reason" in r.stderr and "Traceback" not in r.stderr
