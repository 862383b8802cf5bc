"""Trace files as spreadsheets and export tools write them.

A "CSV UTF-8" export starts with a byte-order mark; headers come capitalised;
a column is missing or misnamed in a large table; one bad value repeats on
every row.  Each case is a small SYNTHETIC trace written here (one or a few
made-up jobs, epoch seconds in November 2023); expected values are stated by
hand or are the numbers of the same trace written plainly.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import polars as pl
import pytest
from conftest import ATTEMPT_COLS, SPAN_COLS, write_csv_trace
from polars.testing import assert_frame_equal

from ettcore import metric
from ettcore.errors import TraceError
from ettcore.trace import load_trace

# every load also runs the span checks the span store's screen skipped, and fails if they find a row (conftest.py)
pytestmark = pytest.mark.usefixtures("screen_guard")

ETT = [sys.executable, "-m", "ettcore.cli"]
BOM = "\ufeff".encode("utf-8")


def _summary(folder):
    return metric.job_summary(load_trace(folder)).sort("job_id")


def _jsonl_trace(folder, attempts, spans, header_case=str):
    folder.mkdir(parents=True, exist_ok=True)
    for name, cols, rows in (("attempts", ATTEMPT_COLS, attempts), ("spans", SPAN_COLS, spans)):
        lines = [json.dumps({header_case(c): (None if v == "" else v) for c, v in zip(cols, r)}) for r in rows]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


# ----------------------------------------------------------------------------- 1. byte-order mark


def test_byte_order_mark_is_read_as_utf8_in_csv_and_jsonl(tmp_path, good_rows):
    """A spreadsheet's "CSV UTF-8" (and a JSONL file saved the same way) starts with EF BB BF:
    same numbers as without."""
    plain = _summary(write_csv_trace(tmp_path / "plain", *good_rows, jobs=[["j1", "m", 8]]))
    csv_bom = write_csv_trace(tmp_path / "csv", *good_rows, jobs=[["j1", "m", 8]])
    for f in csv_bom.glob("*.csv"):
        f.write_bytes(BOM + f.read_bytes())
    assert_frame_equal(_summary(csv_bom), plain)
    jsonl_bom = _jsonl_trace(tmp_path / "jsonl", *good_rows)
    for f in jsonl_bom.glob("*.jsonl"):
        f.write_bytes(BOM + f.read_bytes())
    got = _summary(jsonl_bom)
    assert (
        got["ett_pct"].to_list() == plain["ett_pct"].to_list() and got["wall_s"].to_list() == plain["wall_s"].to_list()
    )


def test_byte_order_mark_inside_a_file_is_still_data(tmp_path, good_rows):
    """Only a leading mark is the encoding's: one inside a value stays part of the value (here an unknown phase)."""
    attempts, spans = copy.deepcopy(good_rows)
    spans[0][2] = "\ufeffhardware_setup"
    with pytest.raises(TraceError) as info:
        load_trace(write_csv_trace(tmp_path / "t", attempts, spans))
    assert any(p.row == 1 and p.field == "phase" and "unknown phase" in p.message for p in info.value.problems)


# ----------------------------------------------------------------------------- 2. column names without case


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_column_names_are_compared_without_case(tmp_path, good_rows, fmt):
    """`Start`, `End`, `Job_ID`, `End_Reason`: the same columns as `start`, `end`, `job_id`, `end_reason` (the rule the
    duplicate-column check already follows), in every format."""
    plain = _summary(write_csv_trace(tmp_path / "plain", *good_rows))
    if fmt == "jsonl":
        folder = _jsonl_trace(tmp_path / "t", *good_rows, header_case=str.title)
    else:
        folder = write_csv_trace(tmp_path / "t", *good_rows)
        for name in ("attempts", "spans"):
            f = folder / f"{name}.csv"
            head, rest = f.read_text().split("\n", 1)
            f.write_text(head.title() + "\n" + rest)
            if fmt == "parquet":
                pl.read_csv(f).write_parquet(folder / f"{name}.parquet")
                f.unlink()
    got = load_trace(folder)
    assert not got.problems
    assert_frame_equal(metric.job_summary(got).sort("job_id"), plain)


def test_jobs_columns_without_case_are_fields_not_labels(tmp_path, good_rows):
    """`Model` and `GPUs` in jobs.csv are the model and gpus fields; `Team` stays a label under its own spelling."""
    folder = write_csv_trace(tmp_path / "t", *good_rows)
    (folder / "jobs.csv").write_text("Job_Id,Model,GPUs,Team\nj1,dlrm,8,ads\n")
    t = load_trace(folder)
    assert t.labels == ["Team"]
    row = metric.job_summary(t).row(0, named=True)
    assert (row["model"], row["gpus"], row["Team"]) == ("dlrm", 8, "ads")


def test_two_spellings_of_one_column_are_refused(tmp_path, good_rows):
    folder = write_csv_trace(tmp_path / "t", *good_rows)
    f = folder / "attempts.csv"
    f.write_text(f.read_text().replace("end_reason\n", "end_reason,START\n", 1))
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    (p,) = info.value.problems
    assert p.file == str(f) and p.row is None and p.field == "START" and "more than once" in p.message


# ----------------------------------------------------------------------------- 3. one error per missing column


def _big_trace(folder, n_jobs: int):
    """n_jobs one-attempt jobs, each with one train span (SYNTHETIC)."""
    attempts = [[f"j{k}", 0, 1_700_000_000 + 10 * k, 1_700_000_009 + 10 * k, "completed"] for k in range(n_jobs)]
    spans = [[f"j{k}", 0, "train", "", 1_700_000_001 + 10 * k, 1_700_000_008 + 10 * k, 0, 7] for k in range(n_jobs)]
    return write_csv_trace(folder, attempts, spans)


def test_a_misnamed_column_is_one_error_with_a_suggestion(tmp_path):
    """attempts.csv of 20,000 rows whose `end` column is called `end_time`: one problem (file, column, a near name),
    not one per row and no misleading 'end is empty' on every row."""
    folder = _big_trace(tmp_path / "t", 20_000)
    f = folder / "attempts.csv"
    head, rest = f.read_text().split("\n", 1)
    f.write_text(head.replace(",end,", ",end_time,") + "\n" + rest)
    for skip_invalid in (False, True):  # a whole-file problem: refused even with --skip-invalid
        with pytest.raises(TraceError) as info:
            load_trace(folder, skip_invalid=skip_invalid)
        (p,) = info.value.problems
        assert (p.file, p.row, p.field) == (str(f), None, "end")
        assert "required column 'end' is missing" in p.message and "did you mean 'end_time'?" in p.message


def test_every_missing_column_of_every_table_is_named_once(tmp_path):
    folder = _big_trace(tmp_path / "t", 50)
    a, s = folder / "attempts.csv", folder / "spans.csv"
    a.write_text(
        "\n".join(",".join(r.split(",")[:2] + r.split(",")[3:]) for r in a.read_text().splitlines()) + "\n"
    )  # no start
    s.write_text("\n".join(",".join(r.split(",")[:6]) for r in s.read_text().splitlines()) + "\n")  # no cursors
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    got = sorted((p.file, p.field) for p in info.value.problems)
    assert got == [(str(a), "start"), (str(s), "cursor_end"), (str(s), "cursor_start")]
    assert all(p.row is None for p in info.value.problems)
    assert any("train spans need it" in p.message for p in info.value.problems)


def test_cursor_columns_are_optional_without_train_spans(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "attempts.csv").write_text("job_id,attempt,start,end,end_reason\nj,0,1700000000,1700000100,failure\n")
    (folder / "spans.csv").write_text("job_id,attempt,phase,start,end\nj,0,hardware_setup,1700000000,1700000050\n")
    row = metric.job_summary(load_trace(folder)).row(0, named=True)
    assert row["hardware_setup_s"] == 50 and row["productive_s"] == 0


def test_a_column_missing_from_one_part_file_names_that_file(tmp_path, good_rows):
    folder = write_csv_trace(tmp_path / "t", *good_rows)
    spans = pl.read_csv(folder / "spans.csv")
    (folder / "spans.csv").unlink()
    (folder / "spans").mkdir()
    spans[:2].write_parquet(folder / "spans" / "a.parquet")
    spans[2:].drop("phase").write_parquet(folder / "spans" / "b.parquet")
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    (p,) = info.value.problems
    assert p.file == str(folder / "spans" / "b.parquet") and p.field == "phase" and p.row is None


# ----------------------------------------------------------------------------- 3. repeated row errors summarized


def _every_start_unparsable(tmp_path, n: int):
    folder = _big_trace(tmp_path / "t", n)
    f = folder / "attempts.csv"
    lines = f.read_text().splitlines()
    f.write_text(
        "\n".join(
            [lines[0]] + [",".join(r.split(",")[:2] + [f"day-{k}"] + r.split(",")[3:]) for k, r in enumerate(lines[1:])]
        )
        + "\n"
    )
    return folder, f


def test_repeated_row_errors_are_summarized_with_their_count(tmp_path):
    """3,000 rows with an unparsable start: `ett validate` shows the first few and one line with the count of the rest;
    `--json` still lists every one."""
    folder, f = _every_start_unparsable(tmp_path, 3_000)
    run = subprocess.run([*ETT, "validate", str(folder)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) < 20, lines[:30]
    assert f"{f}, row 1, field 'start': unparsable or implausible timestamp: day-0" in lines
    assert any("2,995 more rows" in ln and "field 'start'" in ln and str(f) in ln for ln in lines), lines
    assert lines[-1].startswith("3000 problem(s)")
    js = subprocess.run([*ETT, "validate", str(folder), "--json"], capture_output=True, text=True, timeout=300)
    assert len(json.loads(js.stdout)["problems"]) == 3_000
    summ = subprocess.run([*ETT, "summarize", str(folder)], capture_output=True, text=True, timeout=300)
    assert summ.returncode == 2 and len(summ.stderr.strip().splitlines()) < 20
    assert "2,995 more rows" in summ.stderr


def test_different_problems_are_not_merged(tmp_path):
    folder, f = _every_start_unparsable(tmp_path, 8)
    lines = f.read_text().splitlines()
    lines[3] = lines[3].replace("completed", "exploded")
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError) as info:
        load_trace(folder)
    from ettcore.errors import summarize_problems

    shown = summarize_problems(info.value.problems, first=5)
    assert sum("more rows" in s for s in shown) == 1  # the 8 start problems: 5 shown, 3 counted
    assert any("unknown end_reason exploded" in s for s in shown)  # the one end_reason problem is shown on its own
