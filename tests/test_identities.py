"""The L1 identity and 'L2 sums to wall' on every bundled trace, checked exactly (to the millisecond)."""

from __future__ import annotations

import pytest

from ettcore import metric
from ettcore.config import DATA_DIR
from ettcore.trace import load_trace

# the traces in git; data/generated/ (ignored by git) holds what a report run wrote, which a fresh clone lacks
BUNDLED = [
    p
    for p in sorted(p.parent for p in DATA_DIR.glob("*/attempts.*"))
    + sorted(p.parent for p in DATA_DIR.glob("*/*/attempts.*"))
    if "generated" not in p.relative_to(DATA_DIR).parts
]


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: str(p.relative_to(DATA_DIR)))
def test_identity_and_l2_sum(path):
    trace = load_trace(path)
    jobs = metric.job_summary(trace)
    assert jobs.height > 0
    l2 = metric.l2_matrix(trace).group_by("job_id").agg(l2_total=__import__("polars").col("seconds").sum())
    joined = jobs.join(l2, on="job_id")
    for r in joined.iter_rows(named=True):
        l1 = r["productive_s"] + r["tts_s"] + r["ttr_total_s"] + r["in_training_loss_s"] + r["shutdown_tail_s"]
        comps = r["productive_s"] + sum(r[f"{c}_s"] for c in metric.components(trace))
        assert l1 == pytest.approx(r["wall_s"], abs=1e-3), r["job_id"]
        assert comps == pytest.approx(r["wall_s"], abs=1e-3), r["job_id"]
        assert r["l2_total"] == pytest.approx(r["wall_s"], abs=1e-3), r["job_id"]


def test_fleet_sums_do_not_depend_on_the_order_of_jobs():
    """group_summary.sql and group_component_time.sql sum whole GPU-milliseconds (and each job's ETT% in billionths of
    a point), so a fleet's figures are exact and the same however the jobs are ordered or split across threads; a sum
    of the per-job doubles changes in its last digits with the order (the jobs here span nine orders of magnitude)."""
    import random

    import duckdb
    import polars as pl

    from ettcore.phases import ALL_COMPONENTS
    from ettcore.trace.queries import sql

    rng = random.Random(7)
    seconds = [
        "wall_s",
        "productive_s",
        "tts_s",
        "ttr_total_s",
        "in_training_loss_s",
        "shutdown_tail_s",
        "excluded_s",
        *[f"{c}_s" for c in ALL_COMPONENTS],
    ]
    rows = []
    for i in range(2000):
        ms = {c: rng.randrange(1, 10 ** rng.randrange(1, 10)) for c in seconds}
        ms["productive_s"] = min(ms["productive_s"], ms["wall_s"])
        rows.append(
            {
                "job_id": f"j{i:04d}",
                "gpus": rng.choice([1, 8, 64, 512]),
                "nof": rng.randrange(3),
                "cancelled": rng.randrange(2),  # a user's cancels, counted apart from NoF (group_summary sums them)
                "ett_pct": 100.0 * ms["productive_s"] / ms["wall_s"],
                **{c: v / 1000 for c, v in ms.items()},
            }
        )
    cols = ["job_id", "gpus", "nof", "cancelled", "ett_pct", *seconds]

    def fleet(order):
        con = duckdb.connect()
        con.execute("SET threads = 1")  # one thread sums in table order
        # the SQL below reads `frame` by name (DuckDB replacement scan)
        frame = pl.DataFrame([[r[c] for c in cols] for r in order], schema=cols, orient="row")  # noqa: F841
        con.execute("CREATE TABLE job_metrics AS SELECT * FROM frame")
        # the components as job_component_time holds them: one row a job and component
        con.execute(
            "CREATE TABLE job_component_time AS SELECT job_id, component, seconds FROM "
            "(UNPIVOT frame ON " + ", ".join(f"{c}_s" for c in ALL_COMPONENTS) + " INTO NAME component VALUE seconds) "
            "ORDER BY ALL"
        )
        con.execute("UPDATE job_component_time SET component = regexp_replace(component, '_s$', '')")
        con.execute("CREATE VIEW job_groups AS SELECT job_id, 'fleet' AS group_key FROM job_metrics")
        comps = con.execute(sql("metric/group_component_time") + " ORDER BY component").fetchall()
        return con.execute(sql("metric/group_summary")).fetchall() + comps

    forward = fleet(rows)
    assert fleet(list(reversed(rows))) == forward
    assert fleet(rng.sample(rows, len(rows))) == forward
    # and the sums are the exact ones: wall GPU-hours from the whole milliseconds
    wall_gpu_ms = sum(r["gpus"] * round(r["wall_s"] * 1000) for r in rows)
    assert forward[0][4] == wall_gpu_ms / 3.6e6
    shutdown_gpu_ms = sum(r["gpus"] * round(r["shutdown_s"] * 1000) for r in rows)
    assert ("fleet", "shutdown", shutdown_gpu_ms / 3.6e6) in forward


def test_a_first_attempt_of_no_length_keeps_the_time_after_it(tmp_path):
    """A job whose first attempt has no length (cancelled at the instant it started), then, a minute later, a second
    attempt that trains 10 minutes: the minute between them is the job's too, Time to Start (scheduling), so the
    buckets add up to the wall time.  (The attribution's events once began at the first attempt of positive length,
    and the minute fell out of every bucket; found by the SQL-against-reference property test.)"""
    from conftest import write_csv_trace

    t = "2026-02-01T00:"
    write_csv_trace(
        tmp_path / "t",
        [["j", 0, f"{t}00:00Z", f"{t}00:00Z", "cancelled"], ["j", 1, f"{t}01:00Z", f"{t}11:00Z", "completed"]],
        [["j", 1, "train", "", f"{t}01:00Z", f"{t}11:00Z", 0, 100]],
        [["j", "m", 1]],
    )
    (job,) = metric.job_summary(load_trace(tmp_path / "t")).iter_rows(named=True)
    assert (job["wall_s"], job["productive_s"], job["tts_s"], job["scheduling_s"]) == (660.0, 600.0, 60.0, 60.0)
