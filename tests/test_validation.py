"""Every kind of bad input gets a problem that names its file, row and field (the trace spec, docs/trace-format.md)."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
from conftest import write_csv_trace

from ettcore import metric
from ettcore.errors import TraceError
from ettcore.trace import load_trace

# every load also runs the span checks the span store's screen skipped, and fails if they find a row (conftest.py)
pytestmark = pytest.mark.usefixtures("screen_guard")


def _problems(tmp_path, attempts, spans, jobs=None):
    folder = write_csv_trace(tmp_path / "t", attempts, spans, jobs)
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    return info.value.problems


def _mutated(good_rows, table, row, col, value):
    attempts, spans = copy.deepcopy(good_rows)
    (attempts if table == "attempts" else spans)[row][col] = value
    return attempts, spans


# (table, 0-based row, column index, new value, expected field, words in the message)
CASES = [
    ("attempts", 0, 3, 1_699_999_000, "end", "end is before start"),
    ("spans", 0, 5, 1_699_999_000, "end", "end is before start"),
    ("spans", 3, 5, 1_700_007_300, "end", "ends after its attempt"),
    ("spans", 2, 4, 1_700_003_000, "start", "starts before its attempt"),
    ("attempts", 1, 2, 1_700_002_000, "start", "starts before attempt 0 ended"),
    ("spans", 1, 6, "", "cursor_start", "needs cursor_start"),
    ("spans", 1, 7, "", "cursor_end", "needs cursor_end"),
    ("spans", 3, 7, 10, "cursor_end", "cursor decreases"),
    ("spans", 0, 2, "warmup_magic", "phase", "unknown phase"),
    ("spans", 2, 1, 7, "attempt", "unknown attempt 7"),
    ("attempts", 1, 1, 0, "attempt", "duplicate attempt 0"),
    ("attempts", 0, 2, "yesterday-ish", "start", "unparsable"),
    ("spans", 1, 4, "2024-13-45T99:00:00", "start", "unparsable"),
    ("attempts", 0, 2, 1_700_000_000_000, "start", "implausible"),  # milliseconds where seconds are expected
    ("attempts", 0, 4, "exploded", "end_reason", "unknown end_reason"),
    ("attempts", 0, 1, "one", "attempt", "not an integer"),
    ("spans", 1, 6, "nan", "cursor_start", "not a finite number"),
]


@pytest.mark.parametrize("table,row,col,value,field,words", CASES, ids=[f"{c[0]}-{c[5]}" for c in CASES])
def test_problem_names_file_row_field(tmp_path, good_rows, screen_guard, table, row, col, value, field, words):
    problems = _problems(tmp_path, *_mutated(good_rows, table, row, col, value))
    hits = [p for p in problems if p.file.endswith(f"{table}.csv") and p.row == row + 1 and p.field == field]
    assert hits, [p.line() for p in problems]
    assert any(words in p.message for p in hits), [p.line() for p in hits]
    if table == "spans":  # the span store's screen found the row, so the span checks ran
        assert screen_guard == [(True, len([p for p in problems if p.table == "spans"]))]


def test_overlapping_train_spans(tmp_path, good_rows, screen_guard):
    attempts, spans = copy.deepcopy(good_rows)
    spans.append(["j1", 1, "train", "", 1_700_006_000, 1_700_006_900, 350, 400])
    problems = _problems(tmp_path, attempts, spans)
    assert any(p.row == 5 and p.field == "start" and "overlaps an earlier train span" in p.message for p in problems)
    assert screen_guard[0][0], "the overlap screen found the train spans"


def test_a_clean_trace_skips_the_span_checks(tmp_path, good_rows, sample_trace, screen_guard, monkeypatch):
    """The span checks run only where the span store's screen finds a row they could reject (and the guard checks
    that they would have found nothing): a clean trace, and one whose attempt is still running, skip them."""
    monkeypatch.setenv("ETT_CHECK_CACHE", "0")  # a clean verdict kept by another test would skip the checks altogether
    load_trace(write_csv_trace(tmp_path / "clean", *good_rows))
    load_trace(sample_trace)
    attempts, spans = copy.deepcopy(good_rows)
    attempts[-1][3] = ""  # the last attempt runs: its end is empty, which no span check rejects
    attempts[-1][4] = "running"
    load_trace(write_csv_trace(tmp_path / "running", attempts, spans), as_of=1_700_007_000)
    assert screen_guard == [(False, 0)] * 3


def test_unknown_job_and_duplicate_job(tmp_path, good_rows):
    attempts, spans = copy.deepcopy(good_rows)
    attempts.append(["ghost", 0, 1_700_000_000, 1_700_000_100, "completed"])
    problems = _problems(tmp_path, attempts, spans, jobs=[["j1", "m", 8], ["j1", "m", 8]])
    assert any(
        p.file.endswith("attempts.csv") and p.row == 3 and p.field == "job_id" and "unknown job ghost" in p.message
        for p in problems
    )
    assert any(
        p.file.endswith("jobs.csv") and p.row in (1, 2) and p.field == "job_id" and "duplicate" in p.message
        for p in problems
    )


def test_bad_gpus(tmp_path, good_rows):
    problems = _problems(tmp_path, *good_rows, jobs=[["j1", "m", 0]])
    assert any(p.file.endswith("jobs.csv") and p.row == 1 and p.field == "gpus" for p in problems)


def test_corrupt_parquet(tmp_path, good_rows):
    folder = write_csv_trace(tmp_path / "t", *good_rows)
    (folder / "spans.csv").unlink()
    (folder / "spans.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    p = info.value.problems[0]
    assert p.file.endswith("spans.parquet") and "corrupt or unreadable Parquet" in p.message


def test_non_utf8_csv(tmp_path, good_rows):
    folder = write_csv_trace(tmp_path / "t", *good_rows)
    data = (folder / "attempts.csv").read_bytes().replace(b"failure", b"fail\xffure")
    (folder / "attempts.csv").write_bytes(data)
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    p = info.value.problems[0]
    assert p.file.endswith("attempts.csv") and p.row == 1 and "UTF-8" in p.message


def test_corrupt_jsonl_line(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "attempts.jsonl").write_text(
        '{"job_id":"a","attempt":0,"start":1700000000,"end":1700000100,"end_reason":"completed"}\n{"job_id": "b", '
        '"attem\n'
    )
    (folder / "spans.jsonl").write_text("")
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    p = info.value.problems[0]
    assert p.file.endswith("attempts.jsonl") and p.row == 2 and "not valid JSON" in p.message


def test_missing_table_and_ambiguous_table(tmp_path, good_rows):
    folder = write_csv_trace(tmp_path / "t", *good_rows)
    (folder / "spans.csv").rename(folder / "spanz.csv")
    with pytest.raises(TraceError, match="required table 'spans' not found"):
        load_trace(folder)
    (folder / "spanz.csv").rename(folder / "spans.csv")
    (folder / "spans.jsonl").write_text("")
    with pytest.raises(TraceError, match="given more than once"):
        load_trace(folder)


def test_skip_invalid_leaves_out_jobs_and_counts_rows(tmp_path, good_rows):
    attempts, spans = copy.deepcopy(good_rows)
    attempts.append(["j2", 0, 1_700_000_000, 1_700_000_500, "exploded"])  # unknown end_reason
    spans.append(["j2", 0, "train", "", 1_700_000_000, 1_700_000_100, 0, 1])
    folder = write_csv_trace(tmp_path / "t", attempts, spans)
    trace = load_trace(folder, skip_invalid=True)
    assert trace.excluded_jobs == ["j2"]
    assert trace.accounting["attempts"] == {
        "read": 3,
        "used": 2,
        "rejected": 1,
        "rejected_by_reason": {"attempts_bad_values": 1},
    }
    assert trace.accounting["spans"]["rejected_by_reason"] == {"job excluded": 1}
    assert metric.job_summary(trace)["job_id"].to_list() == ["j1"]
    batched = load_trace(folder, skip_invalid=True)
    metric.prepare(batched, batches=4)  # the batched attribution leaves the same job out
    assert metric.job_summary(batched).equals(metric.job_summary(trace))


def test_cli_refuses_with_exit_2_and_no_traceback(tmp_path, good_rows):
    folder = write_csv_trace(tmp_path / "t", *_mutated(good_rows, "attempts", 0, 3, 1_699_999_000))
    run = subprocess.run(
        [sys.executable, "-m", "ettcore.cli", "summarize", str(folder)], capture_output=True, text=True
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "attempts.csv, row 1, field 'end': end is before start" in run.stderr
    ok = subprocess.run(
        [sys.executable, "-m", "ettcore.cli", "summarize", str(folder), "--skip-invalid", "--json"],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert "left out 1 job(s)" in ok.stderr
    val = subprocess.run([sys.executable, "-m", "ettcore.cli", "validate", str(folder)], capture_output=True, text=True)
    assert val.returncode == 2 and "row 1, field 'end'" in val.stdout


def test_two_job_ids_with_one_job_key_are_refused(tmp_path, good_rows):
    """The metric keys jobs by a 64-bit hash of job_id; a collision (about 3e-8 at a million jobs) must be an error,
    not two jobs merged.  No real collision can be found, so the check is fed a metric_jobs table that has one."""
    trace = load_trace(write_csv_trace(tmp_path / "t", *good_rows))
    trace.con.execute(
        "CREATE OR REPLACE TEMP TABLE metric_jobs AS SELECT * FROM (VALUES (7::UBIGINT, 'job-a'), (7::UBIGINT, "
        "'job-b'), (8::UBIGINT, 'job-c')) AS t(job_key, job_id)"
    )
    with pytest.raises(TraceError) as info:
        metric.check_job_keys(trace.con, "somewhere")
    (p,) = info.value.problems
    assert p.field == "job_id" and "'job-a'" in p.message and "'job-b'" in p.message and "job-c" not in p.message
    trace.con.execute("DELETE FROM metric_jobs WHERE job_id = 'job-b'")
    metric.check_job_keys(trace.con, "somewhere")  # no collision: no error
    # a job left out for a finding whose id hashes to a measured job's key: its spans would take the other's with them
    key = trace.con.execute("SELECT hash('job-x')").fetchall()[0][0]
    trace.con.execute("INSERT INTO metric_jobs VALUES ($k, 'job-d')", {"k": key})
    trace.con.execute("INSERT INTO ett_excluded_jobs VALUES ('job-x')")
    with pytest.raises(TraceError) as info:
        metric.check_job_keys(trace.con, "somewhere")
    assert "'job-d'" in info.value.problems[0].message and "'job-x'" in info.value.problems[0].message


SPAN_CASES = [c for c in CASES if c[0] == "spans"]


@pytest.mark.parametrize("table,row,col,value,field,words", SPAN_CASES, ids=[c[5] for c in SPAN_CASES])
def test_a_partitioned_span_store_finds_the_same_problems(
    tmp_path, good_rows, screen_guard, monkeypatch, table, row, col, value, field, words
):
    """A trace too large for memory keeps its spans in Parquet parts, one a batch of jobs, and screens them from the
    parts' statistics: made to do so here (a span 'weighs' a gigabyte), it finds the same problem as in memory."""
    from ettcore.trace import span_store

    monkeypatch.setattr(span_store, "BYTES_PER_SPAN", 10**9)
    attempts, spans = _mutated(good_rows, table, row, col, value)
    attempts.append(["j2", 0, 1_700_000_000, 1_700_003_000, "completed"])  # more jobs than one, so the batches differ
    spans.append(["j2", 0, "train", "", 1_700_000_100, 1_700_002_900, 0, 10])
    problems = _problems(tmp_path, attempts, spans)
    assert any(p.row == row + 1 and p.field == field and words in p.message for p in problems), [
        p.line() for p in problems
    ]
    assert screen_guard[0][0], "the screen found the row"


def test_a_partitioned_span_store_gives_the_same_numbers(tmp_path, good_rows, sample_trace, screen_guard, monkeypatch):
    from ettcore import metric
    from ettcore.trace import span_store

    monkeypatch.setenv("ETT_CHECK_CACHE", "0")  # the checks and the screen run on each load
    want = metric.job_summary(load_trace(sample_trace))
    monkeypatch.setattr(span_store, "BYTES_PER_SPAN", 10**9)
    trace = load_trace(sample_trace)
    assert trace.spans.batches > 1 and trace.spans.folder is not None and trace.spans.suspect_parts == 0
    got = metric.job_summary(trace)
    assert got.equals(want)
    folder = trace.spans.folder.parent
    trace.spans.close()
    assert not folder.exists(), "closing the store removes its parts"
    assert screen_guard == [(False, 0)] * 2
