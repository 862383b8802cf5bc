"""Freeze the outputs of a fixed list of ``ett`` commands, and compare two freezes.

A refactoring of what the commands print must leave every figure where it was.  ``freeze DIR`` runs each command of
:data:`COMMANDS` on the bundled data (the sample, the Slurm campaign, the multi-node campaign and a fleet store built
from the campaign) and keeps its stdout, stderr and exit status in ``DIR``; ``compare OLD NEW`` says, command by
command, whether the two freezes agree:

- text and CSV: byte-identical, or the same lines in another order (a deliberate change of row order), or different
  (the differing lines are printed);
- JSON: equal value by value, where lists of objects with a ``job_id`` are compared as mappings keyed by job id, and
  the keys named by ``--ignore`` (the envelope) are left out at the top level.

Run from the repository root with the project's environment::

    .venv/bin/python tools/frozen_outputs.py freeze /tmp/frozen-base
    .venv/bin/python tools/frozen_outputs.py freeze /tmp/frozen-head
    .venv/bin/python tools/frozen_outputs.py compare /tmp/frozen-base /tmp/frozen-head
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ETT = [sys.executable, "-m", "ettcore.cli"]

S = "data/sample"
F = "data/slurm-fleet/trace"
M = "data/slurm-multinode/trace"
STORE = "{dir}/fleet.duckdb"  # the Slurm campaign, ingested once
EXCLUDE = "{dir}/exclude.csv"
MAPPING = "{dir}/mapping.yaml"

# (name, arguments): names end in .txt, .json or .csv by what the command prints
COMMANDS: list[tuple[str, list[str]]] = [
    ("summarize-sample.txt", ["summarize", S]),
    ("summarize-sample.json", ["summarize", S, "--json"]),
    ("summarize-sample.csv", ["summarize", S, "--csv"]),
    ("summarize-sample-by-model.txt", ["summarize", S, "--by", "model"]),
    ("summarize-sample-by-team.json", ["summarize", S, "--by", "team", "--json"]),
    ("summarize-sample-as-of.txt", ["summarize", S, "--as-of", "2026-01-06T00:00:00"]),
    ("summarize-sample-as-of.json", ["summarize", S, "--as-of", "2026-01-06T00:00:00", "--json"]),
    (
        "summarize-sample-window.json",
        ["summarize", S, "--since", "2026-01-05T09:00Z", "--until", "2026-01-05T12:00Z", "--json"],
    ),
    ("summarize-sample-window.txt", ["summarize", S, "--since", "2026-01-05T09:00Z", "--until", "2026-01-05T12:00Z"]),
    ("summarize-sample-exclude.txt", ["summarize", S, "--exclude", EXCLUDE]),
    ("summarize-sample-exclude.json", ["summarize", S, "--exclude", EXCLUDE, "--json"]),
    ("summarize-sample-mapping.txt", ["summarize", S, "--mapping", MAPPING]),
    ("summarize-sample-mapping.json", ["summarize", S, "--mapping", MAPPING, "--json"]),
    ("summarize-sample-money.txt", ["summarize", S, "--gpu-hour-price", "2.5"]),
    ("summarize-sample-money.json", ["summarize", S, "--gpu-hour-price", "2.5", "--json"]),
    ("summarize-fleet.txt", ["summarize", F]),
    ("summarize-fleet.json", ["summarize", F, "--json"]),
    ("summarize-fleet.csv", ["summarize", F, "--csv"]),
    ("summarize-fleet-by-model.json", ["summarize", F, "--by", "model", "--json"]),
    ("summarize-multinode.txt", ["summarize", M]),
    ("summarize-multinode.json", ["summarize", M, "--json"]),
    ("summarize-store.txt", ["summarize", STORE]),
    ("summarize-store.json", ["summarize", STORE, "--json"]),
    ("summarize-store-by-model.json", ["summarize", STORE, "--by", "model", "--json"]),
    ("summarize-store-window.json", ["summarize", STORE, "--since", "2026-12-01T00:00Z", "--json"]),
    ("trend-sample.txt", ["trend", S]),
    ("trend-sample.json", ["trend", S, "--json"]),
    ("trend-sample.csv", ["trend", S, "--csv"]),
    ("trend-sample-rolling.txt", ["trend", S, "--every", "hour", "--window", "24h"]),
    ("trend-sample-rolling.json", ["trend", S, "--every", "hour", "--window", "24h", "--json"]),
    ("trend-sample-exclude.json", ["trend", S, "--exclude", EXCLUDE, "--json"]),
    ("trend-fleet-hour.csv", ["trend", F, "--every", "hour", "--csv"]),
    ("trend-fleet-rolling.json", ["trend", F, "--every", "hour", "--window", "6h", "--json"]),
    ("trend-store.json", ["trend", STORE, "--json"]),
    ("trend-store.txt", ["trend", STORE, "--every", "hour"]),
    ("stalls-sample.txt", ["stalls", S]),
    ("stalls-sample.json", ["stalls", S, "--json"]),
    ("stalls-sample.csv", ["stalls", S, "--csv"]),
    ("stalls-fleet.json", ["stalls", F, "--json"]),
    ("stalls-store.json", ["stalls", STORE, "--json"]),
    ("opportunities-sample.txt", ["opportunities", S]),
    ("opportunities-sample.json", ["opportunities", S, "--json"]),
    ("opportunities-fleet-owner.json", ["opportunities", F, "--by", "owner", "--json"]),
    ("opportunities-fleet-money.txt", ["opportunities", F, "--gpu-hour-price", "2.5"]),
    ("opportunities-store.json", ["opportunities", STORE, "--json"]),
    ("nodes-multinode.txt", ["nodes", M]),
    ("nodes-multinode.json", ["nodes", M, "--json"]),
    ("nodes-multinode.csv", ["nodes", M, "--csv"]),
    ("nodes-multinode-mttf.json", ["nodes", M, "--mttf-at", "1024", "--json"]),
    ("nodes-fleet.json", ["nodes", F, "--json"]),
    ("nodes-store.json", ["nodes", STORE, "--json"]),
    ("export-sample.prom.txt", ["export", "prometheus", S, "--job-series-within", "all"]),
    ("export-fleet.prom.txt", ["export", "prometheus", F, "--job-series-within", "all"]),
    ("export-multinode-money.prom.txt", ["export", "prometheus", M, "--gpu-hour-price", "2.5"]),
    ("export-store.prom.txt", ["export", "prometheus", STORE]),
    ("export-sample-window.prom.txt", ["export", "prometheus", S, "--since", "2026-01-05T09:00Z"]),
    ("validate-sample.txt", ["validate", S]),
    ("validate-sample.json", ["validate", S, "--json"]),
    ("validate-bad.txt", ["validate", "tests/bad_inputs/bad-end-reason"]),
    ("validate-bad.json", ["validate", "tests/bad_inputs/bad-end-reason", "--json"]),
]

EXCLUDE_CSV = """start,end,reason,job,label
2026-01-05T02:00:00Z,2026-01-05T06:00:00Z,planned maintenance,,
2026-01-05T10:00:00Z,2026-01-05T11:00:00Z,storage incident,,team=feed
"""
MAPPING_YAML = """phases:
  - {phase: data_warmup, component: data_loading}
owners:
  data_loading: Data platform
"""


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ETT_CHECK_CACHE": "0", "COLUMNS": "200"}
    return subprocess.run([*ETT, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


def freeze(out: Path) -> int:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / "exclude.csv").write_text(EXCLUDE_CSV, encoding="utf-8")
    (out / "mapping.yaml").write_text(MAPPING_YAML, encoding="utf-8")
    made = _run(["ingest", str(out / "fleet.duckdb"), F], ROOT)
    if made.returncode != 0:
        print(made.stderr, file=sys.stderr)
        return 1
    index = {}
    for name, argv in COMMANDS:
        argv = [a.format(dir=out) for a in argv]
        got = _run(argv, ROOT)
        (out / name).write_text(got.stdout.replace(str(out), "{dir}"), encoding="utf-8")
        (out / (name + ".stderr")).write_text(got.stderr.replace(str(out), "{dir}"), encoding="utf-8")
        index[name] = {"argv": [a.replace(str(out), "{dir}") for a in argv], "rc": got.returncode}
        print(f"{got.returncode}  {name}")
    (out / "index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    return 0


def _keyed(value, path: str = ""):
    """Lists of objects with a job_id as a mapping by job id (another order is no difference); recursively."""
    if isinstance(value, list):
        items = [_keyed(v, path) for v in value]
        if items and all(isinstance(v, dict) and "job_id" in v for v in items):
            keys = [json.dumps([v.get("job_id"), v.get("source"), v.get("start")]) for v in items]
            if len(set(keys)) == len(keys):
                return {"<by job_id>": dict(zip(keys, items))}
        return items
    if isinstance(value, dict):
        return {k: _keyed(v, path) for k, v in value.items()}
    return value


def _diff_values(a, b, path: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append(f"{path}/{k}: added {json.dumps(b[k])[:120]}")
            elif k not in b:
                out.append(f"{path}/{k}: removed {json.dumps(a[k])[:120]}")
            else:
                _diff_values(a[k], b[k], f"{path}/{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff_values(x, y, f"{path}[{i}]", out)
    elif isinstance(a, float) and isinstance(b, float) and (a == b or (math.isnan(a) and math.isnan(b))):
        return
    elif a != b:
        out.append(f"{path}: {json.dumps(a)[:120]} -> {json.dumps(b)[:120]}")


def _csv_rows(text: str) -> list[tuple]:
    return [tuple(r) for r in csv.reader(io.StringIO(text))]


def compare(old: Path, new: Path, ignore: set[str], renames: dict[str, str]) -> int:
    index = json.loads((old / "index.json").read_text(encoding="utf-8"))
    verdicts: dict[str, list[str]] = {}
    for name in index:
        a = (old / name).read_text(encoding="utf-8")
        b_path = new / name
        if not b_path.exists():
            verdicts.setdefault("missing in new", []).append(name)
            continue
        b = b_path.read_text(encoding="utf-8")
        for x, y in renames.items():
            b = b.replace(y, x)
        if a == b:
            verdicts.setdefault("byte-identical", []).append(name)
            continue
        if name.endswith(".json"):
            try:
                ja, jb = json.loads(a), json.loads(b)
            except ValueError as exc:
                verdicts.setdefault("differs", []).append(f"{name}: not JSON ({exc})")
                continue
            if isinstance(ja, dict):
                ja = {k: v for k, v in ja.items() if k not in ignore}
            if isinstance(jb, dict):
                jb = {k: v for k, v in jb.items() if k not in ignore}
            diffs: list[str] = []
            _diff_values(_keyed(ja), _keyed(jb), "", diffs)
            if not diffs:
                verdicts.setdefault("JSON equal field by field (envelope left out)", []).append(name)
            else:
                verdicts.setdefault("differs", []).append(name + "\n      " + "\n      ".join(diffs[:15]))
            continue
        la, lb = a.splitlines(), b.splitlines()
        if sorted(la) == sorted(lb):
            verdicts.setdefault("same lines, another order", []).append(name)
            continue
        if name.endswith(".csv") and sorted(_csv_rows(a)[1:]) == sorted(_csv_rows(b)[1:]):
            verdicts.setdefault("same CSV rows, another order", []).append(name)
            continue
        only_a = [x for x in la if x not in set(lb)]
        only_b = [x for x in lb if x not in set(la)]
        verdicts.setdefault("differs", []).append(
            name + "\n      - " + "\n      - ".join(only_a[:8]) + "\n      + " + "\n      + ".join(only_b[:8])
        )
    for k in ("byte-identical", "same lines, another order", "same CSV rows, another order"):
        if k in verdicts:
            print(f"{k} ({len(verdicts[k])}): {', '.join(verdicts[k])}")
    k = "JSON equal field by field (envelope left out)"
    if k in verdicts:
        print(f"{k} ({len(verdicts[k])}): {', '.join(verdicts[k])}")
    for k in ("missing in new", "differs"):
        if k in verdicts:
            print(f"{k} ({len(verdicts[k])}):")
            for v in verdicts[k]:
                print(f"  {v}")
    return 1 if "differs" in verdicts or "missing in new" in verdicts else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("freeze", help="run the commands and keep their outputs in DIR")
    f.add_argument("dir", type=Path)
    c = sub.add_parser("compare", help="compare two freezes")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--ignore", default="", help="top-level JSON keys to leave out (comma-separated): the envelope")
    c.add_argument(
        "--rename", action="append", default=[], metavar="OLD=NEW", help="a deliberate renaming in the new outputs"
    )
    args = p.parse_args()
    if args.cmd == "freeze":
        return freeze(args.dir.resolve())
    renames = dict(r.split("=", 1) for r in args.rename)
    return compare(args.old, args.new, {k for k in args.ignore.split(",") if k}, renames)


if __name__ == "__main__":
    sys.exit(main())
