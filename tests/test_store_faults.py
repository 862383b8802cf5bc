"""The fleet store's housekeeping and faults: removing a source, compaction, kills, two refreshes at once, readers
during a refresh (ettcore.store).

Every operation that writes a store (a refresh, a source's removal, a compaction) is run as the ``ett`` command and
killed with SIGKILL at each of its named steps (``ETT_STORE_KILL_AT``, the test hook of ``ettcore.store.db.step``)
and at random instants while it holds the store; each time the store must still open and hold exactly what it held
before, or, when the kill came after the commit, exactly what the operation leaves when it is not killed.  The fleets
are SYNTHETIC (``ettcore.synthetic.generator``, scenario ``fleet``).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from ettcore import metric, store
from ettcore.store.db import STEPS
from ettcore.synthetic.generator import generate

VOLATILE = {"ett_ingests": ("ingested_at", "seconds"), "ett_removals": ("removed_at",)}  # clock readings
ETT = [sys.executable, "-m", "ettcore.cli"]


NUM = "CAST(regexp_extract(job_id, '(\\d+)$', 1) AS BIGINT)"  # a generated job's number


def _split(full: Path, out: Path, where: str, changed: str | None = None) -> Path:
    """A trace folder of the jobs of ``full`` whose number satisfies ``where`` (SQL on ``{n}``); ``changed``: the
    jobs (same form) whose last span ends 1 s earlier (a corrected row)."""
    con = duckdb.connect()
    out.mkdir(parents=True)
    for t in ("jobs", "attempts", "spans"):
        q = f"SELECT * FROM read_parquet('{full}/{t}/*.parquet') WHERE {where.format(n=NUM)}"
        if t == "spans" and changed:
            last = (
                'row_number() OVER (PARTITION BY job_id ORDER BY attempt DESC, start DESC, "end" DESC) = 1 '
                f"AND {changed.format(n=NUM)}"
            )
            q = (
                f'SELECT * EXCLUDE (last) REPLACE (CASE WHEN last THEN greatest(start, "end" - INTERVAL 1 SECOND) '
                f'ELSE "end" END AS "end") FROM (SELECT *, {last} AS last FROM ({q}))'
            )
        con.execute(f"COPY ({q}) TO '{out}/{t}.parquet' (FORMAT parquet)")
    (out / "trace.json").write_text('{"synthetic": true, "description": "SYNTHETIC test fleet"}\n')
    return out


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> dict[str, Path]:
    """A base store and what each operation applies to it: ``day`` (jobs 40-69, 40-44 with a corrected row), a
    second source ``other`` (another fleet, its ids like the first's)."""
    tmp = tmp_path_factory.mktemp("faults")
    generate("fleet", tmp / "full", n_jobs=70, seed=3, chunk_jobs=20)
    generate("fleet", tmp / "other-full", n_jobs=15, seed=4, chunk_jobs=10)
    base = _split(tmp / "full", tmp / "base", "{n} < 50")
    day = _split(tmp / "full", tmp / "day", "{n} >= 40", changed="{n} < 45")
    other = _split(tmp / "other-full", tmp / "other", "{n} >= 0")
    s = tmp / "base.duckdb"
    store.ingest_path(s, base)
    store.ingest_path(s, other, source="other")
    return {"store": s, "day": day, "base": base, "tmp": tmp}


def state(path: Path, volatile: bool = True) -> dict[str, list]:
    """Every table of the store, rows sorted; ``volatile=False`` leaves out the clock readings."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        out = {}
        for (t,) in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall():
            skip = () if volatile else VOLATILE.get(t, ())
            cols = ", ".join(f'"{c}"' for c, *_ in con.execute(f'DESCRIBE "{t}"').fetchall() if c not in skip)
            out[t] = sorted(con.execute(f'SELECT {cols} FROM "{t}"').fetchall(), key=repr)
        return out
    finally:
        con.close()


OPERATIONS = {
    "refresh": lambda s, f: ["ingest", str(s), str(f["day"])],
    "remove-source": lambda s, f: ["store", "remove-source", str(s), "other"],
    "compact": lambda s, f: ["store", "compact", str(s)],
}
KILL_POINTS = {  # the steps each operation passes (ettcore.store.db.STEPS)
    "refresh": [s for s in STEPS if s not in ("removed", "copied", "swapped", "exported", "published")],
    "remove-source": ["attached", "removed", "summed", "recorded", "committed"],
    "compact": ["attached", "copied", "swapped"],
}
RANDOM_KILLS = {"refresh": 5, "remove-source": 3, "compact": 3}


def _run(args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*ETT, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


def _started(args: list[str], env: dict | None = None) -> subprocess.Popen:
    """Start the command and return once it holds the store (its ``attached`` step)."""
    p = subprocess.Popen(
        [*ETT, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "ETT_STORE_PROFILE": "1", **(env or {})},
    )
    for line in p.stderr:
        if line.startswith("ett store: attached"):
            return p
    raise AssertionError(f"{args} ended without holding the store: {p.wait()}")


def _held(args: list[str]) -> float:
    """Run the command to its end; how long it held the store (from its ``attached`` step to its exit)."""
    p = _started(args)
    t = time.monotonic()
    p.communicate()
    assert p.returncode == 0
    return time.monotonic() - t


def _kill_at_random(args: list[str], delay: float) -> None:
    """Start the command; ``delay`` seconds after it has the store (its ``attached`` step), SIGKILL it."""
    p = _started(args)
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.communicate()


@pytest.mark.parametrize("op", list(OPERATIONS))
def test_a_killed_operation_leaves_the_store_as_before_or_as_after(op, fleet, tmp_path):
    before_path = fleet["store"]
    before = state(before_path)
    # the reference: the operation not killed, and how long it holds the store
    ref = tmp_path / "ref.duckdb"
    shutil.copyfile(before_path, ref)
    held = _held(OPERATIONS[op](ref, fleet))
    after = state(ref, volatile=False)
    assert after != state(before_path, volatile=False) or op == "compact"
    outcomes: dict[str, int] = {}
    rnd = random.Random(28)
    points = [("step", k) for k in KILL_POINTS[op]] + [
        ("random", rnd.uniform(0, held)) for _ in range(RANDOM_KILLS[op])
    ]
    for i, (kind, where) in enumerate(points):
        s = tmp_path / f"k{i}.duckdb"
        shutil.copyfile(before_path, s)
        args = OPERATIONS[op](s, fleet)
        if kind == "step":
            r = _run(args, {"ETT_STORE_KILL_AT": where})
            assert r.returncode == -signal.SIGKILL, (where, r.returncode, r.stderr)
        else:
            _kill_at_random(args, where)
        now = state(s)
        if now == before:
            outcome = "before"
        elif {k: v for k, v in state(s, volatile=False).items()} == after:
            outcome = "after"
        else:
            pytest.fail(f"{op} killed at {kind} {where}: the store is neither as before nor as after")
        if op == "compact":  # the same rows either way: a compacted file is the new one, smaller
            outcome = "after" if s.stat().st_size < before_path.stat().st_size else "before"
        if kind == "step":  # before the commit, as before; from it on, as after
            past_commit = KILL_POINTS[op].index(where) >= KILL_POINTS[op].index(
                "swapped" if op == "compact" else "committed"
            )
            assert outcome == ("after" if past_commit else "before"), (op, where, outcome)
        metric.fleet_summary(store.open_store(s))  # it opens and measures
        outcomes[f"{kind} {outcome}"] = outcomes.get(f"{kind} {outcome}", 0) + 1
        if i == 1:  # a kill leaves nothing in the way: the operation then runs and gives the after state
            r = _run(args)
            assert r.returncode == 0, r.stderr
            assert state(s, volatile=False) == after or op == "compact"
        for leftover in s.parent.glob(f".{s.name}.compact-*"):
            assert op == "compact" and outcome == "before"
    print(f"{op}: {len(points)} kills: {outcomes}")
    assert sum(outcomes.values()) == len(points)


def test_two_refreshes_at_once_the_second_waits_and_counts_nothing_twice(fleet, tmp_path):
    s = tmp_path / "s.duckdb"
    shutil.copyfile(fleet["store"], s)
    ref = tmp_path / "ref.duckdb"
    shutil.copyfile(fleet["store"], ref)
    assert _run(["ingest", str(ref), str(fleet["day"])]).returncode == 0
    # the first holds the store mid-transaction for 4 s; the same source comes again meanwhile
    first = _started(["ingest", str(s), str(fleet["day"])], {"ETT_STORE_HOLD_AT": "inserted", "ETT_STORE_HOLD_S": "4"})
    second = _run(["ingest", str(s), str(fleet["day"])])
    out, _err = first.communicate()
    assert first.returncode == 0
    assert "waiting up to" in second.stderr and second.returncode == 0, second.stderr
    assert "30 job(s) read: 20 new, 5 changed" in out  # jobs 40-69: 50-69 new to the store, 40-44 corrected
    assert "30 job(s) read: 0 new, 0 changed" in second.stdout  # it saw the first one's rows: nothing twice
    now, want = state(s, volatile=False), state(ref, volatile=False)
    assert [r[1:5] for r in now.pop("ett_ingests")][:-1] == [r[1:5] for r in want.pop("ett_ingests")]
    assert now == want
    a, b = store.open_store(s), store.open_store(ref)
    assert metric.fleet_summary(a).equals(metric.fleet_summary(b))


def test_a_reader_during_a_refresh_waits_and_reads_the_refreshed_store(fleet, tmp_path):
    s = tmp_path / "s.duckdb"
    shutil.copyfile(fleet["store"], s)
    ref = tmp_path / "ref.duckdb"
    shutil.copyfile(fleet["store"], ref)
    assert _run(["ingest", str(ref), str(fleet["day"])]).returncode == 0
    refresh = _started(
        ["ingest", str(s), str(fleet["day"])], {"ETT_STORE_HOLD_AT": "attributed", "ETT_STORE_HOLD_S": "4"}
    )
    reader = _run(["summarize", str(s), "--json"])
    refresh.communicate()
    assert refresh.returncode == 0
    assert reader.returncode == 0 and "waiting up to 60 s" in reader.stderr, reader.stderr
    want = _run(["summarize", str(ref), "--json"]).stdout
    assert reader.stdout.replace(str(s), "S") == want.replace(str(ref), "S")
    # a wait shorter than the refresh: the reader refuses in one line, exit 2, no lock error
    refresh = _started(
        ["ingest", str(s), str(fleet["day"])], {"ETT_STORE_HOLD_AT": "attributed", "ETT_STORE_HOLD_S": "10"}
    )
    reader = _run(["summarize", str(s), "--json"], {"ETT_STORE_WAIT": "0.5"})
    refresh.communicate()
    assert reader.returncode == 2 and "for more than 0.5 s; try again later" in reader.stderr
    assert len(reader.stderr.strip().splitlines()) == 2 and "Traceback" not in reader.stderr  # waiting, refused


def _figures(path: Path) -> str:
    """What ``ett summarize STORE --json`` prints, the store's own path blanked."""
    r = _run(["summarize", str(path), "--json"])
    assert r.returncode == 0, r.stderr
    return r.stdout.replace(str(path), "STORE")


def test_removing_a_source_then_compacting(fleet, tmp_path):
    s = tmp_path / "s.duckdb"
    shutil.copyfile(fleet["store"], s)
    without = tmp_path / "without.duckdb"  # a store built without the source
    assert _run(["ingest", str(without), str(fleet["base"])]).returncode == 0
    r = _run(["store", "remove-source", str(s), "other"])
    assert r.returncode == 0 and "removed source other" in r.stdout and ": 15 job(s);" in r.stdout, r.stdout
    assert _figures(s) == _figures(without)
    con = duckdb.connect(str(s), read_only=True)
    # ingests 1 (default) and 2 (other), then the removal, from the same sequence
    assert con.execute("SELECT ingest_id, source, jobs FROM ett_removals").fetchall() == [(3, "other", 15)]
    assert con.execute("SELECT count(*) FROM rows_spans WHERE source = 'other'").fetchall() == [(0,)]
    con.close()
    r = _run(["store", "remove-source", str(s), "nosuch"])
    assert r.returncode == 2 and "no source 'nosuch' in the store (its sources: default)" in r.stderr
    before, size = state(s), s.stat().st_size
    r = _run(["store", "compact", str(s)])
    assert r.returncode == 0, r.stderr
    assert s.stat().st_size < size  # the removed source's space is given back
    assert state(s) == before  # every row, id and result as it was
    assert _figures(s) == _figures(without)
    r = _run(["ingest", str(s), str(fleet["day"])])
    assert r.returncode == 0 and r.stdout.startswith(f"ingest 4 into {s}")  # the sequence goes on after the removal
