"""The fleet store benchmark's data: a 30-day store and "one more day" (``make bench ARGS="--store"``).

A **synthetic** fleet is generated from the ``fleet`` scenario with its arrivals compressed into 31 days
(``ettcore.synthetic.generator``; the scenario's 182-day window becomes 31, nothing else changes), with
``n * 31 / 30`` jobs, so that the first 30 days hold about ``n`` jobs.  It is then split, in DuckDB, into three
trace folders (Parquet, the generator's columns and order):

* ``base``: every job whose first attempt starts in the first 30 days, all its rows (the store before the day);
* ``day``: every job whose first attempt starts on day 31, plus 1 % of the ``base`` jobs (those whose number,
  the digits of the job id, is 7 modulo 100) with one row corrected: the end of the job's last span (by attempt,
  start and end) 1 s earlier (not before its start).  This is what a daily export brings: the day's new jobs and
  late corrections of older ones; every job it names comes whole, as a source gives a job;
* ``union``: the latest version of every job (``base`` with the corrected jobs' new rows, and the day's jobs):
  what a store rebuilt from nothing after the day would hold.

Nothing here is measured: ``benchmarks/run.py`` times the commands on these folders.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

DAY_MS = 86_400_000
TABLES = ("jobs", "attempts", "spans")
CHANGED_MOD, CHANGED_REST = 100, 7  # 1 % of the older jobs get a corrected row


def total_jobs(n_base: int) -> int:
    """Jobs generated over 31 days so that the first 30 hold about ``n_base``."""
    return -(-n_base * 31 // 30)


def store_fleet_path(work: Path, n_base: int, seed: int) -> Path:
    return work / f"bench-store-n{n_base}-s{seed}"


def _lit(path: Path) -> str:
    """A SQL string literal of a path this module made (COPY and read_parquet targets take no bound parameter)."""
    return "'" + str(path).replace("'", "''") + "'"


def build(out: Path, n_base: int, seed: int) -> dict:
    """Generate the 31-day fleet and write ``base``, ``day`` and ``union`` under ``out`` (reused when present)."""
    import duckdb

    from ettcore.atomic import atomic_path
    from ettcore.synthetic.generator import generate
    from ettcore.synthetic.scenario import load_scenario

    done = out / "split.json"
    if done.is_file():
        meta = json.loads(done.read_text())
        if meta.get("n_base") == n_base and meta.get("seed") == seed:
            return meta
    sc = dataclasses.replace(load_scenario("fleet"), window_days=31.0)
    n_total = total_jobs(n_base)
    full = out / "full"
    if not (full / "trace.json").is_file():
        generate(sc, full, n_jobs=n_total, seed=seed, chunk_jobs=min(50_000, max(2_500, -(-n_total // 4))))
    t0 = int(sc.start.timestamp() * 1000)
    cut = t0 + 30 * DAY_MS
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET preserve_insertion_order = true")
    con.execute("SET enable_progress_bar = false")
    for t in TABLES:
        con.execute(f"CREATE VIEW full_{t} AS SELECT * FROM read_parquet({_lit(full / t / '*.parquet')})")
    con.execute(
        "CREATE TABLE first_start AS SELECT job_id, min(epoch_ms(start)) AS s FROM full_attempts GROUP BY job_id"
    )
    con.execute("CREATE TABLE base_ids AS SELECT job_id FROM first_start WHERE s < $cut", {"cut": cut})
    con.execute(
        "CREATE TABLE day_ids AS SELECT job_id FROM first_start WHERE s >= $cut AND s < $end",
        {"cut": cut, "end": cut + DAY_MS},
    )
    con.execute(
        "CREATE TABLE changed_ids AS SELECT job_id FROM base_ids "
        "WHERE CAST(regexp_extract(job_id, '(\\d+)$', 1) AS BIGINT) % $m = $r",
        {"m": CHANGED_MOD, "r": CHANGED_REST},
    )
    # the changed jobs' spans: the last span (by attempt, start, end) ends 1 s earlier, not before its start
    con.execute(
        "CREATE TABLE changed_spans AS SELECT * EXCLUDE (rn, last_rn) REPLACE ("
        'CASE WHEN rn = last_rn THEN greatest(start, "end" - INTERVAL 1 SECOND) ELSE "end" END AS "end") FROM ('
        "SELECT s.*, row_number() OVER w AS rn, count(*) OVER (PARTITION BY s.job_id) AS last_rn "
        "FROM full_spans AS s SEMI JOIN changed_ids USING (job_id) "
        'WINDOW w AS (PARTITION BY s.job_id ORDER BY s.attempt, s.start, s."end")) ORDER BY job_id, attempt, start'
    )
    really_changed = con.execute(
        'SELECT count(DISTINCT job_id) FROM (SELECT job_id, start, "end" FROM changed_spans EXCEPT '
        'SELECT s.job_id, s.start, s."end" FROM full_spans AS s SEMI JOIN changed_ids USING (job_id))'
    ).fetchall()[0][0]
    parts = {
        "base": {t: f"SELECT * FROM full_{t} SEMI JOIN base_ids USING (job_id)" for t in TABLES},
        "day": {
            t: (
                f"SELECT * FROM full_{t} SEMI JOIN day_ids USING (job_id) UNION ALL "
                + (
                    "SELECT * FROM changed_spans"
                    if t == "spans"
                    else f"SELECT * FROM full_{t} SEMI JOIN changed_ids USING (job_id)"
                )
            )
            for t in TABLES
        },
        "union": {
            t: (
                f"SELECT * FROM full_{t} WHERE job_id IN (SELECT job_id FROM base_ids UNION ALL SELECT job_id FROM "
                "day_ids) AND job_id NOT IN (SELECT job_id FROM changed_ids)"
                + (" UNION ALL SELECT * FROM changed_spans" if t == "spans" else "")
                + ("" if t == "spans" else f" UNION ALL SELECT * FROM full_{t} SEMI JOIN changed_ids USING (job_id)")
            )
            for t in TABLES
        },
    }
    base_meta = json.loads((full / "trace.json").read_text())
    counts: dict = {}
    for name, queries in parts.items():
        with atomic_path(out / name, directory=True) as tmp:
            for t, q in queries.items():
                (tmp / t).mkdir()
                con.execute(f"COPY ({q}) TO {_lit(tmp / t / 'part-00000.parquet')} (FORMAT parquet)")
            jobs = con.execute(f"SELECT count(*) FROM read_parquet({_lit(tmp / 'jobs' / '*.parquet')})").fetchall()[0][
                0
            ]
            spans = con.execute(f"SELECT count(*) FROM read_parquet({_lit(tmp / 'spans' / '*.parquet')})").fetchall()[
                0
            ][0]
            meta = {
                **base_meta,
                "jobs": jobs,
                "description": f"{base_meta['description'].strip()} Arrivals compressed into 31 days; the store "
                f"benchmark's '{name}' part (benchmarks/store_fleet.py).",
            }
            (tmp / "trace.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        counts[name] = {"jobs": jobs, "spans": spans}
    counts["day"]["new_jobs"] = con.execute("SELECT count(*) FROM day_ids").fetchall()[0][0]
    counts["day"]["changed_jobs"] = really_changed
    meta = {"n_base": n_base, "seed": seed, "generated_jobs": n_total, "cut_ms": cut, **counts}
    shutil.rmtree(full)
    done.write_text(json.dumps(meta, indent=1) + "\n")
    return meta
