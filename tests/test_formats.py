"""The same trace in every supported layout and timestamp form gives the same numbers."""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ettcore import metric
from ettcore.errors import TraceError
from ettcore.trace import load_trace

# every load also runs the span checks the span store's screen skipped, and fails if they find a row (conftest.py)
pytestmark = pytest.mark.usefixtures("screen_guard")


def _sample_frames(sample_trace):
    t = load_trace(sample_trace)
    att = t.sql("SELECT job_id, attempt, start_ms, end_ms, end_reason FROM typed_attempts ORDER BY _row")
    spans = t.sql(
        "SELECT job_id, attempt, phase, stage, start_ms, end_ms, cursor_start, cursor_end FROM typed_spans "
        "ORDER BY _row"
    )
    jobs = t.sql("SELECT job_id, model, gpus, team FROM typed_jobs ORDER BY _row")
    return jobs, att, spans


def _as(df: pl.DataFrame, form: str) -> pl.DataFrame:
    cols = [c for c in df.columns if c.endswith("_ms")]
    out = df
    for c in cols:
        name = c[:-3]
        if form == "epoch":
            out = out.with_columns((pl.col(c) / 1000).alias(name))
        elif form == "iso":
            out = out.with_columns(
                pl.from_epoch(pl.col(c), time_unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%S").alias(name)
            )
        elif form == "iso_offset":  # same instants written in +02:00
            out = out.with_columns(
                (pl.from_epoch(pl.col(c), time_unit="ms") + pl.duration(hours=2))
                .dt.strftime("%Y-%m-%dT%H:%M:%S+02:00")
                .alias(name)
            )
        elif form == "timestamp":
            out = out.with_columns(pl.from_epoch(pl.col(c), time_unit="ms").dt.replace_time_zone("UTC").alias(name))
        out = out.drop(c)
    return out


def _summary(path, batches=None, **kw):
    t = load_trace(path, **kw)
    metric.prepare(t, batches=batches)
    return metric.job_summary(t).sort("job_id"), metric.l2_matrix(t).sort(["job_id", "bucket", "phase"])


@pytest.mark.parametrize(
    "layout,form",
    [
        ("parquet", "timestamp"),
        ("csv", "epoch"),
        ("jsonl", "iso"),
        ("jsonl", "iso_offset"),
        ("partitioned", "timestamp"),
        ("duckdb", "timestamp"),
        ("parquet", "epoch"),
    ],
)
def test_layouts_agree(tmp_path, sample_trace, layout, form):
    ref_jobs, ref_l2 = _summary(sample_trace)
    jobs, att, spans = _sample_frames(sample_trace)
    att, spans = _as(att, form), _as(spans, form)
    out = tmp_path / "trace"
    out.mkdir()
    if layout == "parquet":
        jobs.write_parquet(out / "jobs.parquet")
        att.write_parquet(out / "attempts.parquet")
        spans.write_parquet(out / "spans.parquet")
    elif layout == "csv":
        jobs.write_csv(out / "jobs.csv")
        att.write_csv(out / "attempts.csv")
        spans.write_csv(out / "spans.csv")
    elif layout == "jsonl":
        jobs.write_ndjson(out / "jobs.jsonl")
        att.write_ndjson(out / "attempts.jsonl")
        spans.write_ndjson(out / "spans.jsonl")
    elif layout == "partitioned":
        jobs.write_parquet(out / "jobs.parquet")
        for name, df in (("attempts", att), ("spans", spans)):
            (out / name / "part=a").mkdir(parents=True)
            (out / name / "part=b").mkdir(parents=True)
            shuffled = df.sample(fraction=1.0, shuffle=True, seed=7)
            half = shuffled.height // 2
            shuffled[:half].write_parquet(out / name / "part=a" / "0.parquet")
            shuffled[half:].write_parquet(out / name / "part=b" / "1.parquet")
    elif layout == "duckdb":
        out = tmp_path / "trace.duckdb"
        con = duckdb.connect(str(out))
        for name, df in (("jobs", jobs), ("attempts", att), ("spans", spans)):
            con.register("df", df.to_arrow())
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM df")
            con.unregister("df")
        con.close()
    got_jobs, got_l2 = _summary(out)
    assert_frame_equal(got_jobs, ref_jobs)
    assert_frame_equal(got_l2, ref_l2)
    # the batched attribution (used for traces over the memory limit) reads every layout the same way
    got_jobs, got_l2 = _summary(out, batches=3)
    assert_frame_equal(got_jobs, ref_jobs)
    assert_frame_equal(got_l2, ref_l2)


def test_mapping_file_adds_phase_and_owner(tmp_path, sample_trace):
    jobs, att, spans = _sample_frames(sample_trace)
    spans = spans.with_columns(
        pl.when(pl.col("phase") == "data_warmup")
        .then(pl.lit("stream_negotiation"))
        .otherwise(pl.col("phase"))
        .alias("phase")
    )
    out = tmp_path / "t"
    out.mkdir()
    jobs.write_parquet(out / "jobs.parquet")
    _as(att, "epoch").write_parquet(out / "attempts.parquet")
    _as(spans, "epoch").write_parquet(out / "spans.parquet")
    with pytest.raises(TraceError, match="unknown phase stream_negotiation"):
        load_trace(out)
    mapping = tmp_path / "map.yaml"
    mapping.write_text(
        "phases:\n  - {phase: stream_negotiation, component: trainer_init}\nowners:\n  trainer_init: Data loader team\n"
    )
    t = load_trace(out, mapping=mapping)
    l2 = metric.l2_matrix(t)
    row = l2.filter((pl.col("job_id") == "sample-preempted") & (pl.col("phase") == "stream_negotiation"))
    assert row["component"].unique().to_list() == ["trainer_init"]
    assert row["owner"].unique().to_list() == ["Data loader team"]
    ref = metric.job_summary(load_trace(sample_trace)).sort("job_id")
    assert_frame_equal(metric.job_summary(t).sort("job_id"), ref)


def test_bad_mapping_file(tmp_path, sample_trace):
    mapping = tmp_path / "map.yaml"
    mapping.write_text("phases:\n  - {phase: x, component: Not-A-Component}\n")  # not a name a component can take
    with pytest.raises(TraceError) as info:
        load_trace(sample_trace, mapping=mapping)
    p = info.value.problems[0]
    assert p.file == str(mapping) and p.row == 1 and p.field == "component"


def test_as_of_clips_running_and_finished_jobs(sample_trace):
    # 2026-01-05T01:00Z: worked-example is 60 min in (attempt 1 started at 55, compile until 70)
    t = load_trace(sample_trace, as_of="2026-01-05T01:00:00")
    jobs = metric.job_summary(t)
    row = jobs.filter(pl.col("job_id") == "worked-example").row(0, named=True)
    assert row["status"] == "running"
    assert row["wall_s"] == 60 * 60
    assert row["productive_s"] == 24 * 60  # 20-30 and 31-45
    assert row["tts_s"] == 20 * 60
    assert row["ttr_total_s"] == 15 * 60  # 45-60, still recovering
    assert row["shutdown_tail_s"] == 0
    # jobs that had not started by then are not measured
    assert set(jobs["job_id"]) == {"worked-example"}
    # as-of in the middle of a train span prorates its cursor: running job at 2026-01-06T01:00Z
    t2 = load_trace(sample_trace, as_of=datetime(2026, 1, 6, 1, tzinfo=timezone.utc).timestamp())
    r2 = metric.job_summary(t2).filter(pl.col("job_id") == "sample-running").row(0, named=True)
    assert r2["wall_s"] == 3 * 3600 and r2["productive_s"] == 3 * 3600 - 30 * 60


def test_bad_as_of():
    from ettcore.trace import parse_as_of

    with pytest.raises(TraceError, match="not a timestamp"):
        parse_as_of("next tuesday")
    with pytest.raises(TraceError, match="plausible range"):
        parse_as_of("1700000000000")


def test_trend_prorates_across_midnight(sample_trace):
    t = load_trace(sample_trace)
    day = metric.trend(t, "day")
    # sample-running (16 GPUs) trains from 22:30 on Jan 5 to 04:00 on Jan 6: Jan 6 holds 4 h x 16 GPUs, all productive
    jan6 = day.filter(pl.col("bucket_start") == pl.date(2026, 1, 6)).row(0, named=True)
    assert jan6["wall_gpu_h"] == pytest.approx(64.0) and jan6["ett_pct"] == pytest.approx(100.0)
    fleet = metric.fleet_summary(t).row(0, named=True)
    assert day["wall_gpu_h"].sum() == pytest.approx(fleet["wall_gpu_h"])
    assert day["productive_gpu_h"].sum() == pytest.approx(fleet["productive_gpu_h"])
    week = metric.trend(t, "week")
    assert week["bucket_start"].to_list() == [datetime(2026, 1, 5).date()]  # a Monday
    with pytest.raises(TraceError):
        metric.trend(t, "fortnight")


def test_group_by_is_checked_against_schema(sample_trace):
    t = load_trace(sample_trace)
    assert metric.fleet_summary(t, by="team")["team"].to_list() == ["ads", "feed", "search"]
    for evil in ["x'); DROP TABLE spans; --", 'team" FROM metric_jobs; --', "*"]:
        with pytest.raises(TraceError, match="unknown grouping column"):
            metric.fleet_summary(t, by=evil)


def test_timestamps_round_to_the_nearest_millisecond():
    """A timestamp column's microseconds become whole ms rounded half up, the value DuckDB's epoch_ms gives (the typed
    expression computes it another, faster way), for instants just below, at and above each half millisecond."""
    from decimal import ROUND_HALF_UP, Decimal

    from ettcore.trace import typing as rules
    from ettcore.trace.load import duckdb_source, quote_ident

    base = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
    base_us = int(base.timestamp()) * 1_000_000
    offsets = [0, 1, 499, 500, 501, 999, 1000, 1499, 1500, 2500, 86_399_999_999]
    con = duckdb.connect()
    con.execute("CREATE TABLE t (ts TIMESTAMPTZ)")
    con.executemany("INSERT INTO t VALUES (make_timestamp($us)::TIMESTAMPTZ)", [{"us": base_us + o} for o in offsets])
    expr, _ = rules.typed_field("ts", "ts", duckdb_source("TIMESTAMP WITH TIME ZONE"), rules.DUCKDB, quote_ident)
    got = con.execute(f"SELECT {expr}, epoch_ms(ts) FROM t ORDER BY ts").fetchall()
    want = [int((Decimal(base_us + o) / 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP)) for o in offsets]
    assert [g for g, _ in got] == want
    assert [e for _, e in got] == want


def test_integer_fast_paths_give_the_general_rules_values():
    """A small or 64-bit integer column becomes an ``int`` without the detour through DOUBLE (a fast path of the typing
    rules, in both engines); on edge values it gives what the general rule, through DOUBLE, gives."""
    from ettcore.trace import typing as rules
    from ettcore.trace.load import duckdb_source

    for dtype, values in [
        ("INTEGER", [-(2**31), -1, 0, 1, 2**31 - 1, None]),
        ("BIGINT", [-(2**63), -9_000_000_000_000_000, -8_999_999_999_999_999, 0, 8_999_999_999_999_999]),
        ("BIGINT", [9_000_000_000_000_000, 2**53 + 1, 2**63 - 1, None]),
    ]:
        con = duckdb.connect()
        con.execute(f"CREATE TABLE t (v {dtype})")
        con.executemany("INSERT INTO t VALUES ($v)", [{"v": v} for v in values])
        fast = rules.RULES[("int", duckdb_source(dtype))]("v", rules.DUCKDB)
        general = rules.RULES[("int", rules.NUMERIC)]("v", rules.DUCKDB)
        assert "DOUBLE" not in fast
        got = con.execute(f"SELECT {fast}, {general} FROM t ORDER BY rowid").fetchall()
        assert [f for f, _ in got] == [g for _, g in got]
        assert [f for f, _ in got] == [v if v is not None and abs(v) < 9e15 else None for v in values]


def test_every_kind_and_source_has_a_rule_in_both_dialects():
    from ettcore.trace import typing as rules

    for dialect in rules.DIALECTS.values():
        for kind in rules.KINDS:
            for source in rules.SOURCES:
                expr, raw = rules.typed_field('a"b', kind, source, dialect, lambda c: "<" + c + ">")
                assert expr and raw
                if source != rules.ABSENT:
                    assert '<a"b>' in expr and '<a"b>' in raw
