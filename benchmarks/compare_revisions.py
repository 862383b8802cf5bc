"""Time the default metric path of two revisions of ettcore on one trace, in one run, as ratios.

    .venv/bin/ett synth fleet --jobs 100000 --seed 0 --out /tmp/fleet     # SYNTHETIC fleet
    .venv/bin/python benchmarks/compare_revisions.py /tmp/fleet --base main --rounds 5

``--base`` (and ``--head``, default: the working tree) name git revisions; each is exported with ``git archive``
into a temporary folder and imported from there (``PYTHONPATH`` comes before the editable install). Every
measurement runs in its own child process, alternating base and head, so the machine's drift hits both alike.
A child loads the trace (``load_trace``: typing and every data check), then times, on that one loaded trace,
``summarize`` (``metric.job_summary`` and ``metric.fleet_summary``) and ``trend`` (``metric.trend``, day) with
``time.perf_counter`` (wall, ``*_s``) and ``time.process_time`` (CPU time of all the process's threads,
``*_cpu_s``: less disturbed than wall time when other work shares the machine); no window, no exclusions: the
default path. The table gives, per step, the fastest and the median round of each revision and head / base of
both. Only APIs both revisions have are used.

``--cli`` times the commands a user runs instead, output layer included: ``ett summarize --json``, ``ett summarize``
(text) and ``ett trend --json`` on the trace and on a fleet store of it (built once by the head; ``--store`` gives
one), each a child process (``python -m ettcore.cli``, stdout to /dev/null, the check cache off), alternating base
and head.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
from ettcore import metric
from ettcore.trace import load_trace
path, limit = sys.argv[1], (sys.argv[2] or None)
clock = lambda: (time.perf_counter(), time.process_time())
t0 = clock(); t = load_trace(path, memory_limit=limit); t1 = clock()
jobs = metric.job_summary(t); fleet = metric.fleet_summary(t); t2 = clock()
trend = metric.trend(t, every="day"); t3 = clock()
out = {"jobs": jobs.height, "ett_pct": fleet["ett_pct"][0], "buckets": trend.height}
for i, kind in enumerate(("s", "cpu_s")):
    out.update({f"load_{kind}": t1[i] - t0[i], f"summarize_{kind}": t2[i] - t1[i],
                f"trend_{kind}": t3[i] - t2[i], f"metric_{kind}": t3[i] - t1[i]})
print(json.dumps(out))
"""
STEPS = ("load_s", "summarize_s", "trend_s", "metric_s", "load_cpu_s", "summarize_cpu_s", "trend_cpu_s", "metric_cpu_s")


def export(rev: str, into: Path) -> Path:
    """The ``ettcore`` package of git revision ``rev``, written under ``into``."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "ettcore"], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def measure(tree: Path, trace: str, memory_limit: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, trace, memory_limit],
        env=env,
        cwd=tempfile.gettempdir(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


IN_PROCESS = r"""
import json, sys, time
from ettcore import metric
from ettcore.trace.queries import sql
from ettcore.trace import load_trace
path, limit, rounds, base_dir = sys.argv[1], (sys.argv[2] or None), int(sys.argv[3]), sys.argv[4]
base = lambda name: open(f"{base_dir}/ettcore/sql/metric/{name}.sql", encoding="utf-8").read()
t = load_trace(path, memory_limit=limit)
metric.job_summary(t)  # the head's views and tables, once
steps = {
    "head": [("attribute_s", f"CREATE OR REPLACE TEMP TABLE attributed_time AS {sql('metric/attributed_time')}"),
             ("job_summary_s", f"CREATE OR REPLACE TEMP TABLE job_metrics AS {sql('metric/job_summary')}")],
    "base": [("attribute_s", f"CREATE OR REPLACE TEMP TABLE base_attributed_time AS {base('attributed_time')}"),
             ("job_summary_s", "CREATE OR REPLACE TEMP TABLE base_job_metrics AS "
              f"{base('job_summary').replace('attributed_time', 'base_attributed_time')}")],
}
out = {"base": [], "head": []}
for r in range(rounds):
    for name in (("base", "head") if r % 2 == 0 else ("head", "base")):
        m = {}
        for step, query in steps[name]:
            w, c = time.perf_counter(), time.process_time()
            t.con.execute(query)
            m[step], m[step[:-2] + "_cpu_s"] = time.perf_counter() - w, time.process_time() - c
        out[name].append(m)
same = t.con.execute(
    "SELECT count(*) FROM (SELECT job_id, wall_s, productive_s, tts_s, ttr_total_s, nof FROM base_job_metrics "
    "EXCEPT SELECT job_id, wall_s, productive_s, tts_s, ttr_total_s, nof FROM job_metrics)"
).fetchall()[0][0] == 0
print(json.dumps({"runs": out, "same": same}))
"""


def in_process(trace: str, base: Path, rounds: int, memory_limit: str) -> None:
    """The attribution and per-job queries of both revisions on one loaded trace, alternating, in one process.

    The base revision's SQL files must read the tables the head's loader makes (true while the loader's clean views,
    ``metric_jobs``, ``metric_attempts``, ``metric_spans`` and ``ett_phases`` keep their columns).
    """
    out = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, trace, memory_limit, str(rounds), str(base)],
        cwd=tempfile.gettempdir(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    print(f"in one process, one loaded trace, {rounds} rounds alternating; same per-job answers: {doc['same']}")
    print(f"{'step':<16} {'base min':>9} {'head min':>9} {'ratio':>6}   {'base med':>9} {'head med':>9} {'ratio':>6}")
    for step in ("attribute_s", "job_summary_s", "attribute_cpu_s", "job_summary_cpu_s"):
        b = [m[step] for m in doc["runs"]["base"]]
        h = [m[step] for m in doc["runs"]["head"]]
        bm, hm, bd, hd = min(b), min(h), statistics.median(b), statistics.median(h)
        print(f"{step:<16} {bm:9.3f} {hm:9.3f} {hm / bm:6.3f}   {bd:9.3f} {hd:9.3f} {hd / bd:6.3f}")


CLI_STEPS = (
    ("summarize_json", ["summarize", "{input}", "--json"]),
    ("summarize_text", ["summarize", "{input}"]),
    ("trend_json", ["trend", "{input}", "--json"]),
)


def time_cli(tree: Path, argv: list[str]) -> float:
    """Wall seconds of ``python -m ettcore.cli ARGV`` with ``tree``'s package, its output thrown away."""
    env = dict(os.environ, PYTHONPATH=str(tree), ETT_CHECK_CACHE="0")
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ettcore.cli", *argv],
        env=env,
        cwd=tempfile.gettempdir(),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - t


def cli_rounds(trees: dict[str, Path], inputs: dict[str, str], rounds: int, limit: str) -> None:
    """:data:`CLI_STEPS` on each input, ``rounds`` times, alternating base and head; min and median ratios."""
    runs: dict[str, dict[str, list[float]]] = {"base": {}, "head": {}}
    for r in range(rounds):
        for name in ("base", "head") if r % 2 == 0 else ("head", "base"):
            for kind, path in inputs.items():
                for step, argv in CLI_STEPS:
                    args = [a.format(input=path) for a in argv] + ["--memory-limit", limit]
                    runs[name].setdefault(f"{kind}:{step}", []).append(time_cli(trees[name], args))
    print(f"through the CLI, {rounds} rounds alternating; inputs: " + ", ".join(f"{k} {v}" for k, v in inputs.items()))
    print(f"{'step':<24} {'base min':>9} {'head min':>9} {'ratio':>6}   {'base med':>9} {'head med':>9} {'ratio':>6}")
    for step in runs["base"]:
        b, h = runs["base"][step], runs["head"][step]
        bm, hm, bd, hd = min(b), min(h), statistics.median(b), statistics.median(h)
        print(f"{step:<24} {bm:9.3f} {hm:9.3f} {hm / bm:6.3f}   {bd:9.3f} {hd:9.3f} {hd / bd:6.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--base", required=True, help="git revision measured as 'before'")
    ap.add_argument("--head", default=None, help="git revision measured as 'after' (default: the working tree)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--memory-limit", default="3GB", help="DuckDB memory limit of every measurement (as make bench)")
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="time instead the attribution and per-job queries of both revisions "
        "on one trace loaded once by the head (no process-to-process noise)",
    )
    ap.add_argument(
        "--cli", action="store_true", help="time ett summarize/trend through the CLI, on the trace and a store"
    )
    ap.add_argument("--store", help="with --cli: the fleet store to time (default: one ingested from the trace)")
    args = ap.parse_args(argv)
    if args.cli:
        args.trace = str(Path(args.trace).resolve())  # the children run elsewhere
        with tempfile.TemporaryDirectory(prefix="ett-revs-") as tmp:
            trees = {
                "base": export(args.base, Path(tmp) / "base"),
                "head": export(args.head, Path(tmp) / "head") if args.head else ROOT,
            }
            store = args.store
            if store is None:
                store = str(Path(tmp) / "fleet.duckdb")
                env = dict(os.environ, PYTHONPATH=str(trees["head"]))
                subprocess.run(
                    [sys.executable, "-m", "ettcore.cli", "ingest", store, args.trace],
                    env=env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
            cli_rounds(trees, {"trace": args.trace, "store": store}, args.rounds, args.memory_limit)
        return 0
    if args.in_process:
        if args.head:
            raise SystemExit("--in-process measures the working tree as head")
        with tempfile.TemporaryDirectory(prefix="ett-revs-") as tmp:
            in_process(args.trace, export(args.base, Path(tmp) / "base"), args.rounds, args.memory_limit)
        return 0
    with tempfile.TemporaryDirectory(prefix="ett-revs-") as tmp:
        trees = {
            "base": export(args.base, Path(tmp) / "base"),
            "head": export(args.head, Path(tmp) / "head") if args.head else ROOT,
        }
        runs: dict[str, list[dict]] = {"base": [], "head": []}
        for r in range(args.rounds):
            for name in ("base", "head") if r % 2 == 0 else ("head", "base"):
                runs[name].append(measure(trees[name], args.trace, args.memory_limit))
    for name in runs:
        answers = {(m["jobs"], round(m["ett_pct"], 9), m["buckets"]) for m in runs[name]}
        assert len(answers) == 1, f"{name} gave different answers across rounds: {answers}"
    same = {(m["jobs"], round(m["ett_pct"], 9), m["buckets"]) for m in runs["base"] + runs["head"]}
    print(
        f"trace {args.trace}: {runs['head'][0]['jobs']} jobs; base {args.base}, head {args.head or 'working tree'}; "
        f"{args.rounds} rounds, memory limit {args.memory_limit}; same answers: {len(same) == 1}"
    )
    print(f"{'step':<16} {'base min':>9} {'head min':>9} {'ratio':>6}   {'base med':>9} {'head med':>9} {'ratio':>6}")
    for step in STEPS:
        b = [m[step] for m in runs["base"]]
        h = [m[step] for m in runs["head"]]
        bm, hm, bd, hd = min(b), min(h), statistics.median(b), statistics.median(h)
        print(f"{step:<16} {bm:9.3f} {hm:9.3f} {hm / bm:6.3f}   {bd:9.3f} {hd:9.3f} {hd / bd:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
