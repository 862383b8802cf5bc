"""``ett import slurm`` on small hand-written accounting (synthetic rows, in sacct's own text layout).

Each case states the rows and what the trace must hold, worked out by hand.
The real-Slurm tests are ``tests/test_slurm_integration.py`` (a live cluster)
and ``tests/test_slurm_fleet.py`` (the bundled campaign's real exports).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pytest

from ettcore import metric
from ettcore.errors import TraceError
from ettcore.importers.frames import write_import
from ettcore.importers.slurm import SACCT_FORMAT, import_sacct, user_label
from ettcore.integrations.recorder import Recorder
from ettcore.integrations.slurm import job_from_environment
from ettcore.trace import load_trace

T = 1_800_000_000  # epoch seconds, as sacct writes them with SLURM_TIME_FORMAT=%s
FIELDS = SACCT_FORMAT.split(",")


def row(
    job: str,
    state: str,
    submit: float,
    start: float | None,
    end: float | None,
    *,
    raw: str | None = None,
    exit_code: str = "0:0",
    gpus: int | None = 1,
    name: str = "train",
    user: str = "alice",
    **extra,
) -> dict:
    tres = "billing=1,cpu=1,node=1" + (f",gres/gpu={gpus}" if gpus else "")
    d = {
        "JobID": job,
        "JobIDRaw": raw or job,
        "JobName": name,
        "Partition": "low",
        "Account": "research",
        "QOS": "normal",
        "User": user,
        "State": state,
        "ExitCode": exit_code,
        "Submit": str(submit),
        "Eligible": str(submit),
        "Start": "Unknown" if start is None else str(start),
        "End": "Unknown" if end is None else str(end),
        "AllocTRES": tres if start is not None else "",
        "NodeList": "n1",
        "DBIndex": "",
    }
    d.update(extra)
    return d


def write_text(path: Path, rows: list[dict], fields: list[str] = FIELDS) -> Path:
    lines = ["|".join(fields)] + ["|".join(str(r.get(f, "")) for f in fields) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def attempts_of(frames, job: str) -> list[tuple]:
    a = frames.attempts.filter(pl.col("job_id") == job).sort("attempt")
    return [(r["attempt"], r["start"], r["end"], r["end_reason"]) for r in a.iter_rows(named=True)]


def queue_spans(frames, job: str) -> list[tuple]:
    s = frames.spans.filter((pl.col("job_id") == job) & (pl.col("phase") == "scheduling")).sort("attempt")
    return [(r["attempt"], r["start"], r["end"]) for r in s.iter_rows(named=True)]


# ---------------------------------------------------------------- states, runs, queue


def test_runs_states_and_queue(tmp_path):
    rows = [
        row("1", "COMPLETED", T, T + 10, T + 100),
        row("2", "REQUEUED", T, T + 5, T + 50, exit_code="42:0"),  # RequeueExit: its own crash -> failure
        row("3", "REQUEUED", T, T + 5, T + 60),  # scontrol requeue from outside -> preemption
        row("4", "PREEMPTED", T, T + 20, T + 30),
        row("2", "COMPLETED", T + 50, T + 70, T + 150),
        row("3", "COMPLETED", T + 60, T + 75, T + 160),
        row("4", "NODE_FAIL", T + 30, T + 45, T + 46),
        row("4", "COMPLETED", T + 46, T + 60, T + 200),
        row("5", "TIMEOUT", T, T + 1, T + 61),
        row("6", "OUT_OF_MEMORY", T, T + 2, T + 3),
        row("7", "CANCELLED by 1000", T, T + 2, T + 40),
        row("8", "RUNNING", T, T + 100, None),
        row("9", "PREEMPTED", T, T + 3, T + 90),
        row("9", "PENDING", T + 90, None, None),  # requeued, still waiting
        row("10", "PREEMPTED", T, T + 3, T + 20),
        row("10", "CANCELLED by 0", T + 20, None, T + 35),  # cancelled while waiting after a run
        row("11", "PENDING", T, None, None),  # never started
        row("12", "CANCELLED by 0", T, None, T + 5),  # never started
    ]
    frames, report = import_sacct([write_text(tmp_path / "s.txt", rows)], as_of=T + 300)
    assert attempts_of(frames, "1") == [(0, T, T + 100, "completed")]
    assert queue_spans(frames, "1") == [(0, T, T + 10)]
    assert attempts_of(frames, "2") == [(0, T, T + 50, "failure"), (1, T + 70, T + 150, "completed")]
    assert attempts_of(frames, "3") == [(0, T, T + 60, "preemption"), (1, T + 75, T + 160, "completed")]
    assert attempts_of(frames, "4") == [
        (0, T, T + 30, "preemption"),
        (1, T + 45, T + 46, "failure"),
        (2, T + 60, T + 200, "completed"),
    ]
    assert queue_spans(frames, "4") == [(0, T, T + 20)]  # later queues are the gaps between attempts
    assert attempts_of(frames, "5") == [(0, T, T + 61, "failure")]
    assert attempts_of(frames, "6") == [(0, T, T + 3, "failure")]
    assert attempts_of(frames, "7") == [(0, T, T + 40, "cancelled")]
    assert attempts_of(frames, "8") == [(0, T, None, "running")]
    assert attempts_of(frames, "9") == [(0, T, T + 90, "preemption"), (1, T + 90, None, "running")]
    assert queue_spans(frames, "9") == [(0, T, T + 3), (1, T + 90, T + 300)]  # queued up to --as-of
    assert attempts_of(frames, "10") == [(0, T, T + 20, "preemption"), (1, T + 20, T + 35, "cancelled")]
    assert set(frames.jobs["job_id"]) == {str(i) for i in range(1, 11)}  # 11 and 12 never ran
    jobs = {r["job_id"]: r for r in frames.jobs.iter_rows(named=True)}
    assert (
        jobs["4"]["slurm_runs"] == 3
        and jobs["4"]["slurm_state"] == "COMPLETED"
        and jobs["7"]["slurm_state"] == "CANCELLED"
    )
    md = report.to_markdown()
    assert "2 job(s) that never started" in md and "11 (PENDING)" in md and "12 (CANCELLED)" in md
    assert "1 requeued after their batch script failed (RequeueExit): failure; 1 requeued from outside" in md
    assert "TIMEOUT runs" in md and "still waiting in the queue" in md


def test_metric_on_an_imported_job(tmp_path):
    """Job 4 of the case above through the metric: wall from submit to the last end, two interruptions."""
    rows = [
        row("4", "PREEMPTED", T, T + 20, T + 30),
        row("4", "NODE_FAIL", T + 30, T + 45, T + 46),
        row("4", "COMPLETED", T + 46, T + 60, T + 200),
    ]
    frames, report = import_sacct([write_text(tmp_path / "s.txt", rows)])
    out = write_import(tmp_path / "trace", frames, report)
    j = metric.job_summary(load_trace(out)).row(0, named=True)
    assert j["wall_s"] == 200 and j["nof"] == 2 and j["nof_preemption"] == 1 and j["nof_failure"] == 1
    # queue before the first run (20 s) + the two re-queue gaps (15 s, 14 s)
    assert j["scheduling_s"] == 20 + 15 + 14
    assert j["ett_pct"] == 0  # no recorder: nothing is known to be training
    assert (out / "import_report.md").is_file()


def test_timeout_as_cancelled(tmp_path):
    frames, _ = import_sacct(
        [write_text(tmp_path / "s.txt", [row("5", "TIMEOUT", T, T + 1, T + 61)])], timeout_as="cancelled"
    )
    assert attempts_of(frames, "5") == [(0, T, T + 61, "cancelled")]


def test_rows_in_any_order_and_dbindex(tmp_path):
    """--duplicates rows of several jobs interleave; a job's runs are ordered by time, not by line."""
    rows = [
        row("2", "COMPLETED", T + 50, T + 70, T + 150, DBIndex="9"),
        row("1", "COMPLETED", T, T + 1, T + 2, DBIndex="3"),
        row("2", "REQUEUED", T, T + 5, T + 50, exit_code="42:0", DBIndex="4"),
    ]
    frames, _ = import_sacct([write_text(tmp_path / "s.txt", rows)])
    assert attempts_of(frames, "2") == [(0, T, T + 50, "failure"), (1, T + 70, T + 150, "completed")]


# ---------------------------------------------------------------- GPUs, users, arrays, steps, times


def test_gpus_from_alloc_tres_typed_and_default(tmp_path):
    rows = [
        row("1", "COMPLETED", T, T + 1, T + 2, gpus=8),
        row("2", "COMPLETED", T, T + 1, T + 2, gpus=None, AllocTRES="cpu=4,gres/gpu:a100=2,gres/gpu:h100=2,node=1"),
        row("3", "COMPLETED", T, T + 1, T + 2, gpus=None),
    ]
    p = write_text(tmp_path / "s.txt", rows)
    with pytest.raises(TraceError) as info:
        import_sacct([p])
    (prob,) = info.value.problems
    assert (prob.file, prob.row, prob.field) == (str(p), 4, "AllocTRES") and "--gpus" in prob.message
    frames, report = import_sacct([p], gpus=1)
    assert dict(frames.jobs.select("job_id", "gpus").iter_rows()) == {"1": 8, "2": 4, "3": 1}
    assert "no gres/gpu in AllocTRES: gpus = 1 (--gpus)" in report.to_markdown()
    # the GPU type is kept as a label (typed names joined in name order), none for an untyped count
    assert dict(frames.jobs.select("job_id", "gpu_type").iter_rows()) == {"1": None, "2": "a100+h100", "3": None}


def test_gpu_type_label_from_alloc_tres(tmp_path):
    rows = [
        row("1", "COMPLETED", T, T + 1, T + 2, gpus=None, AllocTRES="cpu=4,gres/gpu=8,gres/gpu:h100=8,node=1"),
        row("2", "COMPLETED", T, T + 1, T + 2, gpus=None, AllocTRES="gres/gpu:a100=2"),
    ]
    frames, _ = import_sacct([write_text(tmp_path / "s.txt", rows)])
    got = {r[0]: r[1:] for r in frames.jobs.select("job_id", "gpus", "gpu_type").iter_rows()}
    assert got == {"1": (8, "h100"), "2": (2, "a100")}
    # untyped counts only: no gpu_type column at all (nothing invented)
    plain, _ = import_sacct([write_text(tmp_path / "p.txt", [row("1", "COMPLETED", T, T + 1, T + 2, gpus=4)])])
    assert "gpu_type" not in plain.jobs.columns


def test_users_hashed_unless_kept(tmp_path):
    p = write_text(tmp_path / "s.txt", [row("1", "COMPLETED", T, T + 1, T + 2, user="alice")])
    hashed = import_sacct([p])[0].jobs["user"][0]
    assert hashed == user_label("alice", False) and hashed.startswith("u-") and "alice" not in hashed
    assert hashed == import_sacct([p])[0].jobs["user"][0]  # stable
    assert import_sacct([p], keep_users=True)[0].jobs["user"][0] == "alice"


def test_array_tasks_steps_and_pending_arrays(tmp_path):
    rows = [
        row("7_0", "COMPLETED", T, T + 1, T + 5, raw="9"),
        row("7_1", "COMPLETED", T, T + 5, T + 9, raw="7"),
        row("7_[2-3]", "PENDING", T, None, None, raw="7"),
        row("8", "COMPLETED", T, T + 1, T + 2),
        row("8.batch", "COMPLETED", T, T + 1, T + 2, raw="8.batch"),
        row("8.extern", "COMPLETED", T, T + 1, T + 2, raw="8.extern"),
    ]
    frames, report = import_sacct([write_text(tmp_path / "s.txt", rows)])
    jobs = {r["job_id"]: r for r in frames.jobs.iter_rows(named=True)}
    assert set(jobs) == {"7_0", "7_1", "8"}
    assert (jobs["7_0"]["array_job_id"], jobs["7_0"]["array_task_id"], jobs["7_0"]["slurm_job_id"]) == ("7", "0", "9")
    assert jobs["8"]["array_job_id"] is None
    md = report.to_markdown()
    assert "job step rows" in md and "(lines 6, 7)" in md and "pending job-array rows" in md and "(line 4)" in md


def test_zoneless_times_in_a_time_zone(tmp_path):
    """sacct's default time format has no zone: 2027-01-15T10:00:00 in Europe/Berlin (UTC+1) is 09:00 UTC."""
    r = row("1", "COMPLETED", 0, 0, 0)
    r.update(
        Submit="2027-01-15T10:00:00",
        Eligible="2027-01-15T10:00:00",
        Start="2027-01-15T10:00:30",
        End="2027-01-15T11:00:00",
    )
    p = write_text(tmp_path / "s.txt", [r])
    frames, report = import_sacct([p], timezone="Europe/Berlin")
    utc9 = datetime(2027, 1, 15, 9, tzinfo=timezone.utc).timestamp()
    assert attempts_of(frames, "1") == [(0, utc9, utc9 + 3600, "completed")]
    assert "zone-less times" in report.to_markdown()
    assert import_sacct([p])[0].attempts["start"][0] == utc9 + 3600  # read as UTC by default


# ---------------------------------------------------------------- bad input: file, line, field; exit 2


BAD = {
    "unknown state": ([row("1", "EXPLODED", T, T + 1, T + 2)], 2, "State", "unknown job state"),
    "run without a start": ([row("1", "COMPLETED", T, None, T + 2)], 2, "Start", "without a start"),
    "run without an end": ([row("1", "FAILED", T, T + 1, None)], 2, "End", "without an end"),
    "duplicated row": (
        [
            row("1", "COMPLETED", T, T + 1, T + 2),
            row("2", "COMPLETED", T, T + 1, T + 2),
            row("1", "COMPLETED", T, T + 1, T + 2),
        ],
        4,
        "JobIDRaw",
        "duplicated row",
    ),
    "overlapping runs": (
        [row("1", "PREEMPTED", T, T + 1, T + 20), row("1", "COMPLETED", T + 5, T + 10, T + 30)],
        3,
        "Start",
        "overlapping runs",
    ),
    "end before start": ([row("1", "COMPLETED", T, T + 10, T + 2)], 2, "End", "before it starts"),
    "runaway": (
        [row("1", "RUNNING", T, T + 1, None), row("1", "COMPLETED", T + 5, T + 10, T + 30)],
        2,
        "State",
        "runaway",
    ),
    "not a time": ([row("1", "COMPLETED", T, T + 1, T + 2, Submit="yesterday")], 2, "Submit", "not a time"),
    "far-future time": ([row("1", "COMPLETED", T, T + 1, 9_999_999_999_999)], 2, "End", "plausible range"),
    "bad exit code": ([row("1", "COMPLETED", T, T + 1, T + 2, ExitCode="x")], 2, "ExitCode", "not an exit code"),
    "reversed node range": (
        [row("1", "COMPLETED", T, T + 1, T + 2), row("2", "FAILED", T, T + 1, T + 2, NodeList="gpu[05-03]")],
        3,
        "NodeList",
        "reversed range",
    ),
    "unbalanced node list": (
        [row("1", "COMPLETED", T, T + 1, T + 2, NodeList="gpu[01-02")],
        2,
        "NodeList",
        "not a node list Slurm writes",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_text_rows(tmp_path, case, capsys):
    rows, line, fld, words = BAD[case]
    p = write_text(tmp_path / "s.txt", rows)
    with pytest.raises(TraceError) as info:
        import_sacct([p])
    prob = info.value.problems[0]
    assert (prob.file, prob.row, prob.field) == (str(p), line, fld), prob
    assert words in prob.message
    from ettcore import cli

    assert cli.main(["import", "slurm", str(p), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{p}, row {line}, field '{fld}'" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_node_lists_kept_in_slurms_form(tmp_path):
    """Each run keeps its NodeList as Slurm wrote it; a run that never ran ("None assigned") has none."""
    rows = [
        row("1", "NODE_FAIL", T, T + 10, T + 100, NodeList="node[01-04,07]"),
        row("1", "COMPLETED", T + 100, T + 120, T + 200, NodeList="n1,gpu[01-02]"),
        row("2", "COMPLETED", T, T + 10, T + 20, NodeList="gpu08"),
    ]
    frames, _ = import_sacct([write_text(tmp_path / "s.txt", rows)])
    got = frames.attempts.sort("job_id", "attempt").select("job_id", "attempt", "nodes").rows()
    assert got == [("1", 0, "node[01-04,07]"), ("1", 1, "n1,gpu[01-02]"), ("2", 0, "gpu08")]
    out = write_import(tmp_path / "trace", frames, _)
    assert pl.read_parquet(out / "attempts.parquet")["nodes"].to_list() == ["node[01-04,07]", "n1,gpu[01-02]", "gpu08"]
    # without NodeList in the export the column is not written at all
    fields = [f for f in FIELDS if f != "NodeList"]
    frames, _ = import_sacct([write_text(tmp_path / "s2.txt", rows, fields)])
    assert "nodes" not in frames.attempts.columns


def test_truncated_line_and_missing_header(tmp_path):
    p = write_text(tmp_path / "s.txt", [row("1", "COMPLETED", T, T + 1, T + 2)])
    p.write_text(p.read_text() + "2|2|train|low\n")
    with pytest.raises(TraceError) as info:
        import_sacct([p])
    assert (info.value.problems[0].row, "fields where the header has") == (3, "fields where the header has")
    q = write_text(
        tmp_path / "q.txt", [row("1", "COMPLETED", T, T + 1, T + 2)], fields=[f for f in FIELDS if f != "Start"]
    )
    with pytest.raises(TraceError) as info:
        import_sacct([q])
    assert (info.value.problems[0].row, info.value.problems[0].field) == (1, "Start")
    e = tmp_path / "e.txt"
    e.write_text("1|1|COMPLETED\n")
    with pytest.raises(TraceError, match="no header line|header lacks"):
        import_sacct([e])


def test_duplicates_across_files(tmp_path):
    rows = [row("1", "COMPLETED", T, T + 1, T + 2)]
    a, b = write_text(tmp_path / "a.txt", rows), write_text(tmp_path / "b.txt", rows)
    with pytest.raises(TraceError) as info:
        import_sacct([a, b])
    prob = info.value.problems[0]
    assert prob.file == str(b) and prob.row == 2 and f"{a} line 2" in prob.message


def _json_doc(jobs: list[dict]) -> dict:
    return {"meta": {"Slurm": {"release": "22.05.8"}}, "errors": [], "jobs": jobs}


def _json_job(job_id: int, state: str, submit: int, start: int, end: int, *, batch_state: str | None = None) -> dict:
    return {
        "job_id": job_id,
        "name": "train",
        "partition": "low",
        "account": "research",
        "qos": "normal",
        "user": "alice",
        "cluster": "c",
        "array": {"job_id": 0, "task_id": None},
        "het": {"job_id": 0, "job_offset": None},
        "state": {"current": state, "reason": "None"},
        "exit_code": {"status": "SUCCESS", "return_code": 0},
        "time": {"submission": submit, "eligible": submit, "start": start, "end": end},
        "tres": {"allocated": [{"type": "cpu", "name": None, "count": 1}, {"type": "gres", "name": "gpu", "count": 2}]},
        "steps": [] if batch_state is None else [{"step": {"name": "batch"}, "state": batch_state}],
    }


def test_json_form_and_its_errors(tmp_path):
    doc = _json_doc(
        [
            _json_job(3, "REQUEUED", T, T + 5, T + 50, batch_state="FAILED"),
            _json_job(3, "COMPLETED", T + 50, T + 70, T + 150, batch_state="COMPLETED"),
            _json_job(4, "REQUEUED", T, T + 5, T + 50, batch_state="CANCELLED"),
            _json_job(4, "COMPLETED", T + 50, T + 70, T + 150, batch_state="COMPLETED"),
        ]
    )
    p = tmp_path / "s.json"
    p.write_text(json.dumps(doc, indent=1))
    frames, report = import_sacct([p])
    assert attempts_of(frames, "3") == [(0, T, T + 50, "failure"), (1, T + 70, T + 150, "completed")]
    assert attempts_of(frames, "4")[0][3] == "preemption"
    assert frames.jobs["gpus"].to_list() == [2, 2]
    assert "gpu_type" not in frames.jobs.columns  # untyped gres: no type invented
    assert report.files[0].facts["slurm_release"] == "22.05.8"
    typed = _json_job(5, "COMPLETED", T, T + 5, T + 50)
    typed["tres"]["allocated"][1]["name"] = "gpu:h100"
    typed_path = tmp_path / "typed.json"
    typed_path.write_text(json.dumps(_json_doc([typed])))
    assert import_sacct([typed_path])[0].jobs.select("gpus", "gpu_type").row(0) == (2, "h100")
    # truncated export: names the line where the JSON stops
    text = p.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(TraceError) as info:
        import_sacct([cut])
    prob = info.value.problems[0]
    assert prob.file == str(cut) and prob.row is not None and "not valid JSON" in prob.message
    # unknown state and a missing field name the job's position and the field's path
    bad = _json_doc([_json_job(3, "COMPLETED", T, T + 5, T + 50), _json_job(4, "EXPLODED", T, T + 5, T + 50)])
    p.write_text(json.dumps(bad))
    with pytest.raises(TraceError) as info:
        import_sacct([p])
    assert (info.value.problems[0].row, info.value.problems[0].field) == (2, "jobs[1].state.current")
    del bad["jobs"][1]["time"]
    bad["jobs"][1]["state"]["current"] = "COMPLETED"
    p.write_text(json.dumps(bad))
    with pytest.raises(TraceError) as info:
        import_sacct([p])
    assert (info.value.problems[0].row, info.value.problems[0].field) == (2, "jobs[1].time")


def test_json_without_steps_notes_the_requeue_guess(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(
        json.dumps(
            _json_doc([_json_job(3, "REQUEUED", T, T + 5, T + 50), _json_job(3, "COMPLETED", T + 50, T + 70, T + 150)])
        )
    )
    frames, report = import_sacct([p])
    assert attempts_of(frames, "3")[0][3] == "preemption"
    assert "REQUEUED run without its steps" in report.to_markdown()


# ---------------------------------------------------------------- recorder: environment pickup and the join


def test_job_from_environment():
    assert job_from_environment({}) is None
    j = job_from_environment({"SLURM_JOB_ID": "41"})
    assert (j.job_id, j.attempt, j.raw_job_id) == ("41", 0, "41")  # SLURM_RESTART_COUNT unset on a first run
    j = job_from_environment(
        {"SLURM_JOB_ID": "45", "SLURM_ARRAY_JOB_ID": "40", "SLURM_ARRAY_TASK_ID": "3", "SLURM_RESTART_COUNT": "2"}
    )
    assert (j.job_id, j.attempt, j.array_job_id, j.array_task_id) == ("40_3", 2, "40", "3")
    with pytest.raises(ValueError, match="SLURM_RESTART_COUNT"):
        job_from_environment({"SLURM_JOB_ID": "41", "SLURM_RESTART_COUNT": "two"})


def test_recorder_takes_ids_from_slurm(tmp_path, monkeypatch):
    for k in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(ValueError, match="job_id"):
        Recorder(tmp_path)
    assert Recorder(tmp_path, "mine").attempt == 0
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "3")
    r = Recorder(tmp_path)
    assert (r.job_id, r.attempt) == ("77", 3)
    assert (Recorder(tmp_path, "given").job_id, Recorder(tmp_path, "given", 0).attempt) == ("given", 0)
    for x in (r,):
        x.close()


def _record(tmp_path: Path, monkeypatch, restart: int | None, spans: list[tuple]) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "2")
    if restart is None:
        monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    else:
        monkeypatch.setenv("SLURM_RESTART_COUNT", str(restart))
    rec = Recorder(tmp_path / "rec", writer="trainer")
    rec.job(model="ranker", gpus=1, variant="baseline")
    for phase, s, e, *cur in spans:
        rec.span(phase, s, e, cursor_start=cur[0] if cur else None, cursor_end=cur[1] if cur else None)
    rec.close()


def test_join_keeps_clips_and_drops(tmp_path, monkeypatch):
    """Job 2: run 0 [T+5, T+50] crashed (RequeueExit), run 1 [T+70, T+150] completed;
    the recorder's spans by attempt."""
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    _record(tmp_path, monkeypatch, None, [("hardware_setup", T + 5.2, T + 8), ("train", T + 10, T + 50.5, 0, 81)])
    _record(
        tmp_path,
        monkeypatch,
        1,
        [("checkpoint_load", T + 71, T + 72), ("train", T + 72, T + 150, 50, 200), ("publish", T + 151, T + 160)],
    )  # 1 s .. 10 s past the run's end
    _record(tmp_path, monkeypatch, 5, [("train", T + 200, T + 210, 0, 1)])  # no such run
    rows = [row("2", "REQUEUED", T, T + 5, T + 50, exit_code="42:0"), row("2", "COMPLETED", T + 50, T + 70, T + 150)]
    frames, report = import_sacct([write_text(tmp_path / "s.txt", rows)], recorder_dir=tmp_path / "rec")
    s = frames.spans.filter(pl.col("phase") != "scheduling").sort("attempt", "start")
    ms = lambda v: None if v is None else round(v, 3)  # noqa: E731  (the recorder's times go through microseconds)
    got = [
        (r["attempt"], r["phase"], ms(r["start"]), ms(r["end"]), ms(r["cursor_start"]), ms(r["cursor_end"]))
        for r in s.iter_rows(named=True)
    ]
    assert got == [
        (0, "hardware_setup", T + 5.2, T + 8, None, None),
        (0, "train", T + 10, T + 50, 0, 80.0),  # clipped 0.5 s, cursor prorated 81 -> 80
        (1, "checkpoint_load", T + 71, T + 72, None, None),
        (1, "train", T + 72, T + 150, 50, 200),
    ]
    assert frames.jobs.row(0, named=True)["model"] == "ranker" and frames.jobs["variant"][0] == "baseline"
    md = report.to_markdown()
    assert "span sticking out of its run by at most the clock tolerance" in md and "2 attempt 0 train" in md
    assert (
        "span outside its run beyond the clock tolerance" in md
        and "2 attempt 1 publish (0.000 s before the run's start, 10.000 s after its end)" in md
    )
    assert "span(s) of job 2 attempt 5" in md
    out = write_import(tmp_path / "trace", frames, report)
    j = metric.job_summary(load_trace(out)).row(0, named=True)
    assert j["nof_failure"] == 1 and j["productive_s"] == pytest.approx(40 + 78 * (200 - 80) / 150, abs=1e-3)


def _died_inside(tmp_path, monkeypatch, phase: str, opened_at: float, first_state: str):
    """Job 2's first run (T+5 .. T+40 in the accounting) dies inside ``phase`` opened at ``opened_at``; its second run
    records too, so attempt 0 is not the recorder's last.  Returns the import (frames, report)."""
    monkeypatch.setenv("SLURM_JOB_ID", "2")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    clock = iter([opened_at, opened_at + 1.0])
    rec = Recorder(tmp_path / "rec", clock=lambda: next(clock))
    rec.phase(phase).__enter__()  # the process dies inside (no span record)
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    Recorder(tmp_path / "rec").span("trainer_init", T + 61, T + 62)
    rows = [row("2", first_state, T, T + 5, T + 40), row("2", "COMPLETED", T + 40, T + 60, T + 100)]
    return import_sacct([write_text(tmp_path / "s.txt", rows)], recorder_dir=tmp_path / "rec")


def test_open_span_closed_at_the_runs_end(tmp_path, monkeypatch):
    """A compile span open when the run was killed ends where the accounting says the run ended."""
    frames, report = _died_inside(tmp_path, monkeypatch, "pt2_compile", T + 6.0, "PREEMPTED")
    s = frames.spans.filter(pl.col("phase") == "pt2_compile").row(0, named=True)
    assert (s["start"], s["end"]) == (T + 6, T + 40)
    assert "closed at the attempt's end in the scheduler's records" in report.to_markdown()


def test_open_span_opened_in_the_runs_last_second(tmp_path, monkeypatch):
    """Slurm's end is in whole seconds: a span opened 0.4 s after the run's recorded end and never closed ends at its
    own start (no length, said in the report), not 0.4 s before it (end before start made the imported trace
    invalid: seen in a real run of the CI cluster, job 8)."""
    frames, report = _died_inside(tmp_path, monkeypatch, "trainer_init", T + 40.4, "FAILED")
    md = report.to_markdown()
    assert "(0.400 s before the span opened): at its start, no length" in md
    # then wholly after the run's whole-second end, within the clock tolerance: dropped, and said so
    assert frames.spans.filter((pl.col("phase") == "trainer_init") & (pl.col("attempt") == 0)).is_empty()
    assert "span wholly outside its run but within the clock tolerance" in md and "2 attempt 0 trainer_init" in md
    out = write_import(tmp_path / "trace", frames, report)
    assert metric.job_summary(load_trace(out)).height == 1  # a valid trace


def test_cli_prints_counts(tmp_path):
    p = write_text(tmp_path / "s.txt", [row("1", "COMPLETED", T, T + 1, T + 2)])
    out = subprocess.run(
        [sys.executable, "-m", "ettcore.cli", "import", "slurm", str(p), "--out", str(tmp_path / "t")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "imported 1 Slurm job(s), 1 attempt(s)" in out.stdout and "without --recorder" in out.stdout
