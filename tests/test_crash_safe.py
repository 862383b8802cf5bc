"""Crash-safe outputs: a run killed while writing never leaves a half output under the final name.

Traces (``ettcore.trace.writer.write_trace``, ``ettcore.synthetic.generator.generate``,
the importers' ``write_import``) and text reports (``ettcore.atomic.write_text``)
are written under a temporary ``.tmp-*`` name and renamed.  These tests run the
writer in a child process and kill it (SIGKILL: no cleanup code runs):

* at a chosen point, by making the child announce that it is in the middle of
  writing and then wait to be killed (deterministic);
* at several moments of a real generator run (black box).

Afterwards the target is either absent (or still the previous complete
output) or complete; nothing but hidden ``.tmp-*`` / ``.old-*`` leftovers
remain beside it; a reader refuses an absent target with a clear error; and
the next run writes a complete output in spite of the leftovers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ettcore import metric
from ettcore.atomic import atomic_path, write_text
from ettcore.config import PROJECT_ROOT, SAMPLE_TRACE
from ettcore.errors import TraceError
from ettcore.trace import load_trace
from ettcore.trace.writer import write_trace

pytestmark = pytest.mark.skipif(os.name != "posix", reason="uses SIGKILL")

READY_TIMEOUT_S = 90


def _frames() -> dict[str, pl.DataFrame]:
    return {
        n: pl.read_csv((SAMPLE_TRACE / f"{n}.csv").read_bytes(), infer_schema=False)
        for n in ("jobs", "attempts", "spans")
    }


def _spawn(code: str, ready: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _kill_when_ready(proc: subprocess.Popen, ready: Path) -> None:
    """Wait until the child wrote ``ready`` (it is mid-write), then SIGKILL it.

    Ready is the file's content, not its existence: ``write_text`` creates the file, then writes; a kill in between
    (a loaded machine may run the test first) would leave it empty and the test reading no path.
    """
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not (ready.exists() and ready.stat().st_size):
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"child ended before it was killed (rc {proc.returncode}): {err.decode()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("child never reached the write")
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _leftovers(parent: Path, target: Path) -> list[str]:
    if not parent.exists():  # killed before the writer made the parent folder
        return []
    return sorted(p.name for p in parent.iterdir() if p.name != target.name)


def _assert_only_hidden_leftovers(parent: Path, target: Path) -> None:
    for name in _leftovers(parent, target):
        assert name.startswith((".tmp-", ".old-")), f"a visible leftover {name!r} beside {target}"


# ----------------------------------------------------------------------------- write_trace killed mid-write

WRITE_TRACE_CHILD = """
import sys, time
from pathlib import Path
import polars as pl
from ettcore.trace import writer as trace_writer

target, ready, fmt = Path({target!r}), Path({ready!r}), {fmt!r}
frames = {{n: pl.read_csv(Path({sample!r}) / f"{{n}}.csv") for n in ("jobs", "attempts", "spans")}}
real = trace_writer._write_table
count = [0]

def slow(df, path, fmt):
    real(df, path, fmt)
    count[0] += 1
    if count[0] == 2:  # two tables written, the third not yet: announce and wait to be killed
        ready.write_text(str(path))
        time.sleep(600)

trace_writer._write_table = slow
trace_writer.write_trace(target, jobs=frames["jobs"], attempts=frames["attempts"], spans=frames["spans"], fmt=fmt,
                         metadata={{"synthetic": True, "source": "tests/test_crash_safe.py"}})
"""


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_killed_write_trace_leaves_nothing_under_the_name(tmp_path, fmt):
    target = tmp_path / "out" / "trace"
    ready = tmp_path / "ready"
    proc = _spawn(
        WRITE_TRACE_CHILD.format(target=str(target), ready=str(ready), fmt=fmt, sample=str(SAMPLE_TRACE)), ready
    )
    _kill_when_ready(proc, ready)
    half = Path(ready.read_text())
    assert half.exists() and half.parent != target, "the child was killed while writing into a temporary folder"
    assert not target.exists(), "a half-written trace is under the final name"
    _assert_only_hidden_leftovers(target.parent, target)
    with pytest.raises(TraceError) as info:
        load_trace(target)
    assert "does not exist" in info.value.problems[0].message
    # the next run is not disturbed by the leftover and writes a complete trace
    f = _frames()
    write_trace(target, jobs=f["jobs"], attempts=f["attempts"], spans=f["spans"], fmt=fmt, metadata={"synthetic": True})
    t = load_trace(target)
    assert {k: v["read"] for k, v in t.accounting.items()} == {"jobs": 4, "attempts": 7, "spans": 47, "rank_timing": 0}


def test_killed_rewrite_keeps_the_previous_trace(tmp_path):
    """Replacing an existing trace: until the new one is complete, the old one stays whole under the name."""
    target = tmp_path / "trace"
    f = _frames()
    old_spans = f["spans"].filter(pl.col("job_id") == "worked-example")
    write_trace(
        target,
        jobs=f["jobs"],
        attempts=f["attempts"].filter(pl.col("job_id") == "worked-example"),
        spans=old_spans,
        metadata={"synthetic": True, "version": "old"},
    )
    (tmp_path / "signals").mkdir()
    ready = tmp_path / "signals" / "ready"
    proc = _spawn(
        WRITE_TRACE_CHILD.format(target=str(target), ready=str(ready), fmt="parquet", sample=str(SAMPLE_TRACE)), ready
    )
    _kill_when_ready(proc, ready)
    assert _leftovers(tmp_path, target) and all(
        n.startswith(".tmp-") or n == "signals" for n in _leftovers(tmp_path, target)
    )
    t = load_trace(target)
    assert t.metadata.get("version") == "old"
    assert t.accounting["spans"]["read"] == old_spans.height
    assert metric.job_summary(t)["job_id"].to_list() == ["worked-example"]


def test_error_mid_write_removes_the_temporary(tmp_path):
    """An exception while writing: nothing under the name, no temporary left, the error propagates."""
    target = tmp_path / "trace"
    f = _frames()
    bad = f["spans"].with_columns(pl.struct(a=pl.lit(1)).alias("nested"))  # CSV cannot hold a struct column
    with pytest.raises(Exception):
        write_trace(target, jobs=f["jobs"], attempts=f["attempts"], spans=bad, fmt="csv")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- text reports killed mid-write

WRITE_TEXT_CHILD = """
import time
from pathlib import Path
from ettcore.atomic import atomic_path

target, ready = Path({target!r}), Path({ready!r})
with atomic_path(target) as tmp:
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("<html><body><h1>half of a new report")
        fh.flush()
        ready.write_text(str(tmp))
        time.sleep(600)
        fh.write("</h1></body></html>")
"""


@pytest.mark.parametrize("existing", [False, True])
def test_killed_report_write_leaves_old_or_nothing(tmp_path, existing):
    target = tmp_path / "reports" / "index.html"
    if existing:
        write_text(target, "<html>old complete report</html>")
    ready = tmp_path / "ready"
    proc = _spawn(WRITE_TEXT_CHILD.format(target=str(target), ready=str(ready)), ready)
    _kill_when_ready(proc, ready)
    half = Path(ready.read_text())
    assert half.exists() and half.name.startswith(".tmp-index.html-")
    if existing:
        assert target.read_text() == "<html>old complete report</html>"
    else:
        assert not target.exists()
    _assert_only_hidden_leftovers(target.parent, target)
    write_text(target, "<html>new</html>")
    assert target.read_text() == "<html>new</html>"


def test_atomic_path_error_keeps_old_file(tmp_path):
    target = tmp_path / "summary.json"
    write_text(target, '{"old": true}')
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text('{"new": ')
            raise RuntimeError("interrupted")
    assert target.read_text() == '{"old": true}'
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


# ----------------------------------------------------------------------- a real generator run killed at several moments

GENERATE_CHILD = """
import sys
from pathlib import Path
from ettcore.synthetic.generator import generate
print("start", flush=True)
generate("representative", Path({target!r}), n_jobs=240, seed=3, chunk_jobs=20)
print("done", flush=True)
"""


def _inventory(folder: Path) -> dict[str, int]:
    """Relative path -> rows of every Parquet file (trace.json -> -1)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(folder))] = pq.read_metadata(p).num_rows if p.suffix == ".parquet" else -1
    return out


def test_generator_killed_at_any_moment(tmp_path):
    """Kill `generate` (12 chunks) at several moments: the trace is absent or exactly the complete one."""
    ref = tmp_path / "ref" / "trace"
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(GENERATE_CHILD.format(target=str(ref)))],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
    )
    assert p.returncode == 0, p.stderr
    complete = _inventory(ref)
    assert sum(n for k, n in complete.items() if k.startswith("jobs")) == 240
    outcomes = []
    for k, delay in enumerate([0.0, 0.15, 0.3, 0.5, 0.8]):
        target = tmp_path / f"run{k}" / "trace"
        proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(GENERATE_CHILD.format(target=str(target)))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
        )
        assert proc.stdout.readline().strip() == "start"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        if target.exists():
            assert _inventory(target) == complete, f"killed after {delay}s: an incomplete trace under the final name"
            outcomes.append("complete")
        else:
            with pytest.raises(TraceError):
                load_trace(target)
            outcomes.append("absent")
        _assert_only_hidden_leftovers(target.parent, target)
    assert "absent" in outcomes, f"no kill landed mid-write ({outcomes}); the test proved nothing"


# ----------------------------------------------------------------------------- a reader never takes in-progress parts


def test_reader_skips_in_progress_part_folders(tmp_path):
    """Part files under hidden or underscore folders (Spark's _temporary/, our .tmp-*) are not read."""
    folder = tmp_path / "trace"
    f = _frames()
    write_trace(folder, jobs=f["jobs"], attempts=f["attempts"], spans=f["spans"])
    spans = pl.read_parquet(folder / "spans.parquet")
    (folder / "spans.parquet").unlink()
    (folder / "spans" / "_temporary" / "0").mkdir(parents=True)
    (folder / "spans" / ".tmp-part-x").mkdir()
    spans.write_parquet(folder / "spans" / "part-0.parquet")
    spans[:5].write_parquet(folder / "spans" / "_temporary" / "0" / "part-0.parquet")
    spans[:5].write_parquet(folder / "spans" / ".tmp-part-x" / "part-1.parquet")
    spans[:5].write_parquet(folder / "spans" / ".part-2.parquet")
    t = load_trace(folder)
    assert t.accounting["spans"]["read"] == 47


# -------------------------------------------------------------------- an import killed between the trace and its report

IMPORT_CHILD = """
import pathlib, time
from pathlib import Path
from ettcore.importers.frames import write_import
from ettcore.importers.mlperf import import_logs

target, ready = Path({target!r}), Path({ready!r})
frames, report = import_logs([Path({log!r})], systems_dir=Path({systems!r}))
real = pathlib.Path.write_text

def writing(self, *args, **kwargs):
    # the moment the import report is being written, wherever the importer writes it: announce, wait to be killed
    if "import_report.json" in self.name:
        real(ready, str(self))
        time.sleep(600)
    return real(self, *args, **kwargs)

pathlib.Path.write_text = writing
write_import(target, frames, report)
"""


def test_killed_import_never_leaves_a_trace_without_its_report(tmp_path):
    """`ett import` output is the trace *and* its import report: a kill while writing the report leaves neither or
    both."""
    from ettcore.config import DATA_DIR

    log = DATA_DIR / "mlperf" / "v5.1" / "University-of-Florida" / "hpg.dgxb200x8.n1" / "dlrm_dcnv2" / "result_0.txt"
    target = tmp_path / "out" / "imported"
    ready = tmp_path / "ready"
    proc = _spawn(
        IMPORT_CHILD.format(
            target=str(target), ready=str(ready), log=str(log), systems=str(DATA_DIR / "mlperf" / "systems")
        ),
        ready,
    )
    _kill_when_ready(proc, ready)
    if target.exists():
        assert (target / "import_report.json").is_file() and (target / "import_report.md").is_file(), (
            "a trace without its import report is under the final name: what the import dropped is not said"
        )
    _assert_only_hidden_leftovers(target.parent, target)


# ---------------------------------------------------------------------------- `ett report` killed while a notebook runs

REPORT_CHILD = """
import time
from pathlib import Path
import papermill
from ettcore.present import report

ready = Path({ready!r})

def executing(input_path, output_path, **kwargs):
    # papermill saves the output notebook after every cell: stand in for a kernel half-way through
    Path(output_path).write_text('{{"cells": [{{"cell_type": "code", "source": "half"', encoding="utf-8")
    ready.write_text(str(output_path))
    time.sleep(600)

papermill.execute_notebook = executing
report.run_one({nb!r}, {out!r}, {{}})
"""


@pytest.mark.notebook
def test_killed_report_run_leaves_no_half_notebook(tmp_path):
    """A report run killed mid-notebook must not leave a partial executed notebook under its final name."""
    from ettcore.config import NOTEBOOK_DIR

    notebooks = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]-*.ipynb"))
    if not notebooks:
        pytest.skip("no notebooks yet")
    out = tmp_path / "reports"
    ready = tmp_path / "ready"
    proc = _spawn(REPORT_CHILD.format(ready=str(ready), nb=str(notebooks[0]), out=str(out)), ready)
    _kill_when_ready(proc, ready)
    final = out / f"{notebooks[0].stem}.ipynb"
    assert not final.exists(), f"half-executed notebook left as {final.name}"
    _assert_only_hidden_leftovers(out, final)
