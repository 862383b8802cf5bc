"""A damaged store file (truncated, or 4 KiB overwritten with random bytes at points through the file), and a damaged
Parquet file in a store's mirror.

Every measuring command reading it either refuses in one line naming the store (exit 2, no traceback, DuckDB's own
message not passed through, saying how to recover: ingest the sources again into a new store) or, where the damage
lies in a block the command does not read (free space, a table it does not need), answers exactly as on the
undamaged file: never a wrong answer.  DuckDB keeps a checksum of every block; these tests show the store's readers
turn a failed one into that line.  The store holds ``data/sample`` and the bundled Slurm campaign
(``data/slurm-fleet/trace``), two sources.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ettcore.engines.mirror_format import check_files, read_local_pointer

# one pytest-xdist worker builds the store and runs them all (the store and its answers: seconds, once)
pytestmark = pytest.mark.xdist_group("store-corrupt")

ETT = [sys.executable, "-m", "ettcore.cli"]
COMMANDS = {
    "summarize": ["summarize", "{s}", "--json"],
    "info": ["store", "info", "{s}"],
}
OVERWRITTEN = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9]  # where, as a fraction of the file
TRUNCATED = [0.5, 0.99]  # the length kept


def _blank(out: str, s: Path) -> str:
    """What a command printed, the store's path and file size (``ett store info``) blanked."""
    return re.sub(r"\b\d+ bytes\b", "N bytes", out.replace(str(s), "STORE"))


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*ETT, *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def intact(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The undamaged store and what each command prints on it (its path blanked)."""
    s = tmp_path_factory.mktemp("corrupt") / "fleet.duckdb"
    assert _run(["ingest", str(s), "data/sample"]).returncode == 0
    assert _run(["ingest", str(s), "data/slurm-fleet/trace", "--source", "slurm"]).returncode == 0
    out = {}
    for name, args in COMMANDS.items():
        r = _run([a.format(s=s) for a in args])
        assert r.returncode == 0, r.stderr
        out[name] = _blank(r.stdout, s)
    return s, out


def _damaged(intact: Path, to: Path, how: str, where: float) -> Path:
    shutil.copyfile(intact, to)
    size = to.stat().st_size
    if how == "truncated":
        os.truncate(to, int(size * where))
    else:
        with to.open("r+b") as f:
            f.seek(min(int(size * where), size - 4096))
            f.write(random.Random(where).randbytes(4096))
    return to


@pytest.mark.parametrize(
    "how, where", [("overwritten", w) for w in OVERWRITTEN] + [("truncated", w) for w in TRUNCATED]
)
def test_a_damaged_store_is_refused_in_one_line_or_answers_as_the_intact_one(how, where, intact, tmp_path):
    s, want = intact
    bad = _damaged(s, tmp_path / "bad.duckdb", how, where)
    outcomes = {}
    for name, args in COMMANDS.items():
        r = _run([a.format(s=bad) for a in args])
        if r.returncode == 0:
            assert _blank(r.stdout, bad) == want[name], (how, where, name)  # never a wrong answer
            outcomes[name] = "as intact"
            continue
        assert r.returncode == 2, (how, where, name, r.stderr)
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ett: {bad}: "), r.stderr
        assert "Traceback" not in r.stderr and "Error:" not in r.stderr, r.stderr
        assert "ingest" in lines[0] and "new store" in lines[0], r.stderr  # how to recover
        outcomes[name] = "refused"
    print(f"{how} at {where}: {outcomes}")


@pytest.mark.parametrize("how", ["overwritten", "truncated"])
def test_a_damaged_parquet_file_of_the_mirror_is_refused_before_spark_reads_it(how, intact, tmp_path):
    """The mirror's pointer keeps each Parquet file's length and CRC-32; a file damaged since its publish is refused
    in one line naming it, whether Spark is given the store or the mirror folder.  The refusal comes before any Spark
    session: the master given is never reached (nothing listens on its port)."""
    s = tmp_path / "fleet.duckdb"
    shutil.copyfile(intact[0], s)
    m = tmp_path / "mirror"
    assert _run(["store", "publish", str(s), str(m)]).returncode == 0
    check_files(m, read_local_pointer(m))  # as published: accepted
    spans = sorted(m.glob("ingest-*/spans.parquet"))[-1]
    size = spans.stat().st_size
    if how == "truncated":
        os.truncate(spans, size - 100)
    else:
        with spans.open("r+b") as f:
            f.seek(size // 2)
            f.write(random.Random(1).randbytes(64))
    for given in (s, m):
        r = _run(["summarize", str(given), "--engine", "spark", "--spark-master", "spark://127.0.0.1:9", "--json"])
        lines = r.stderr.splitlines()
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert lines[0].startswith(f"ett: {spans}: damaged Parquet mirror: its "), r.stderr
        assert ("length" if how == "truncated" else "content (CRC-32)") in lines[0], r.stderr
        assert "ett store publish STORE NEWDIR" in lines[0], r.stderr
