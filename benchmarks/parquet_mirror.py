"""A store's Parquet mirror costs what changed to publish: a benchmark, not part of ``make test``.

A SYNTHETIC fleet (the ``fleet`` scenario, ``--jobs`` jobs, default 20,000) is split as a fleet measured daily sees
it: ``older`` holds its jobs but the last 3 % by first start, ``all`` every job, with 1 % of the older ones changed
(their last attempt ends a second later).  In one run, on one machine:

1. ingest ``older`` (the store's first refresh), then ``publish`` into an empty folder: the whole store;
2. ingest ``all`` (3 % new jobs, 1 % of the older ones replaced as a whole), then ``publish``: only that refresh's
   rows.

Printed (and written as JSON with ``--json``): each step's seconds and rows written, and the ratio of the second
publish to the first beside the ratio of their rows (a publish whose cost is what changed has the two about equal;
one that wrote the whole store again would have a time ratio near 1).  Ratios within one run, because the machine is
shared and noisy.  Run: ``.venv/bin/python benchmarks/parquet_mirror.py [--jobs N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from ettcore import store  # noqa: E402
from ettcore.config import SCENARIO_DIR  # noqa: E402
from ettcore.store import parquet_mirror  # noqa: E402
from ettcore.synthetic.generator import generate  # noqa: E402

TABLES = ("jobs", "attempts", "spans")


def _split(full: Path, older: Path, later: Path) -> None:
    """From the generated fleet ``full``: ``older``, its jobs but the last 3 % by first start (the store so far), and
    ``later``, every job with 1 % of the older ones changed (their last attempt ends 1 s later: a corrected row)."""
    con = duckdb.connect()
    files = {
        t: str(full / t / "**" / "*.parquet") if (full / t).is_dir() else str(full / f"{t}.parquet") for t in TABLES
    }
    for t, f in files.items():
        con.read_parquet(f).create_view(t)
    con.execute("CREATE TABLE first AS SELECT job_id, min(start) AS first FROM attempts GROUP BY job_id")
    con.execute(
        "CREATE TABLE old AS SELECT job_id, hash(job_id) % 100 = 0 AS changed FROM first "
        "WHERE first < (SELECT quantile_disc(first, 0.97) FROM first)"
    )
    changed_attempts = (
        "SELECT a.* REPLACE (CASE WHEN o.changed AND a.attempt = (SELECT max(b.attempt) FROM attempts AS b "
        'WHERE b.job_id = a.job_id) THEN a."end" + INTERVAL 1 SECOND ELSE a."end" END AS "end") '
        "FROM attempts AS a LEFT JOIN old AS o USING (job_id)"
    )
    for folder in (older, later):
        folder.mkdir()
        if (full / "trace.json").is_file():
            (folder / "trace.json").write_text((full / "trace.json").read_text())
    for t in TABLES:
        con.sql(f"SELECT * FROM {t} SEMI JOIN old USING (job_id)").write_parquet(str(older / f"{t}.parquet"))
        con.sql(changed_attempts if t == "attempts" else f"SELECT * FROM {t}").write_parquet(
            str(later / f"{t}.parquet")
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="ett-mirror-bench-") as tmp:
        tmp = Path(tmp)
        full = generate(SCENARIO_DIR / "fleet.yaml", tmp / "generated", n_jobs=args.jobs, seed=28)
        _split(full, tmp / "older", tmp / "all")
        s, mirror = tmp / "fleet.duckdb", tmp / "mirror"
        out: dict = {"jobs": args.jobs, "machine": f"{platform.node()} {platform.machine()}", "steps": []}
        for name, src in (("older", tmp / "older"), ("all", tmp / "all")):
            t = time.perf_counter()
            r = store.ingest_path(s, src)
            ingest_s = time.perf_counter() - t
            pub = parquet_mirror.publish(s, mirror)
            out["steps"].append(
                {
                    "source": name,
                    "new_jobs": len(r.new),
                    "changed_jobs": len(r.changed) + r.running,
                    "ingest_s": round(ingest_s, 3),
                    "publish_s": round(pub.seconds, 3),
                    "rows_written": pub.rows,
                }
            )
        first, second = out["steps"]
        out["publish_time_ratio"] = round(second["publish_s"] / first["publish_s"], 4)
        out["publish_rows_ratio"] = round(second["rows_written"] / first["rows_written"], 4)
        out["publish_over_ingest_second"] = round(second["publish_s"] / second["ingest_s"], 4)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"SYNTHETIC fleet, {args.jobs} jobs ({out['machine']})")
        for st in out["steps"]:
            print(
                f"  ingest {st['source']:5}: {st['new_jobs']} new, {st['changed_jobs']} changed; ingest "
                f"{st['ingest_s']:.2f} s, publish {st['publish_s']:.2f} s, {st['rows_written']} rows written"
            )
        print(
            f"  second publish / first: {out['publish_time_ratio']:.3f} in time, {out['publish_rows_ratio']:.3f} in "
            f"rows; second publish / its refresh: {out['publish_over_ingest_second']:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
