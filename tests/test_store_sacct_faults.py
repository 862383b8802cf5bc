"""A failing or slow ``sacct`` during ``ett ingest STORE --slurm``: a fake ``sacct`` on ``PATH``.

The fake (written by the test, a Python script) answers the two calls of a poll (``ettcore.importers.sacct_poll``)
from an export file the test writes (SYNTHETIC rows in sacct's own text layout, ``tests/test_import_slurm.py``'s
``row``): job ids for ``--format=JobIDRaw``, the header and the rows of the ``--jobs`` asked for otherwise.  Told by
``FAKE_SACCT_MODE`` it hangs, exits non-zero with sacct's own kind of message, or prints the table cut in the middle
of its last row.  Each fault must leave the store byte for byte as it was (the file and the folder's listing) and
say so in one line naming ``sacct``, exit 2, no traceback; the next poll, with sacct answering again, catches up:
the store then equals a one-shot ingest of the same export, figure by figure.

The real cluster's poll test is ``tests/test_store_slurm_live.py``; this one needs no Slurm.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_import_slurm import row, write_text  # tests/test_import_slurm.py
from test_store import _assert_same  # tests/test_store.py

from ettcore import metric, store
from ettcore.importers.frames import write_import
from ettcore.importers.slurm import import_sacct

ETT = [sys.executable, "-m", "ettcore.cli"]

FAKE = """#!{python}
import os, sys, time
mode = os.environ.get("FAKE_SACCT_MODE", "ok")
lines = [x for x in open(os.environ["FAKE_SACCT_EXPORT"]).read().splitlines() if x.strip()]
header, rows = lines[0], lines[1:]
raw = header.split("|").index("JobIDRaw")
if mode == "hang":
    time.sleep(120)
if mode == "fail":
    print("sacct: error: Problem talking to the database: Connection refused", file=sys.stderr)
    sys.exit(1)
argv = sys.argv[1:]
if "--format=JobIDRaw" in argv:
    print("\\n".join(dict.fromkeys(r.split("|")[raw] for r in rows)))
    sys.exit(0)
asked = set(argv[argv.index("--jobs") + 1].split(","))
text = "\\n".join([header, *(r for r in rows if r.split("|")[raw] in asked)]) + "\\n"
if mode == "truncated":
    text = text[: len(text) - len(rows[-1]) // 2 - 1]  # cut in the middle of the last row
sys.stdout.write(text)
"""


@pytest.fixture
def fake_sacct(tmp_path) -> dict:
    """An environment whose ``PATH`` finds the fake ``sacct`` first; ``FAKE_SACCT_EXPORT`` names what it answers."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "sacct"
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=os.getcwd())
    return env


def _exports(tmp_path: Path) -> tuple[Path, Path]:
    """Two SYNTHETIC exports of one cluster: the first with job 2 running, the later one with it ended and a new job."""
    t = int(time.time()) - 2 * 86400
    first = [
        row("1", "COMPLETED", t, t + 60, t + 3600, gpus=4),
        row("2", "RUNNING", t, t + 120, None, gpus=2),
        row("3", "FAILED", t, t + 30, t + 900, exit_code="1:0", gpus=1),
    ]
    later = [
        row("1", "COMPLETED", t, t + 60, t + 3600, gpus=4),
        row("2", "COMPLETED", t, t + 120, t + 7200, gpus=2),
        row("3", "FAILED", t, t + 30, t + 900, exit_code="1:0", gpus=1),
        row("4", "COMPLETED", t + 3000, t + 3100, t + 5000, gpus=8),
    ]
    for rows in (first, later):  # sacct's DBIndex: a run's own number (a poll keys runs by it)
        for r in rows:
            r["DBIndex"] = str(100 + int(r["JobIDRaw"]))
    return write_text(tmp_path / "first.txt", first), write_text(tmp_path / "later.txt", later)


def _poll(fleet: Path, env: dict, export: Path, mode: str, *extra: str) -> subprocess.CompletedProcess:
    since = str(int(time.time()) - 3 * 86400)
    run_env = dict(env, FAKE_SACCT_EXPORT=str(export), FAKE_SACCT_MODE=mode)
    return subprocess.run(
        [*ETT, "ingest", str(fleet), "--slurm", "--poll-since", since, *extra],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _bytes(fleet: Path) -> tuple[bytes, list[str]]:
    """The store file's bytes and its folder's listing (a write-ahead log left behind would show)."""
    return fleet.read_bytes(), sorted(p.name for p in fleet.parent.iterdir())


FAULTS = {
    "hang": ("gave no answer within 1 s", ("--sacct-timeout", "1s")),
    "fail": ("failed (exit 1): sacct: error: Problem talking to the database", ()),
    "truncated": ("printed a table cut short or malformed", ()),
}


@pytest.mark.parametrize("mode", list(FAULTS))
def test_a_failing_sacct_leaves_the_store_unchanged_and_the_next_poll_catches_up(mode, fake_sacct, tmp_path):
    first, later = _exports(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    fleet = data / "fleet.duckdb"
    ok = _poll(fleet, fake_sacct, first, "ok")
    assert ok.returncode == 0, ok.stderr
    before = _bytes(fleet)

    said, extra = FAULTS[mode]
    t0 = time.monotonic()
    bad = _poll(fleet, fake_sacct, later, mode, *extra)
    assert bad.returncode == 2, (bad.stdout, bad.stderr)
    lines = bad.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ett: sacct") and said in lines[0], bad.stderr
    assert "Traceback" not in bad.stderr
    if mode == "hang":
        assert time.monotonic() - t0 < 60  # the timeout, not the fake's 120 s sleep
    assert _bytes(fleet) == before  # byte for byte, and no file added beside it

    again = _poll(fleet, fake_sacct, later, "ok")
    assert again.returncode == 0, again.stderr
    one_shot = tmp_path / "one-shot.duckdb"
    store.ingest_path(one_shot, _imported(later, tmp_path / "later-trace"))
    got, want = store.open_store(fleet), store.open_store(one_shot)
    _assert_same(_job_figures(got), _job_figures(want))
    assert _job_figures(got)["jobs"].height == 4


def _imported(export: Path, out: Path) -> Path:
    frames, report = import_sacct([export])
    write_import(out, frames, report)
    return out


def _job_figures(t) -> dict:
    """The figures of ended jobs (the store's analysis time, a poll's clock reading, moves none of them)."""
    return {
        "jobs": metric.job_summary(t).sort("job_id"),
        "causes": metric.job_causes(t),
        "fleet": metric.fleet_summary(t),
    }


def test_sacct_timeout_is_an_option_of_slurm_polls_only(tmp_path):
    trace = Path("data/sample")
    out = subprocess.run(
        [*ETT, "ingest", str(tmp_path / "s.duckdb"), str(trace), "--sacct-timeout", "5s"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == "ett: --sacct-timeout, field 'sacct_timeout': is an option of --slurm polls"
