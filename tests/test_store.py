"""The fleet store (ettcore.store): a store built by incremental ingests equals a one-shot measurement of the union.

The traces are SYNTHETIC (tests/trace_strategies.py, random valid traces).  The one-shot side is
ettcore.metric on a trace folder holding the latest version of every job, whose agreement with the plain-Python
reference is tests/test_metric_properties.py's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from test_metric_properties import _settings
from trace_strategies import traces, write_trace_folder

from ettcore import metric, store
from ettcore.errors import InputError
from ettcore.metric import hangs, stalls
from ettcore.trace.load import load_trace

ROOT = Path(__file__).resolve().parents[1]


def _subset(trace: dict, jobs: set[str]) -> dict:
    return {
        "jobs": None if trace["jobs"] is None else [r for r in trace["jobs"] if r["job_id"] in jobs],
        "attempts": [r for r in trace["attempts"] if r["job_id"] in jobs],
        "spans": [r for r in trace["spans"] if r["job_id"] in jobs],
    }


def _figures(t) -> dict[str, pl.DataFrame]:
    """Every figure a store keeps or sums: per job (with causes, paces and stalls), per group, the trends (the
    stored fleet slots) and the running jobs' progress."""
    return {
        "jobs": metric.job_summary(t),
        "causes": metric.job_causes(t),
        "fleet": metric.fleet_summary(t),
        "by_model": metric.fleet_summary(t, by="model"),
        "fleet_causes": metric.cause_summary(t),
        "day": metric.trend(t, "day"),
        "week": metric.trend(t, "week"),
        "hour": metric.trend(t, "hour"),
        "rolling": metric.trend(t, "hour", window="3h"),
        "job_stalls": stalls.job_stalls(t),
        "stalls": stalls.train_stalls(t),
        "live": hangs.live_progress(t),  # the running jobs (the store reads only their rows)
    }


def _assert_same(a: dict, b: dict) -> None:
    for k in a:
        assert_frame_equal(a[k], b[k], check_exact=False, rel_tol=1e-12, abs_tol=1e-9, check_dtypes=False)


@_settings(8)  # derandomized; ETT_PROPERTY_EXAMPLES scales the count (test_metric_properties)
@given(traces(), traces(max_jobs=2), st.randoms(use_true_random=False))
def test_incremental_store_equals_one_shot(trace, other, rnd):
    job_ids = sorted({r["job_id"] for r in trace["attempts"]})
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        one_shot = _figures(load_trace(write_trace_folder(trace, tmp / "union")))
        # batches of jobs, in random order, one of them twice; one job first arrives with half its spans (a running
        # job seen early, or a row corrected later) and then whole; a second source (job ids like the first's: jobs
        # are keyed by source and id) comes in between and is removed at the end (its latest instant may be later than
        # the first source's: each source's running jobs are measured to its own horizon, so neither moves the other)
        batches = [set() for _ in range(rnd.randint(1, 3))]
        for j in job_ids:
            rnd.choice(batches).add(j)
        batches = [b for b in batches if b]
        order = batches + [rnd.choice(batches)]
        rnd.shuffle(order)
        early = rnd.choice(job_ids)
        spans = [r for r in trace["spans"] if r["job_id"] == early]
        partial = _subset(trace, {early})
        partial["spans"] = spans[: len(spans) // 2]
        s = tmp / "fleet.duckdb"  # on either grid: the hourly store sums hours, the daily one days
        store.ingest_path(s, write_trace_folder(partial, tmp / "early"), grid=rnd.choice(["day", "hour"]))
        last = None
        other_at = rnd.randint(0, len(order) - 1)
        for i, b in enumerate(order):
            if i == other_at:
                store.ingest_path(s, write_trace_folder(other, tmp / "other"), source="other")
            last = store.ingest_path(s, write_trace_folder(_subset(trace, b), tmp / f"b{i}"))
        again = store.ingest_path(s, write_trace_folder(_subset(trace, order[-1]), tmp / "again"))
        assert (len(again.new), len(again.changed)) == (0, 0)
        assert last is not None
        removal = store.remove_source(s, "other")
        assert removal.jobs == len({r["job_id"] for r in other["attempts"]})
        _assert_same(_figures(store.open_store(s)), one_shot)


T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _two_versions(tmp: Path):
    base = {
        "jobs": [{"job_id": "a", "model": "m", "gpus": 2}, {"job_id": "b", "model": "m", "gpus": 1}],
        "attempts": [
            {"job_id": "a", "attempt": 0, "start": T0 + 0, "end": T0 + 3_600_000, "end_reason": "completed"},
            {"job_id": "b", "attempt": 0, "start": T0 + 0, "end": T0 + 7_200_000, "end_reason": "completed"},
        ],
        "spans": [
            {
                "job_id": "a",
                "attempt": 0,
                "phase": "train",
                "start": T0 + 600_000,
                "end": T0 + 3_600_000,
                "cursor_start": 0,
                "cursor_end": 100,
            },
            {
                "job_id": "b",
                "attempt": 0,
                "phase": "train",
                "start": T0 + 0,
                "end": T0 + 3_600_000,
                "cursor_start": 0,
                "cursor_end": 100,
            },
        ],
    }
    later = {k: [dict(r) for r in v] for k, v in base.items()}
    later["attempts"][1]["end_reason"] = "failure"
    return write_trace_folder(base, tmp / "v1"), write_trace_folder(later, tmp / "v2")


def test_same_source_twice_and_a_replaced_job(tmp_path, capsys):
    from ettcore.cli import main

    v1, v2 = _two_versions(tmp_path)
    s = tmp_path / "s.duckdb"
    assert main(["ingest", str(s), str(v1)]) == 0
    assert main(["ingest", str(s), str(v1)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "2 new, 0 changed" in out[0] and "0 new, 0 changed" in out[1]
    assert main(["ingest", str(s), str(v2)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "0 new, 1 changed" in out[0]
    assert out[1] == "note: job 'b' replaced as a whole: attempts.end_reason differ"
    jobs = metric.job_summary(store.open_store(s))
    # by hand: b ran 2 h, trained the first hour, then failed: 50 %, one interruption
    assert jobs.filter(pl.col("job_id") == "b").select("ett_pct", "nof").row(0) == (50.0, 1)


def test_a_store_that_kept_the_attempts_raw_text_still_compares(tmp_path, capsys, monkeypatch):
    """A store made while the attempts' ``*_raw`` columns were kept (their digests cover them) keeps them: the same
    source again is "0 new, 0 changed", and a changed attempt is still found and named."""
    from ettcore.cli import main
    from ettcore.store import db, refresh
    from ettcore.trace.load import quote_ident

    def as_before(con):  # the rows as a store of the same version stored them before: only a span's raw text left out
        for table in db.ROW_TABLES:
            raw = [c for c in db.columns(con, f"clean_{table}") if table == "spans" and c.endswith("_raw")]
            drop = f" EXCLUDE ({', '.join(quote_ident(c) for c in raw)})" if raw else ""
            con.execute(f"CREATE OR REPLACE TEMP VIEW ett_in_{table} AS SELECT *{drop} FROM clean_{table}")

    v1, v2 = _two_versions(tmp_path)
    s = tmp_path / "s.duckdb"
    with monkeypatch.context() as m:
        m.setattr(refresh, "_incoming_views", as_before)
        assert main(["ingest", str(s), str(v1)]) == 0
    assert main(["ingest", str(s), str(v1)]) == 0
    assert main(["ingest", str(s), str(v2)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "2 new, 0 changed" in out[0] and "0 new, 0 changed" in out[1] and "0 new, 1 changed" in out[2]
    assert out[3] == "note: job 'b' replaced as a whole: attempts.end_reason differ"
    assert {"start_raw", "end_raw"} <= set(_stored_columns(s, "rows_attempts"))
    # every stored attempt, b's new one too, has its raw text: the store's columns stayed as they were
    with duckdb.connect(str(s), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM rows_attempts WHERE start_raw IS NULL").fetchall()[0][0] == 0


def _stored_columns(path: Path, table: str) -> list[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]


def test_a_new_store_keeps_no_raw_text_of_attempts_or_spans(tmp_path):
    v1, _v2 = _two_versions(tmp_path)
    s = tmp_path / "s.duckdb"
    store.ingest_path(s, v1)
    for table in ("rows_attempts", "rows_spans"):
        cols = _stored_columns(s, table)
        assert not [c for c in cols if c.endswith("_raw")], (table, cols)
    assert "gpus_raw" in _stored_columns(s, "rows_jobs")  # the jobs' stays (metric_jobs.sql names it)
    # attempts with a node list (the multi-node campaign): the list is kept, their raw text is not
    m = tmp_path / "m.duckdb"
    store.ingest_path(m, ROOT / "data" / "slurm-multinode" / "trace")
    cols = _stored_columns(m, "rows_attempts")
    assert "nodes" in cols and not [c for c in cols if c.endswith("_raw")], cols


def test_a_refresh_that_replaces_many_jobs_prints_twenty_notes_and_the_count(tmp_path, capsys):
    """25 jobs, each with one train span; the second version ends every span 1 s earlier: 25 jobs replaced, 20
    notes and "and 5 more" by default, 25 notes with --all-notes."""
    from ettcore.cli import main

    def version(cut_ms: int) -> dict:
        ids = [f"j{k:02d}" for k in range(25)]
        return {
            "jobs": [{"job_id": j, "model": "m", "gpus": 1} for j in ids],
            "attempts": [
                {"job_id": j, "attempt": 0, "start": T0, "end": T0 + 3_600_000, "end_reason": "completed"} for j in ids
            ],
            "spans": [
                {
                    "job_id": j,
                    "attempt": 0,
                    "phase": "train",
                    "start": T0,
                    "end": T0 + 3_600_000 - cut_ms,
                    "cursor_start": 0,
                    "cursor_end": 100,
                }
                for j in ids
            ],
        }

    v1, v2 = write_trace_folder(version(0), tmp_path / "v1"), write_trace_folder(version(1000), tmp_path / "v2")
    for extra, notes in (([], 20), (["--all-notes"], 25)):
        s = tmp_path / f"s{notes}.duckdb"
        assert main(["ingest", str(s), str(v1)]) == 0
        capsys.readouterr()
        assert main(["ingest", str(s), str(v2), *extra]) == 0
        out = capsys.readouterr().out.splitlines()
        assert "0 new, 25 changed" in out[0]
        said = [x for x in out[1:] if x.startswith("note: job ")]
        assert len(said) == notes and said[0] == "note: job 'j00' replaced as a whole: spans.end_ms differ"
        tail = [x for x in out[1:] if not x.startswith("note: job ")]
        assert tail == (["note: and 5 more of the kind (--all-notes prints every one)"] if notes == 20 else [])


def test_bad_source_leaves_the_store_unchanged(tmp_path):
    v1, _ = _two_versions(tmp_path)
    s = tmp_path / "s.duckdb"
    store.ingest_path(s, v1)
    before = s.read_bytes()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "attempts.csv").write_text(
        "job_id,attempt,start,end,end_reason\nc,0,2026-01-01T00:00:00,notatime,completed\n"
    )
    (bad / "spans.csv").write_text("job_id,attempt,phase,start,end\n")
    with pytest.raises(InputError) as e:
        store.ingest_path(s, bad)
    p = e.value.problems[0]
    assert (Path(p.file).name, p.row, p.field) == ("attempts.csv", 1, "end")
    assert s.read_bytes() == before
    r = store.ingest_path(s, bad, skip_invalid=True)
    assert r.skipped == 1
    con = duckdb.connect(str(s), read_only=True)
    assert con.execute("SELECT job_id, field FROM ett_skipped").fetchall() == [("c", "end")]


def test_other_version_and_damaged_store(tmp_path):
    v1, _ = _two_versions(tmp_path)
    s = tmp_path / "s.duckdb"
    store.ingest_path(s, v1)
    con = duckdb.connect(str(s))
    con.execute("UPDATE ett_store SET value = '99' WHERE key = 'version'")
    con.close()
    with pytest.raises(InputError, match="version '99'"):
        store.open_store(s)
    damaged = tmp_path / "d.duckdb"
    data = bytearray(s.read_bytes())
    data[5000:9000] = b"\x00" * 4000
    damaged.write_bytes(bytes(data))
    r = subprocess.run([sys.executable, "-m", "ettcore.cli", "summarize", str(damaged)], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and str(damaged) in r.stderr
    assert "Traceback" not in r.stderr


def test_a_reader_waits_for_a_refresh_bounded(tmp_path):
    v1, _ = _two_versions(tmp_path)
    s = tmp_path / "s.duckdb"
    store.ingest_path(s, v1)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb,sys; c=duckdb.connect({str(s)!r}); print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    reader = subprocess.Popen(
        [sys.executable, "-m", "ettcore.cli", "summarize", str(s), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**__import__("os").environ, "ETT_STORE_WAIT": "60"},
    )
    said = reader.stderr.readline()  # the reader finds the store held and says it waits; then the holder lets go
    holder.stdin.close()
    holder.wait()
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, said + err
    assert "waiting up to 60 s" in said, said
    assert json.loads(out)["fleet"], out
    r = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb,time; c=duckdb.connect({str(s)!r}); print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert r.stdout.readline().strip() == "held"
    q = subprocess.run(
        [sys.executable, "-m", "ettcore.cli", "ingest", str(s), str(v1)],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "ETT_STORE_WAIT": "0.5"},
    )
    r.kill()
    r.wait()
    assert q.returncode == 2 and "held by another process" in q.stderr


def _cut(lines: list[str], t: int) -> str:
    """The bundled sacct export as a snapshot taken at ``t`` (epoch s): later submissions absent, later starts
    PENDING, later ends RUNNING."""
    head, rows = lines[0], lines[1:]
    cols = head.split("|")
    i = {c: cols.index(c) for c in ("State", "Submit", "Start", "End", "NodeList", "ExitCode")}
    out = [head]
    for line in rows:
        f = line.split("|")
        if int(f[i["Submit"]]) > t:
            continue
        if int(f[i["Start"]]) > t:
            f[i["State"]], f[i["Start"]], f[i["End"]], f[i["NodeList"]] = (
                "PENDING",
                "Unknown",
                "Unknown",
                "None assigned",
            )
        elif int(f[i["End"]]) > t:
            f[i["State"]], f[i["End"]] = "RUNNING", "Unknown"
        out.append("|".join(f))
    return "\n".join(out) + "\n"


def test_slurm_campaign_replayed_as_snapshots(tmp_path, capsys):
    from ettcore.cli import main

    export = ROOT / "data" / "slurm-fleet" / "sacct.txt"
    lines = export.read_text().strip().splitlines()
    cols = lines[0].split("|")
    starts = sorted(int(r.split("|")[cols.index("Start")]) for r in lines[1:])
    s = tmp_path / "s.duckdb"
    seen = ""
    for k, t in enumerate((starts[len(starts) // 4], starts[len(starts) // 2], starts[-1])):
        snap = tmp_path / f"snap{k}.txt"
        snap.write_text(_cut(lines, t))
        seen += snap.read_text()
        assert main(["ingest", str(s), str(snap), "--as-of", str(t)]) == 0
    assert "PENDING" in seen and "RUNNING" in seen
    assert main(["ingest", str(s), str(export)]) == 0
    assert main(["import", "slurm", str(export), "--out", str(tmp_path / "one")]) == 0
    capsys.readouterr()
    _assert_same(_figures(store.open_store(s)), _figures(load_trace(tmp_path / "one")))


@pytest.mark.parametrize(
    "grid, argv",
    [
        ("day", ["stalls"]),
        ("day", ["opportunities"]),
        ("day", ["summarize", "--by", "team", "--json"]),
        ("day", ["summarize", "--since", "2026-01-06T00:00:00Z", "--json"]),  # on the stored grid: the stored cells
        ("day", ["summarize", "--since", "2026-01-05T01:00:00Z", "--json"]),  # off it: attributed again, said so
        ("hour", ["summarize", "--since", "2026-01-05T01:00:00Z", "--json"]),  # on an hourly store's grid
        ("day", ["trend", "--every", "day", "--json"]),  # the stored sums
        ("day", ["trend", "--every", "hour", "--window", "3h", "--json"]),  # finer than the grid: attributed again
        ("hour", ["trend", "--every", "hour", "--window", "3h", "--json"]),  # an hourly store's sums
        ("hour", ["trend", "--every", "15m", "--json"]),  # finer than the stored grid: attributed again from the rows
        ("day", ["stalls", "--stall-after", "120"]),  # another threshold than the stored stalls': judged again
        ("day", ["trend", "--every", "5m", "--json"]),  # finer than the stored daily grid: attributed again
        ("day", ["export", "prometheus"]),
    ],
)
def test_commands_on_a_store_print_what_they_print_on_the_trace(grid, argv, tmp_path, capsys):
    from ettcore.cli import main

    sample = ROOT / "data" / "sample"
    s = tmp_path / "s.duckdb"
    store.ingest_path(s, sample, grid=grid)
    cmd = argv[:2] if argv[0] == "export" else argv[:1]
    rest = argv[len(cmd) :]

    def out(where):
        assert main([*cmd, str(where), *rest]) == 0
        # the input's path and kind (the JSON envelope's input) are what differs
        return [x for x in capsys.readouterr().out.splitlines() if str(where) not in x and '"kind": ' not in x]

    assert out(s) == out(sample)


@pytest.mark.parametrize("how", ["stored", "--as-of", "off-grid window", "--mapping"])
def test_several_sources_group_by_source_stored_or_attributed_again(how, tmp_path):
    """A store of two sources groups by ``source`` whether its stored results answer or the rows are attributed
    again (another as-of, a window off the grid, another mapping): each source's row equals the fleet of that
    source's trace measured alone, the same way (the sample's two jobs, one a source)."""
    sample = ROOT / "data" / "sample"
    s = tmp_path / "fleet.duckdb"
    folders = {}
    for src, job in (("a", "worked-example"), ("b", "sample-preempted")):
        folders[src] = tmp_path / src
        folders[src].mkdir()
        for table in ("jobs", "attempts", "spans"):
            lines = (sample / f"{table}.csv").read_text().splitlines()
            (folders[src] / f"{table}.csv").write_text(
                "\n".join([lines[0], *[ln for ln in lines[1:] if ln.split(",")[0] == job]]) + "\n"
            )
        store.ingest_path(s, folders[src], source=src)
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("phases:\n  - {phase: checkpoint_load, component: pt2_compile}\n")
    kw = {
        "stored": {},
        "--as-of": {"as_of": "2026-01-05T04:30:00Z"},
        "off-grid window": {"since": "2026-01-05T00:30:00Z", "until": "2026-01-05T07:00:00Z"},
        "--mapping": {"mapping": str(mapping)},
    }[how]
    t = store.open_store(s, **kw)
    assert (t.recomputed is None) == (how == "stored")
    by_source = metric.fleet_summary(t, by="source").sort("source")
    assert by_source["source"].to_list() == ["a", "b"]
    for i, src in enumerate(("a", "b")):
        alone = metric.fleet_summary(load_trace(folders[src], **kw)).drop("group", strict=False)
        row = by_source[i].drop("source")
        for col in alone.columns:
            if col in row.columns:
                assert row[col].to_list() == pytest.approx(alone[col].to_list(), rel=1e-12), (src, col)
