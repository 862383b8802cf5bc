"""Freeze the outputs of a fixed list of ``ett`` commands, and compare two freezes.

A refactoring of what the commands print must leave every figure where it was.  ``freeze DIR`` runs each command of
:data:`COMMANDS` on the bundled data (the sample, the Slurm campaign, the multi-node campaign and a fleet store built
from the campaign) and keeps its stdout, stderr and exit status in ``DIR``; ``compare OLD NEW`` says, command by
command, whether the two freezes agree:

- text and CSV: byte-identical, or equal once the deliberate changes of the output layer are undone (CSV instants
  with milliseconds, CSV's ``synthetic`` column, the one SYNTHETIC banner), or the same lines in another order (jobs in
  natural order), or different (the differing lines are printed);
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


def _deliberate_csv(text: str) -> tuple[str, list[str]]:
    """The CSV with the deliberate changes undone: instants with milliseconds, and a last ``synthetic`` column."""
    rows, done = _csv_rows(text), []
    if rows and rows[0] and rows[0][-1] == "synthetic" and all(r[-1] == "true" for r in rows[1:]):
        rows, done = [r[:-1] for r in rows], ["synthetic column"]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    body = out.getvalue()
    if ".000Z" in body:
        body, done = body.replace(".000Z", "Z"), [*done, "instants with milliseconds"]
    return body, done


def _undo_csv(a: str, b: str) -> tuple[str, str, list[str]]:
    """Both CSVs with the deliberate changes undone, and those the new one needed (not those the old one had)."""
    (a2, done_a), (b2, done_b) = _deliberate_csv(a), _deliberate_csv(b)
    return a2, b2, [d for d in done_b if d not in done_a]


def _deliberate_text(text: str) -> tuple[str, list[str]]:
    """The text with the banner's wording undone (``SYNTHETIC trace: <description>`` was ``SYNTHETIC trace`` in some
    commands)."""
    lines = text.splitlines()
    out = ["SYNTHETIC trace" if ln.startswith("SYNTHETIC trace") else ln for ln in lines]
    return "\n".join(out), (["banner"] if out != lines else [])


def compare(
    old: Path,
    new: Path,
    ignore: set[str],
    renames: dict[str, str],
    envelope: set[str],
    lists: str,
    moved: dict[str, str],
) -> int:
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
            verdicts.setdefault("byte-identical" + (" after the renames" if renames else ""), []).append(name)
            continue
        if name.endswith(".json"):
            try:
                ja, jb = json.loads(a), json.loads(b)
            except ValueError as exc:
                verdicts.setdefault("differs", []).append(f"{name}: not JSON ({exc})")
                continue
            if isinstance(ja, list) and isinstance(jb, dict) and lists in jb:
                jb = jb[lists]  # an old bare list is the new answer's list field
            if isinstance(ja, dict) and isinstance(jb, dict):
                for key, path in moved.items():  # a key the new answer keeps elsewhere (top -> window/exclusions)
                    outer, inner = path.split("/")
                    value = (jb.get(outer) or {}).pop(inner, None) if isinstance(jb.get(outer), dict) else None
                    if key in ja or value:
                        jb[key] = value
            if isinstance(jb, dict):
                jb = {k: v for k, v in jb.items() if k not in ignore and (k not in envelope or k in ja)}
            if isinstance(ja, dict):
                ja = {k: v for k, v in ja.items() if k not in ignore}
            diffs: list[str] = []
            _diff_values(_keyed(ja), _keyed(jb), "", diffs)
            if not diffs:
                verdicts.setdefault("JSON equal field by field (rows keyed by job id; envelope left out)", []).append(
                    name
                )
            else:
                verdicts.setdefault("differs", []).append(name + "\n      " + "\n      ".join(diffs[:15]))
            continue
        done: list[str] = []
        if name.endswith(".csv"):
            a, b, done = _undo_csv(a, b)
        else:
            b, done = _deliberate_text(b)
            a = _deliberate_text(a)[0]
        la, lb = a.splitlines(), b.splitlines()
        if la == lb:
            verdicts.setdefault("equal but for " + " and ".join(done), []).append(name)
            continue
        if sorted(la) == sorted(lb):
            verdicts.setdefault(
                "same lines in another order" + ("" if not done else ", and " + ", ".join(done)), []
            ).append(name)
            continue
        only_a = [x for x in la if x not in set(lb)]
        only_b = [x for x in lb if x not in set(la)]
        verdicts.setdefault("differs", []).append(
            name + "\n      - " + "\n      - ".join(only_a[:8]) + "\n      + " + "\n      + ".join(only_b[:8])
        )
    for k, v in verdicts.items():
        if k in ("missing in new", "differs"):
            continue
        print(f"{k} ({len(v)}): {', '.join(v)}")
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
    c.add_argument(
        "--envelope",
        default="",
        help="top-level JSON keys compared only where the old output has them (comma-separated): the new envelope",
    )
    c.add_argument("--list-key", default="buckets", help="where an old bare JSON list now stands in an object")
    c.add_argument(
        "--moved",
        action="append",
        default=[],
        metavar="KEY=OUTER/INNER",
        help="a top-level key the new answer keeps inside another (exclusions=window/exclusions)",
    )
    args = p.parse_args()
    if args.cmd == "freeze":
        return freeze(args.dir.resolve())
    renames = dict(r.split("=", 1) for r in args.rename)
    envelope = {k for k in args.envelope.split(",") if k}
    moved = dict(m.split("=", 1) for m in args.moved)
    ignore = {k for k in args.ignore.split(",") if k}
    return compare(args.old, args.new, ignore, renames, envelope, args.list_key, moved)


if __name__ == "__main__":
    sys.exit(main())
