"""Interruption causes decided by the recorder converter, the goodput importer and the MLPerf importer:
hand-written run folders and entries, each attempt's expected cause written literally; a user's cause mapping on
``ett from-recorder`` and ``ett import goodput``; a bad end record is an input error naming file, row and field."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ettcore.config import DATA_DIR
from ettcore.errors import InputError
from ettcore.importers.goodput import import_entries
from ettcore.importers.mlperf import import_logs
from ettcore.importers.recorder import collect

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
UF = DATA_DIR / "mlperf/v5.1/University-of-Florida/hpg.dgxb200x8.n1/dlrm_dcnv2/result_0.txt"


def ett(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ettcore.cli", *argv], capture_output=True, text=True, timeout=120)


def _causes(trace: Path) -> list[str | None]:
    """The written trace's cause column, in (job, attempt) order."""
    return pl.read_parquet(trace / "attempts.parquet").sort("job_id", "attempt")["cause"].to_list()


def _attempt(job: str, k: int, t: float, end: dict | None) -> list[dict]:
    """One attempt's records: start, a train span of 10 steps, and (``end`` given) its end record."""
    recs = [
        {"k": "attempt_start", "job_id": job, "attempt": k, "t": t},
        {"k": "span", "job_id": job, "attempt": k, "id": 1, "phase": "train", "stage": None, "start": t + 1,
         "end": t + 50, "cursor_start": 0, "cursor_end": 10},
    ]  # fmt: skip
    if end is not None:
        recs.append({"k": "attempt_end", "job_id": job, "attempt": k, "t": t + 60, **end})
    return recs


# each attempt's end record (None: none written), and the cause the shipped rules give it, by hand from
# ettcore/defaults/cause_mapping.yaml
ENDS = [
    ({"reason": "failure", "exception": "RuntimeError: loss is nan"}, "user_error"),
    (
        {"reason": "failure", "exception": "torch.distributed.DistBackendError: NCCL error: unhandled system error"},
        "infrastructure",
    ),  # fmt: skip
    ({"reason": "preemption", "signal": 15}, "preemption"),
    ({"reason": "failure", "exception": "RuntimeError: CUDA error: uncorrectable ECC error encountered"}, "hardware"),
    ({"reason": "failure", "exit_code": 137}, "unknown"),  # an exit status alone: the shipped rules do not say
    (None, "unknown"),  # no end record, a later attempt follows: a failure nothing explains
    ({"reason": "cancelled", "signal": 2}, None),  # not an interruption: no cause
    ({"reason": "completed"}, None),
]


def _run_folder(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    recs = [{"k": "job", "job_id": "j", "model": "m", "gpus": 8, "labels": {}}]
    for k, (end, _) in enumerate(ENDS):
        recs += _attempt("j", k, T0 + 100 * k, end)
    (run / "j-a0000-hand-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return run


def test_recorder_end_records_decide_each_cause(tmp_path):
    conv = collect(_run_folder(tmp_path))
    assert conv.attempts["cause"].to_list() == [cause for _, cause in ENDS]


def test_from_recorder_writes_the_cause_column_and_takes_a_user_mapping(tmp_path):
    run = _run_folder(tmp_path)
    p = ett("from-recorder", str(run), str(tmp_path / "trace"))
    assert p.returncode == 0, p.stderr
    assert _causes(tmp_path / "trace") == [cause for _, cause in ENDS]
    mapping = tmp_path / "mine.yaml"
    mapping.write_text("rules:\n  - {source: recorder, exit_code: 137, cause: node_failure}\n")
    p = ett("from-recorder", str(run), str(tmp_path / "trace2"), "--cause-mapping", str(mapping))
    assert p.returncode == 0, p.stderr
    causes = _causes(tmp_path / "trace2")
    assert causes[4] == "node_failure" and causes[:4] == ["user_error", "infrastructure", "preemption", "hardware"]


def test_a_completed_run_folder_has_no_cause_column(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    recs = _attempt("j", 0, T0, {"reason": "completed"})
    (run / "j.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert "cause" not in collect(run).attempts.columns


@pytest.mark.parametrize(
    "extra, field",
    [({"signal": "TERM"}, "signal"), ({"exit_code": -1}, "exit_code"), ({"exception": 3}, "exception")],
)
def test_a_bad_end_record_field_names_file_row_and_field(tmp_path, extra, field):
    run = tmp_path / "run"
    run.mkdir()
    recs = _attempt("j", 0, T0, {"reason": "failure", **extra})
    (run / "j.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(InputError) as exc:
        collect(run)
    (prob,) = exc.value.problems
    assert (prob.file, prob.row, prob.field) == (str(run / "j.jsonl"), 3, field)
    p = ett("from-recorder", str(run), str(tmp_path / "trace"))
    assert p.returncode == 2 and p.stdout.count("\n") == 1 and "Traceback" not in p.stdout + p.stderr


def test_a_bad_cause_mapping_on_from_recorder_exits_2(tmp_path):
    mapping = tmp_path / "bad.yaml"
    mapping.write_text("rules:\n  - {exception: '(unclosed', cause: hardware}\n")
    p = ett("from-recorder", str(_run_folder(tmp_path)), str(tmp_path / "trace"), "--cause-mapping", str(mapping))
    assert p.returncode == 2 and "exception" in p.stdout + p.stderr and "Traceback" not in p.stdout + p.stderr


def _goodput_entries(tmp_path: Path) -> Path:
    """Job ``a``: attempt 0 has no job_end_time before attempt 1 starts (a failure the entries do not explain),
    attempt 1 ends at its job_end_time (completed)."""
    entries = [
        {"job_name": "a", "job_start_time": T0},
        {"job_name": "a", "step_count": 0, "step_start_time": T0 + 10},
        {"job_name": "a", "step_count": 1, "step_start_time": T0 + 20},
        {"job_name": "a", "job_start_time": T0 + 100},
        {"job_name": "a", "step_count": 1, "step_start_time": T0 + 110},
        {"job_name": "a", "step_count": 2, "step_start_time": T0 + 120},
        {"job_name": "a", "job_end_time": T0 + 130},
    ]
    src = tmp_path / "entries.jsonl"
    src.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return src


def test_goodput_failure_is_unknown_and_a_user_rule_can_name_it(tmp_path):
    frames, report = import_entries(_goodput_entries(tmp_path))
    assert frames.attempts["end_reason"].to_list() == ["failure", "completed"]
    assert frames.attempts["cause"].to_list() == ["unknown", None]
    assert report.files[0].facts["interruptions by cause"] == "unknown 1"
    mapping = tmp_path / "mine.yaml"
    mapping.write_text("rules:\n  - {source: goodput, end_reason: failure, cause: infrastructure}\n")
    p = ett("import", "goodput", str(tmp_path / "entries.jsonl"), "--cause-mapping", str(mapping), "--out",
            str(tmp_path / "trace"))  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert _causes(tmp_path / "trace") == ["infrastructure", None]


LLAMA3 = DATA_DIR / "reference" / "llama3-causes.yaml"  # a user's causes file: nccl_watchdog_timeout is one of its


def test_a_cause_mapping_may_give_a_user_s_cause_when_its_causes_file_is_given(tmp_path, monkeypatch, capsys):
    """A rule giving a cause of a user's causes file: refused in one line naming the rules file, the rule (its row)
    and ``cause`` without that causes file; with it (``--causes-file``, the measuring commands' option), the trace
    written names the cause, ``ett summarize`` with the same file counts it, and ``ett ingest`` with the file gives
    the store the same count (a later ingest reads the store's causes without it)."""
    from ettcore.cli import main

    monkeypatch.setenv("ETT_CACHE_DIR", str(tmp_path / "cache"))
    entries = _goodput_entries(tmp_path)
    mapping = tmp_path / "mine.yaml"
    mapping.write_text("rules:\n  - {source: goodput, end_reason: failure, cause: nccl_watchdog_timeout}\n")
    with pytest.raises(InputError) as info:
        import_entries(entries, cause_mapping=mapping)
    (prob,) = info.value.problems
    assert (prob.file, prob.row, prob.field) == (str(mapping), 1, "cause")
    assert "'nccl_watchdog_timeout'" in prob.message and "--causes-file" in prob.message
    p = ett("import", "goodput", str(entries), "--cause-mapping", str(mapping), "--out", str(tmp_path / "refused"))
    lines = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr, p.stdout + p.stderr
    assert f"{mapping}, row 1, field 'cause'" in lines[0]
    assert not (tmp_path / "refused").exists()

    frames, report = import_entries(entries, cause_mapping=mapping, causes_file=LLAMA3)
    assert frames.attempts["cause"].to_list() == ["nccl_watchdog_timeout", None]
    assert report.files[0].facts["interruptions by cause"] == "nccl_watchdog_timeout 1"
    trace = tmp_path / "trace"
    argv = ["import", "goodput", entries, "--cause-mapping", mapping, "--causes-file", LLAMA3, "--out", trace]
    assert main([str(a) for a in argv]) == 0
    assert _causes(trace) == ["nccl_watchdog_timeout", None]
    capsys.readouterr()
    assert main(["summarize", str(trace), "--causes-file", str(LLAMA3), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fleet"]["nof_by_cause"]["nccl_watchdog_timeout"] == 1

    store = tmp_path / "fleet.duckdb"
    argv = ["ingest", store, entries, "--kind", "goodput", "--cause-mapping", mapping, "--causes-file", LLAMA3]
    assert main([str(a) for a in argv]) == 0
    argv = ["ingest", store, entries, "--kind", "goodput", "--cause-mapping", mapping, "--source", "again"]
    assert main([str(a) for a in argv]) == 0  # the store's causes: no --causes-file needed
    capsys.readouterr()
    assert main(["summarize", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fleet"]["nof_by_cause"]["nccl_watchdog_timeout"] == 2


def test_mlperf_log_cut_short_is_an_unknown_failure(tmp_path):
    """The University of Florida log (bundled, real) cut before its run_stop: a failure the log does not explain."""
    root = tmp_path / "v5.1/University-of-Florida/hpg.dgxb200x8.n1/dlrm_dcnv2"
    root.mkdir(parents=True)
    lines = UF.read_text().splitlines(keepends=True)
    stop = next(i for i, ln in enumerate(lines) if '"key": "run_stop"' in ln)
    (root / "result_0.txt").write_text("".join(lines[:stop]))
    shutil.copy(UF, root / "result_1.txt")
    frames, report = import_logs([root], gpus=8)
    by_log = dict(zip(frames.attempts["job_id"], zip(frames.attempts["end_reason"], frames.attempts["cause"])))
    assert by_log == {
        "v5.1/University-of-Florida/hpg.dgxb200x8.n1/dlrm_dcnv2/result_0": ("failure", "unknown"),
        "v5.1/University-of-Florida/hpg.dgxb200x8.n1/dlrm_dcnv2/result_1": ("completed", None),
    }
    assert report.files[0].facts["interruption cause"] == "unknown"
    assert "interruption cause" not in report.files[1].facts


def test_mlperf_complete_logs_have_no_cause_column(tmp_path):
    frames, _ = import_logs([UF], gpus=8)
    assert "cause" not in frames.attempts.columns
