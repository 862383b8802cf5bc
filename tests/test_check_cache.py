"""The check cache (ettcore.trace.check_cache) never returns a stale clean verdict.

Each test checks a clean trace once (the verdict is kept), then changes the trace in one way a cache keyed on names,
sizes or dates would miss, and loads it again: the checks must run again and find the problem the change made.
A spy on the checks shows that a hit really skips them, so the tests cannot pass with the cache doing nothing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from ettcore import metric
from ettcore.config import SQL_DIR
from ettcore.errors import TraceError
from ettcore.trace import check_cache, checks, load_trace


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("ETT_CACHE_DIR", str(d))
    monkeypatch.delenv("ETT_CHECK_CACHE", raising=False)
    return d


@pytest.fixture
def spy(monkeypatch):
    """Counts the runs of the data checks."""
    calls = []
    real = checks.run_checks

    def counted(con, has_jobs=True, **kw):
        calls.append(1)
        return real(con, has_jobs, **kw)

    monkeypatch.setattr(checks, "run_checks", counted)
    return calls


def csv_trace(tmp_path: Path, sample_trace: Path) -> Path:
    out = tmp_path / "trace"
    shutil.copytree(sample_trace, out)
    return out


def parquet_parts(tmp_path: Path, sample_trace: Path) -> Path:
    """The sample trace with spans as a folder of two Parquet parts (jobs split between them)."""
    out = tmp_path / "parts"
    shutil.copytree(sample_trace, out)
    spans = pl.read_csv(out / "spans.csv", infer_schema=False)
    (out / "spans.csv").unlink()
    (out / "spans").mkdir()
    jobs = sorted(spans["job_id"].unique())
    half = set(jobs[: len(jobs) // 2])
    spans.filter(pl.col("job_id").is_in(half)).write_parquet(out / "spans" / "part-0.parquet")
    spans.filter(~pl.col("job_id").is_in(half)).write_parquet(out / "spans" / "part-1.parquet")
    return out


def same_size_other_bytes(f: Path) -> None:
    """Make one span end before it starts, keeping the file's size and modification time."""
    st = os.stat(f)
    with open(f, newline="") as fh:  # keep the file's own line ends (the sample's are CRLF)
        lines = fh.read().splitlines(keepends=True)
    header = lines[0].rstrip("\r\n").split(",")
    i_start, i_end = header.index("start"), header.index("end")
    for n, line in enumerate(lines[1:], start=1):
        body = line.rstrip("\r\n")
        cells = body.split(",")
        if (
            cells[i_start]
            and cells[i_end]
            and len(cells[i_start]) == len(cells[i_end])
            and cells[i_start] < cells[i_end]
        ):
            cells[i_start], cells[i_end] = cells[i_end], cells[i_start]
            lines[n] = ",".join(cells) + line[len(body) :]
            break
    else:
        raise AssertionError("no span to swap")
    with open(f, "w", newline="") as fh:
        fh.write("".join(lines))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(f).st_size == st.st_size and os.stat(f).st_mtime_ns == st.st_mtime_ns


def refused_again(path: Path, match: str, spy: list) -> None:
    """The second load checks the changed trace again and refuses it."""
    with pytest.raises(TraceError, match=match):
        load_trace(path)
    assert spy == [1, 1]


@pytest.mark.parametrize("partitioned", [False, True])
def test_a_hit_skips_the_checks_and_gives_the_same_results(
    tmp_path, sample_trace, spy, cache_dir, monkeypatch, partitioned
):
    """A hit also builds the span store without its screen's flag (nothing reads it then), in memory or, for a trace
    beyond the memory budget, as Parquet parts by batch of jobs: the same numbers."""
    if partitioned:
        from ettcore.trace import span_store

        monkeypatch.setattr(span_store, "BYTES_PER_SPAN", 10**9)
    path = csv_trace(tmp_path, sample_trace)
    first = load_trace(path)
    assert spy == [1] and len(list(cache_dir.glob("*.json"))) == 1
    second = load_trace(path)
    assert spy == [1], "the second load should take the kept verdict"
    assert second.accounting == first.accounting and second.as_of_ms == first.as_of_ms and second.problems == []
    assert metric.job_summary(second).equals(metric.job_summary(first))
    assert metric.trend(second, "day").equals(metric.trend(first, "day"))
    assert (second.span_store().folder is not None) == partitioned


def test_same_size_and_mtime_other_content_is_checked_again(tmp_path, sample_trace, spy):
    path = csv_trace(tmp_path, sample_trace)
    load_trace(path)
    same_size_other_bytes(path / "spans.csv")
    refused_again(path, "end is before start", spy)


def test_a_touched_file_still_hits(tmp_path, sample_trace, spy):
    path = csv_trace(tmp_path, sample_trace)
    load_trace(path)
    os.utime(path / "spans.csv", ns=(1, 1))
    load_trace(path)
    assert spy == [1], "the key is the content, not the date"


def test_a_replaced_part_is_checked_again(tmp_path, sample_trace, spy):
    path = parquet_parts(tmp_path, sample_trace)
    load_trace(path)
    part = path / "spans" / "part-1.parquet"
    st = os.stat(part)
    bad = pl.read_parquet(part).with_columns(pl.col("phase").str.replace("^train$", "trainn"))
    bad.write_parquet(part)
    os.utime(part, ns=(st.st_atime_ns, st.st_mtime_ns))
    refused_again(path, "unknown phase trainn", spy)


def test_an_added_part_is_checked_again(tmp_path, sample_trace, spy):
    path = parquet_parts(tmp_path, sample_trace)
    load_trace(path)
    extra = (
        pl.read_parquet(path / "spans" / "part-0.parquet").head(1).with_columns(pl.lit("no-such-job").alias("job_id"))
    )
    extra.write_parquet(path / "spans" / "part-2.parquet")
    refused_again(path, "unknown attempt", spy)


def test_a_removed_part_is_counted_again(tmp_path, sample_trace, spy):
    path = parquet_parts(tmp_path, sample_trace)
    before = load_trace(path).accounting["spans"]["read"]
    removed = pl.read_parquet(path / "spans" / "part-1.parquet").height
    (path / "spans" / "part-1.parquet").unlink()
    after = load_trace(path)
    assert spy == [1, 1]
    assert after.accounting["spans"]["read"] == before - removed > 0


def test_another_mapping_is_checked_again(tmp_path, sample_trace, spy):
    path = csv_trace(tmp_path, sample_trace)
    with open(path / "spans.csv", newline="") as fh:
        spans = fh.read().replace(",data_warmup,", ",warmup_v2,")
    assert ",warmup_v2," in spans, "the sample should hold a data_warmup span"
    with open(path / "spans.csv", "w", newline="") as fh:
        fh.write(spans)
    mapping = tmp_path / "map.yaml"
    mapping.write_text("phases:\n  - {phase: warmup_v2, component: trainer_init}\n")
    load_trace(path, mapping=mapping)
    refused_again(path, "unknown phase warmup_v2", spy)


def test_a_trace_with_findings_is_never_kept(tmp_path, sample_trace, spy, cache_dir):
    path = csv_trace(tmp_path, sample_trace)
    same_size_other_bytes(path / "spans.csv")
    for _ in range(2):
        t = load_trace(path, skip_invalid=True)
        assert t.problems
    assert spy == [1, 1] and not list(cache_dir.glob("*.json"))


def test_a_forged_or_damaged_entry_is_a_miss(tmp_path, sample_trace, spy, cache_dir):
    path = csv_trace(tmp_path, sample_trace)
    load_trace(path)
    (entry,) = cache_dir.glob("*.json")
    entry.write_text("{not json")
    load_trace(path)
    entry.write_text('{"format": 1, "key": "someone else", "accounting": {}}')
    load_trace(path)
    assert spy == [1, 1, 1]


def test_the_cache_can_be_turned_off(tmp_path, sample_trace, spy, cache_dir, monkeypatch):
    monkeypatch.setenv("ETT_CHECK_CACHE", "0")
    path = csv_trace(tmp_path, sample_trace)
    load_trace(path)
    load_trace(path)
    assert spy == [1, 1] and not cache_dir.exists()


def test_the_key_is_the_content(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("job_id\nx\n")
    b.write_text("job_id\ny\n")
    rows = [(1, "train", "training", "training")]
    ka = check_cache.key([("jobs", a)], rows)
    assert ka == check_cache.key([("jobs", a)], rows)
    assert ka != check_cache.key([("jobs", b)], rows)
    assert ka != check_cache.key([("jobs", a)], [(1, "train", "training", "other")])
    assert check_cache.key([("jobs", tmp_path / "missing.csv")], rows) is None


@pytest.mark.parametrize(
    "edited,misses",
    [
        ("checks/spans_bad_values.sql", True),
        ("load/row_accounting.sql", True),  # a verdict keeps the accounting and the latest instant
        ("load/default_as_of.sql", True),
        ("store/span_store.sql", True),  # the span store's screen decides which span checks run
        ("store/train_overlap_suspects.sql", True),
        ("store/job_digests.sql", False),  # the fleet store's statements, beside the span store's, check nothing
        ("metric/job_summary.sql", False),
    ],
)
def test_the_code_key_covers_the_sql_that_checks_and_nothing_else(edited, misses, tmp_path, monkeypatch):
    copy = tmp_path / "sql"
    shutil.copytree(SQL_DIR, copy)
    monkeypatch.setattr(check_cache, "SQL_DIR", copy)
    before = check_cache._code_digest()
    with (copy / edited).open("a", encoding="utf-8") as f:
        f.write("\n-- edited\n")
    assert (check_cache._code_digest() != before) is misses


def rewrite_around_the_read(monkeypatch, f: Path, *, before: bool) -> None:
    """The next read of ``f`` (a CSV table, read whole when the trace is opened) sees the file as it is, then
    (``before=False``) or just before it (``before=True``) another writer swaps one span's start and end, as a trace
    appended to while it is refreshed may be changed between the cache's hash and the read."""
    from ettcore.trace import load

    real = load._read_text_table

    def read(src):
        if src.files[0] != f or getattr(read, "done", False):
            return real(src)
        read.done = True
        if before:
            same_size_other_bytes(f)
            return real(src)
        out = real(src)
        same_size_other_bytes(f)
        return out

    monkeypatch.setattr(load, "_read_text_table", read)


def test_a_file_rewritten_after_it_was_read_leaves_no_clean_verdict_for_the_new_content(
    tmp_path, sample_trace, spy, monkeypatch
):
    """The load reads the old content (a snapshot, checked clean); the new content is never taken as checked."""
    path = csv_trace(tmp_path, sample_trace)
    rewrite_around_the_read(monkeypatch, path / "spans.csv", before=False)
    load_trace(path)
    refused_again(path, "end is before start", spy)


def test_a_file_rewritten_between_the_hash_and_the_read_is_checked_on_a_hit(tmp_path, sample_trace, spy, monkeypatch):
    path = csv_trace(tmp_path, sample_trace)
    load_trace(path)  # clean, kept
    rewrite_around_the_read(monkeypatch, path / "spans.csv", before=True)
    refused_again(path, "end is before start", spy)  # the kept verdict was for the content hashed, not the one read
