"""Memory safety: the metric under a deliberately small DuckDB memory limit spills to disk and gives the same answer.

A synthetic fleet (``fleet`` scenario, 3,000 jobs, about 135,000 spans; the
trace says ``"synthetic": true``) is summarized twice: once with DuckDB's
default memory limit and once loaded with ``load_trace(memory_limit=...)`` a few tens of
megabytes (two threads) with a ``temp_directory`` to spill into.  The limit is chosen so the
metric's sorts and hash tables do not fit in it: the test checks that DuckDB
really wrote temporary files, so it cannot pass by the data fitting in memory.
Every output (per-job summary, L2 matrix, fleet totals, daily trend) must be
identical.

A trace whose spans would not fit in half the memory limit is attributed in
batches of jobs (``ettcore.metric.attribution_batches``); the batched result
must be identical too, whether the batch count is chosen from the limit or
forced.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ettcore import metric
from ettcore.synthetic.generator import generate
from ettcore.trace import load_trace

JOBS = 3_000
LIMIT = "48MB"  # measured on this trace: 100 MB spilled nothing, 48 MB spilled about 10 MB


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    return generate("fleet", tmp_path_factory.mktemp("memlimit") / "fleet", n_jobs=JOBS, seed=7, chunk_jobs=1_000)


def everything(trace) -> dict[str, pl.DataFrame]:
    return {
        "jobs": metric.job_summary(trace),
        "l2": metric.l2_matrix(trace).sort(["job_id", "bucket", "phase"]),
        "fleet": metric.fleet_summary(trace),
        "by_model": metric.fleet_summary(trace, by="model").sort("model"),
        "trend": metric.trend(trace, "day"),
    }


class SpillWatch:
    """The files DuckDB wrote directly in the spill folder while the block ran, from the kernel's inotify events.

    The kernel queues an event for every write, so a temporary file that lived only between two looks of a poller (a
    loaded machine runs a poller late) still counts.  Only the folder itself is watched: the span store's parts, in a
    subfolder made at the load, before the watch, are not DuckDB spilling.
    """

    IN_MODIFY = 0x2

    def __init__(self, folder: Path) -> None:
        self.folder, self.written = folder, set()
        self._libc = ctypes.CDLL(None, use_errno=True)

    def __enter__(self) -> "SpillWatch":
        self._fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0 or self._libc.inotify_add_watch(self._fd, bytes(self.folder), self.IN_MODIFY) < 0:
            raise OSError(ctypes.get_errno(), f"inotify on {self.folder}")
        return self

    def __exit__(self, *exc) -> None:
        buf = b""
        try:
            while chunk := os.read(self._fd, 1 << 16):
                buf += chunk
        except BlockingIOError:  # every queued event read
            pass
        finally:
            os.close(self._fd)
        i = 0
        while i < len(buf):  # struct inotify_event: int wd; uint32 mask, cookie, len; char name[len]
            _, mask, _, n = struct.unpack_from("iIII", buf, i)
            name = buf[i + 16 : i + 16 + n].rstrip(b"\0").decode()
            if mask & self.IN_MODIFY and name and not name.endswith("_owner"):
                self.written.add(name)
            i += 16 + n


@pytest.mark.skipif(sys.platform != "linux", reason="the spill check reads Linux inotify events")
def test_small_memory_limit_spills_and_gives_the_same_answer(fleet, tmp_path):
    unlimited = load_trace(fleet)
    assert unlimited.synthetic
    want = everything(unlimited)
    assert want["jobs"].height == JOBS

    spill = tmp_path / "spill"
    spill.mkdir()
    limited = load_trace(fleet, memory_limit=LIMIT, temp_directory=spill)  # the limit holds for the checks too
    limited.con.execute("SET threads = 2")  # memory per thread: keep the test the same on bigger machines
    assert (
        limited.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        != unlimited.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    )
    with SpillWatch(spill) as watch:
        metric.prepare(limited, batches=1)  # one pass: the sorts themselves must spill (batching is tested below)
        got = everything(limited)
    assert watch.written, "DuckDB never spilled: the limit is too generous for this trace to test anything"

    for name in want:
        assert_frame_equal(got[name], want[name], check_exact=True), name


def test_batches_follow_the_memory_limit(fleet):
    """The batch count grows as the limit shrinks; one batch under the default limit.

    The count is read from the connection's limit when the attribution starts, so the small limits are set after the
    load: no query runs under them (loading under 40 MB made the data checks themselves run out of memory when the
    machine was busy, which tested DuckDB, not the batch rule).
    """
    trace = load_trace(fleet)
    assert metric.attribution_batches(trace) == 1
    spans = trace.accounting["spans"]["used"]
    counts = []
    # 210 bytes a span in half of the limit, as DuckDB reports it back (40 MB: 38.1 MiB): typed here from the rule
    for limit, reported_mib in (("40MB", 38.1), ("20MB", 19.0), ("10MB", 9.5)):
        trace.con.execute("SET memory_limit = $v", {"v": limit})
        counts.append(metric.attribution_batches(trace))
        assert counts[-1] == -(-spans * 210 // int(reported_mib * 2**20 / 2)), limit
    assert counts[0] > 1 and counts == sorted(counts) and counts[0] < counts[-1]


@pytest.mark.parametrize("batches", [None, 2, 5, 64])
def test_batched_attribution_gives_the_same_answer(fleet, tmp_path, batches):
    want = everything(load_trace(fleet))
    limited = load_trace(fleet, memory_limit="40MB" if batches is None else None, temp_directory=tmp_path)
    metric.prepare(limited, batches=batches)
    assert limited.attribution.batches == (batches or metric.attribution_batches(limited)) > 1
    got = everything(limited)
    for name in want:
        assert_frame_equal(got[name], want[name], check_exact=True), name
    if batches is None:  # the limit chose the batches at load: the span store's parts are in the temporary directory
        assert limited.spans.folder is not None and limited.spans.folder.is_relative_to(tmp_path)
    del got
    limited.spans.close()  # (also done when the trace is collected)
    assert [p for p in tmp_path.iterdir() if p.name.startswith("ett-")] == [], "the span store's parts are removed"


def test_batched_attribution_with_an_as_of_gives_the_same_answer(fleet):
    """Clipping at an as-of time happens before the batches split the jobs: same frames with 1 and 3 batches."""
    as_of = "2026-03-15T12:00:00Z"
    one = load_trace(fleet, as_of=as_of)
    metric.prepare(one, batches=1)
    three = load_trace(fleet, as_of=as_of)
    metric.prepare(three, batches=3)
    want, got = everything(one), everything(three)
    assert (want["jobs"]["status"] == "running").any(), "the as-of should cut some jobs while they run"
    for name in want:
        assert_frame_equal(got[name], want[name], check_exact=True), name
