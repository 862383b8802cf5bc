"""``ett ingest STORE SOURCE`` of every kind of source the project reads.

Each kind ingested into a fresh store gives what ``ett import ...`` (or ``ett from-recorder``) and ``ett summarize``
give on the same input with the same importer options: the same ``summarize`` text and JSON, but for the field
naming the input.  The inputs are the bundled data (real: the Slurm campaign, the live job's recorder folder, MLPerf
logs; data/sample is SYNTHETIC) and a SYNTHETIC goodput timeline (tests/test_import_causes.py's).  The importer
options are defined once (``ettcore.cli.import_options``): both commands take each with the same meaning, and a bad
source is refused with file, row and field, exit 2, the store unchanged.  ``--slurm``'s own errors are here too; the
real polls are tests/test_store_slurm_live.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from test_import_causes import _goodput_entries  # tests/test_import_causes.py: a SYNTHETIC timeline

from ettcore import store
from ettcore.cli import build_parser, import_options, main
from ettcore.importers import sacct_poll
from ettcore.store import polls

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
BAD = ROOT / "tests" / "bad_inputs"
FLEET = DATA / "slurm-fleet"
MLPERF_LOG = DATA / "mlperf" / "v3.0" / "NVIDIA" / "dgxh100_n64_ngc23.04_pytorch" / "bert" / "result_0.txt"


def _recorder_without_last_end(tmp: Path) -> Path:
    """The live job's recorder folder (real) with the last attempt of ``live-optimized`` left without its end record:
    running by default, a failure with ``--open-last-attempt failure``."""
    run = tmp / "recorder"
    shutil.copytree(DATA / "live-job" / "recorder", run)
    f = run / "live-optimized-a0002-supervisor-0.jsonl"
    f.write_text("".join(x for x in f.read_text().splitlines(keepends=True) if '"k":"attempt_end"' not in x))
    return run


def _cause_mapping(tmp: Path) -> Path:
    p = tmp / "causes.yaml"
    p.write_text("rules:\n  - {source: goodput, end_reason: failure, cause: infrastructure}\n")
    return p


# kind -> (the `ett import`/`ett from-recorder` command or None for a trace, sources, importer options, a check of
# what the options did, read off the summarize JSON's jobs)
CASES = {
    "trace": (None, lambda t: [DATA / "sample"], lambda t: [], None),
    "sacct-text": (
        ["import", "slurm"],
        lambda t: [FLEET / "sacct.txt"],
        lambda t: [
            "--recorder",
            str(FLEET / "recorder"),
            "--keep-users",
            "--timeout-as",
            "cancelled",
            "--clock-tolerance",
            "3",
        ],  # fmt: skip
        lambda jobs: {j["labels"]["user"] for j in jobs} == {"root"} and any(j["productive_s"] for j in jobs),
    ),
    "sacct-json": (
        ["import", "slurm"],
        lambda t: [FLEET / "sacct.json"],
        lambda t: ["--gpus", "2", "--timezone", "Europe/Berlin"],
        lambda jobs: len(jobs) == 46 and all(j["labels"]["user"].startswith("u-") for j in jobs),
    ),
    "recorder": (
        ["from-recorder"],
        lambda t: [_recorder_without_last_end(t)],
        lambda t: ["--open-last-attempt", "failure"],
        lambda jobs: {j["job_id"]: j["status"] for j in jobs}["live-optimized"] != "running",
    ),
    "mlperf": (
        ["import", "mlperf"],
        lambda t: [DATA / "mlperf" / "v3.0"],
        lambda t: ["--gpus", f"{MLPERF_LOG}=2"],
        lambda jobs: (
            {j["job_id"]: j["gpus"] for j in jobs}["v3.0/NVIDIA/dgxh100_n64_ngc23.04_pytorch/bert/result_0"] == 2
        ),
    ),
    "goodput": (
        ["import", "goodput"],
        lambda t: [_goodput_entries(t)],
        lambda t: ["--gpus", "8", "--cause-mapping", str(_cause_mapping(t))],
        lambda jobs: jobs[0]["gpus"] == 8 and jobs[0]["nof_by_cause"]["infrastructure"] == 1,
    ),
}


def _run(capsys, argv: list) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _summaries(capsys, where: Path) -> tuple[list[str], list[str], dict]:
    """``ett summarize`` text and JSON of ``where``, less the lines naming it."""
    rc, text, err = _run(capsys, ["summarize", where])
    assert rc == 0, err
    rc, js, err = _run(capsys, ["summarize", where, "--json"])
    assert rc == 0, err
    keep = [x for x in text.splitlines() if str(where) not in x], [x for x in js.splitlines() if str(where) not in x]
    return *keep, json.loads(js)


@pytest.mark.parametrize("case", list(CASES))
def test_each_source_kind_ingested_equals_import_and_summarize(case, tmp_path, capsys):
    command, sources, options, effect = CASES[case]
    srcs, opts = sources(tmp_path), options(tmp_path)
    fleet = tmp_path / "fleet.duckdb"
    rc, out, err = _run(capsys, ["ingest", fleet, *srcs, *opts])  # the kind told from the files
    assert rc == 0, err
    assert f"{len(_job_ids(fleet))} new, 0 changed" in out
    if command is None:
        trace = srcs[0]
    elif command == ["from-recorder"]:
        trace = tmp_path / "trace"
        assert _run(capsys, ["from-recorder", srcs[0], trace, *opts])[0] == 0
    else:
        trace = tmp_path / "trace"
        rc, _, err = _run(capsys, [*command, *srcs, *opts, "--out", trace])
        assert rc == 0, err
    text_s, json_s, summary = _summaries(capsys, fleet)
    text_t, json_t, _ = _summaries(capsys, trace)
    assert text_s == text_t
    assert json_s == json_t
    assert effect is None or effect(summary["jobs"]), "the importer options did not reach the import"
    # the same source again: nothing new, nothing changed
    rc, out, err = _run(capsys, ["ingest", fleet, *srcs, *opts])
    assert rc == 0 and "0 new, 0 changed" in out, err


def _job_ids(fleet: Path) -> list[str]:
    con = duckdb.connect(str(fleet), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT job_id FROM res_job_metrics").fetchall()]
    finally:
        con.close()


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings}


def _subparser(parser: argparse.ArgumentParser, *names: str) -> argparse.ArgumentParser:
    for name in names:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


IMPORT_COMMAND = {"sacct": ("import", "slurm"), "mlperf": ("import", "mlperf"), "goodput": ("import", "goodput"),
                  "recorder": ("from-recorder",)}  # fmt: skip


@pytest.mark.parametrize("option", import_options.OPTIONS, ids=lambda o: o.flag)
def test_each_importer_option_means_the_same_to_both_commands(option):
    parser = build_parser()
    ingest = _actions(_subparser(parser, "ingest"))[option.flag]
    for kind in option.kinds:
        other = _actions(_subparser(parser, *IMPORT_COMMAND[kind]))[option.flag]
        for attr in ("dest", "default", "type", "choices", "nargs", "const", "metavar"):
            assert getattr(ingest, attr) == getattr(other, attr), (option.flag, kind, attr)
        assert type(ingest) is type(other)


def _bad_sacct(tmp: Path) -> tuple[Path, int, str]:
    lines = (FLEET / "sacct.txt").read_text().splitlines()
    cols = lines[0].split("|")
    f = lines[3].split("|")
    f[cols.index("Start")] = "yesterday"
    lines[3] = "|".join(f)
    p = tmp / "sacct.txt"
    p.write_text("\n".join(lines) + "\n")
    return p, 4, "Start"  # the file's fourth line (the header is line 1)


def _bad_recorder(tmp: Path) -> tuple[Path, int, str]:
    run = tmp / "run"
    shutil.copytree(DATA / "live-job" / "recorder", run)
    f = run / "live-baseline-a0000-supervisor-0.jsonl"
    lines = f.read_text().splitlines()
    rec = json.loads(lines[1])
    assert rec["k"] == "attempt_start"
    rec["t"] = "noon"
    lines[1] = json.dumps(rec)
    f.write_text("\n".join(lines) + "\n")
    return f, 2, "t"


BAD_SOURCES = {
    "trace": lambda t: (BAD / "garbage-timestamp", BAD / "garbage-timestamp" / "spans.csv", 5, "start"),
    "sacct": lambda t: (lambda p, r, f: (p, p, r, f))(*_bad_sacct(t)),
    "recorder": lambda t: (lambda p, r, f: (p.parent, p, r, f))(*_bad_recorder(t)),
    "mlperf": lambda t: (BAD / "logs" / "mlperf-stop-before-start.txt",) * 2 + (8, "run_stop"),
    "goodput": lambda t: (BAD / "logs" / "goodput-nan-time.jsonl",) * 2 + (5, "step_start_time"),
}


@pytest.mark.parametrize("kind", list(BAD_SOURCES))
def test_a_bad_source_names_file_row_field_and_leaves_the_store_unchanged(kind, tmp_path, capsys):
    """Rows and fields read off each file by hand (the line edited here, or the bundled bad input's README)."""
    fleet = tmp_path / "fleet.duckdb"
    assert _run(capsys, ["ingest", fleet, DATA / "sample"])[0] == 0
    before = fleet.read_bytes()
    source, file, row, field = BAD_SOURCES[kind](tmp_path)
    rc, out, err = _run(capsys, ["ingest", fleet, source])
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"ett: {file}, row {row}, field '{field}': "), lines[0]
    assert fleet.read_bytes() == before


def test_what_a_source_is_is_told_from_its_files_or_given(tmp_path, capsys):
    plain = tmp_path / "notes.txt"
    plain.write_text("hello\n")
    rc, _, err = _run(capsys, ["ingest", tmp_path / "s.duckdb", plain])
    assert rc == 2 and err.startswith(f"ett: {plain}: cannot tell what this file is") and "--kind" in err
    rc, _, err = _run(capsys, ["ingest", tmp_path / "s.duckdb", plain, "--kind", "goodput"])
    assert rc == 2 and err.startswith(f"ett: {plain}, row 1: ")  # the goodput importer's own words
    rc, _, err = _run(capsys, ["ingest", tmp_path / "s.duckdb", DATA / "sample", FLEET / "sacct.txt"])
    assert rc == 2 and "sources of different kinds" in err
    for uri in ("s3a://bucket/trace", "file:///tmp/trace"):
        rc, _, err = _run(capsys, ["ingest", tmp_path / "s.duckdb", uri])
        assert rc == 2 and "local sources only" in err
    assert not (tmp_path / "s.duckdb").exists()


# ----------------------------------------------------------------------------- --slurm without a cluster


def test_slurm_poll_options_and_a_missing_sacct(tmp_path, capsys, monkeypatch):
    fleet = tmp_path / "fleet.duckdb"
    for argv, words in (
        (["--slurm", FLEET / "sacct.txt"], "--slurm runs sacct itself"),
        (["--slurm", "--as-of", "2026-01-01"], "when its sacct ran"),
        (["--slurm", "--overlap=-5m"], "not a positive duration"),
        ([FLEET / "sacct.txt", "--poll-since", "2026-01-01"], "is an option of --slurm polls"),
        ([], "give a SOURCE"),
    ):
        rc, _, err = _run(capsys, ["ingest", fleet, *argv])
        assert rc == 2 and len(err.strip().splitlines()) == 1 and words in err, (argv, err)
    monkeypatch.setenv("PATH", str(tmp_path))  # no sacct here
    rc, _, err = _run(capsys, ["ingest", fleet, "--slurm"])
    assert rc == 2 and err.strip() == (
        "ett: sacct: not found on PATH: --slurm runs Slurm's sacct (install slurm-client, or put sacct on PATH)"
    )
    assert not fleet.exists()


def test_a_first_poll_that_finds_no_job_makes_no_store_and_publishes_nothing(tmp_path, capsys, monkeypatch):
    """A cluster with no job in the last 24 h (a stand-in sacct that lists none, as the real one does on a fresh
    cluster: the live test's first poll met it): the poll succeeds, no store is made, no mirror is published (the
    publish after the refresh once failed on the missing store)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sacct").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    fleet, mirror = tmp_path / "fleet.duckdb", tmp_path / "mirror"
    for extra, said in (([], None), (["--parquet", str(mirror)], f"{fleet} holds nothing yet")):
        rc, out, err = _run(capsys, ["ingest", fleet, "--slurm", *extra])
        assert (rc, err) == (0, ""), err
        assert f"nothing to ingest: {fleet} unchanged" in out and (said is None or said in out), out
        assert not fleet.exists() and not mirror.exists()


def test_the_old_since_of_a_poll_still_works_and_warns_once(tmp_path, capsys, monkeypatch):
    """``ett ingest --slurm --since T``, the spelling of ``--poll-since`` before every measuring command's ``--since``
    meant the window's start: the poll reads from T, and stderr says once that it is renamed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sacct").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    for flag in ("--poll-since", "--since"):
        rc, out, err = _run(capsys, ["ingest", tmp_path / "f.duckdb", "--slurm", flag, "2026-01-02T03:04:05Z"])
        assert rc == 0 and "with a run from 2026-01-02T03:04:05Z (--poll-since)" in out, out
        if flag == "--since":
            assert err.count("warning") == 1 and "--since is now --poll-since" in err, err
        else:
            assert err == ""


@pytest.mark.skipif(
    shutil.which("sacct") is None, reason="Slurm's sacct is not installed (apt-get install slurm-client)"
)
def test_a_failing_sacct_is_one_line(tmp_path):
    """The real sacct, told of a slurmdbd nobody listens for (port 1): it fails, and so does the poll, in one line."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=nowhere\nSlurmctldHost=localhost\nAccountingStorageType=accounting_storage/slurmdbd\n"
        "AccountingStorageHost=127.0.0.1\nAccountingStoragePort=1\n"
    )
    env = {**__import__("os").environ, "SLURM_CONF": str(conf)}
    r = subprocess.run(
        [sys.executable, "-m", "ettcore.cli", "ingest", str(tmp_path / "f.duckdb"), "--slurm"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("ett: sacct: failed (exit 1): ") and "Traceback" not in r.stderr
    assert not (tmp_path / "f.duckdb").exists()


# ----------------------------------------------------------------------------- what a store tells the next poll


def test_open_jobs_are_the_running_and_requeued_waiting_jobs_of_a_snapshot(tmp_path, capsys):
    """The bundled campaign cut at an instant (tests/test_store.py's snapshots): the jobs the store holds open are,
    read off the cut export by hand, those whose last row is RUNNING, or PENDING after a row that ran."""
    from test_store import _cut  # tests/test_store.py

    lines = (FLEET / "sacct.txt").read_text().strip().splitlines()
    cols = lines[0].split("|")
    starts = sorted(int(r.split("|")[cols.index("Start")]) for r in lines[1:])
    t = starts[len(starts) // 2]
    snap = tmp_path / "snap.txt"
    snap.write_text(_cut(lines, t))
    rows = [dict(zip(cols, r.split("|"))) for r in snap.read_text().strip().splitlines()[1:]]
    by_job: dict[str, list[dict]] = {}
    for r in rows:
        by_job.setdefault(r["JobIDRaw"], []).append(r)
    expected = sorted(
        j
        for j, rs in by_job.items()
        if rs[-1]["State"] == "RUNNING" or rs[-1]["State"] == "PENDING" and any(x["Start"] != "Unknown" for x in rs)
    )
    assert expected  # the cut has running jobs
    fleet = tmp_path / "fleet.duckdb"
    assert polls.open_jobs(fleet, "default") == [] and polls.last_poll_ms(fleet, "default") is None
    assert _run(capsys, ["ingest", fleet, snap, "--as-of", str(t)])[0] == 0
    assert sorted(polls.open_jobs(fleet, "default")) == expected
    assert polls.open_jobs(fleet, "other") == []
    assert polls.last_poll_ms(fleet, "default") is None  # an export ingested by hand is not a poll
    store.ingest_path(fleet, DATA / "sample", source="other")
    assert sorted(polls.open_jobs(fleet, "default")) == expected


def test_a_poll_merges_its_sacct_calls_a_run_seen_twice_keeps_the_later_version():
    """Two by-id calls that both list job 7's first run (the array id asked for returns its tasks again), the second
    after the run ended: one row a run (DBIndex), the later one; states and jobs counted by hand."""
    head = "JobID|JobIDRaw|State|Submit|Start|End|DBIndex"
    first = f"{head}\n7|7|RUNNING|100|101|Unknown|31\n8_0|9|COMPLETED|100|102|150|32\n"
    second = (
        f"{head}\n7|7|REQUEUED|100|101|160|31\n7|7|PENDING|160|Unknown|Unknown|35\n8_0|9|COMPLETED|100|102|150|32\n"
    )
    text, states, jobs = sacct_poll.merge([first, second])
    assert text.splitlines() == [
        head,
        "7|7|REQUEUED|100|101|160|31",
        "8_0|9|COMPLETED|100|102|150|32",
        "7|7|PENDING|160|Unknown|Unknown|35",
    ]
    assert dict(states) == {"REQUEUED": 1, "COMPLETED": 1, "PENDING": 1} and jobs == 2
    assert sacct_poll.merge([])[1:] == (Counter(), 0)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed (systemd)")
def test_the_readme_systemd_units_verify(tmp_path):
    """The service and timer units the README gives, as systemd reads them (ExecStart pointed at this ett)."""
    readme = (ROOT / "README.md").read_text()
    ett = Path(sys.executable).with_name("ett")
    units = {}
    for block in readme.split("```ini\n")[1:]:
        text = block.split("```", 1)[0]
        name = text.splitlines()[0].removeprefix("# /etc/systemd/system/")
        units[name] = text.replace("/usr/local/bin/ett", str(ett))
    assert sorted(units) == ["ett-ingest.service", "ett-ingest.timer"]
    for name, text in units.items():
        (tmp_path / name).write_text(text)
    r = subprocess.run(
        ["systemd-analyze", "verify", *(str(tmp_path / n) for n in sorted(units))], capture_output=True, text=True
    )
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
