"""The (1 + NoF) rule, the restart bound and direct vs cascade attribution (paper II-A, V-B, V-C).

Expected values are typed from the paper (published-figures.csv rows
rep_cold_start, rep_failures, rep_restart_bound, rep_gpu_hours_day,
cascade_direct, cascade_inherited, cascade_recovery_only,
recovery_savings_share, and the V-B ranges), never computed by the code under
test.  Tolerances: half the last printed digit of each published number.
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ettcore.planning.restarts import (
    attribute_savings,
    cascade_example,
    compound_saving,
    pair_savings,
    restart_overhead,
    restart_overhead_gpu_hours_per_day,
)


def test_restart_bound_51_min_3_failures_is_204_min() -> None:
    assert restart_overhead(51, 3) == 204  # exact arithmetic
    # "approximately 3,400 GPU-hours per day on 1,000 GPUs": within 1 %
    assert restart_overhead_gpu_hours_per_day(51, 3, gpus=1000) == pytest.approx(3400, rel=0.01)


def test_restart_overhead_rejects_negative_input() -> None:
    with pytest.raises(ValueError):
        restart_overhead(-1, 2)
    with pytest.raises(ValueError):
        restart_overhead(10, -1)


def test_compound_saving_counts_restarts() -> None:
    assert compound_saving(60.0, 2) == 180.0  # repeated start-up work: (1 + NoF) x
    assert compound_saving(60.0, 2, repeated_at_start=False) == 120.0  # recovery-only: NoF x
    assert compound_saving(60.0, 0) == 60.0


def _shares() -> dict[str, tuple[float, float]]:
    before, after = cascade_example()
    t = attribute_savings(before, after)
    return {r["source"]: (r["direct_pct"], r["cascade_pct"]) for r in t.iter_rows(named=True)}


def test_cascade_example_reproduces_paper_v_c() -> None:
    s = _shares()
    assert s["trainer_start"][0] == pytest.approx(8, abs=0.5)  # direct: 8 % (printed as an integer)
    assert s["trainer_start"][1] == pytest.approx(24.8, abs=0.05)  # counting restarts: 24.8 %
    assert s["recovery_path"][1] == pytest.approx(41.3, abs=0.05)  # recovery path alone: 41.3 %
    assert s["recovery_path"][0] == pytest.approx(58, abs=0.5)  # recovery: 58 % of all savings
    assert s["total"] == (100.0, 100.0)
    # "a factor-of-three difference", bounded by (1 + NoF) = 3 with NoF = 2
    assert s["trainer_start"][1] <= 3 * s["trainer_start"][0] + 1e-9
    assert s["trainer_start"][1] / s["trainer_start"][0] == pytest.approx(3, abs=0.5)


def test_cascade_example_is_labelled_synthetic_and_inside_published_ranges() -> None:
    before, after = cascade_example()
    assert before["synthetic"].all() and after["synthetic"].all()
    b, a = before.row(0, named=True), after.row(0, named=True)
    assert b["nof"] == a["nof"] == 2  # two induced failures (V-A)
    # identity of the metric: wall = productive + TTS + TTR_total + in-training loss + shutdown tail
    for r in (b, a):
        assert r["wall_s"] == pytest.approx(
            r["productive_s"] + r["tts_s"] + r["ttr_total_s"] + r["in_training_loss_s"] + r["shutdown_tail_s"]
        )
    lost = b["wall_s"] - b["productive_s"]
    assert 59 <= b["ett_pct"] <= 85  # bench_ett_base
    assert 80 <= a["ett_pct"] <= 93  # bench_ett_opt
    assert 15 <= 100 * lost / b["wall_s"] <= 41  # bench_lost_share
    assert 43 <= 100 * b["ttr_total_s"] / lost <= 74  # bench_recovery_share
    assert 8 <= 100 * b["tts_s"] / lost <= 19  # bench_tts_share
    assert 25.6 * 60 <= b["shutdown_tail_s"] <= 54.6 * 60  # shutdown_before
    assert a["shutdown_tail_s"] <= 3.3 * 60  # shutdown_after
    ratio = pair_savings(before, after)["ttr_to_tts"][0]
    assert 1.8 <= ratio <= 8.6  # ttr_vs_tts


def _l1(model: str, tts: float, nof: int, ttr: float, itl: float = 0.0, sht: float = 0.0) -> dict:
    return {
        "model": model,
        "tts_s": tts,
        "nof": nof,
        "ttr_total_s": ttr,
        "in_training_loss_s": itl,
        "shutdown_tail_s": sht,
    }


def test_inherited_share_is_bounded_by_the_recovery_saving() -> None:
    # dTTS = 100 s, NoF = 2 would credit 200 s, but recovery only saved 150 s: inherited = 150
    before = pl.DataFrame([_l1("m", 500, 2, 1000)])
    after = pl.DataFrame([_l1("m", 400, 2, 850)])
    p = pair_savings(before, after)
    assert p["inherited_s"][0] == 150.0
    t = attribute_savings(before, after)
    row = t.filter(pl.col("source") == "trainer_start").row(0, named=True)
    assert row["direct_s"] == 100.0 and row["cascade_s"] == 250.0
    assert t.filter(pl.col("source") == "recovery_path")["cascade_s"][0] == 0.0


def test_opposite_signs_inherit_nothing_and_fewer_failures_limit_it() -> None:
    p = pair_savings(pl.DataFrame([_l1("m", 500, 2, 1000)]), pl.DataFrame([_l1("m", 400, 2, 1100)]))
    assert p["inherited_s"][0] == 0.0  # TTS fell but recovery grew: no inheritance claimed
    p = pair_savings(pl.DataFrame([_l1("m", 500, 3, 3000)]), pl.DataFrame([_l1("m", 400, 1, 300)]))
    assert p["nof"][0] == 1.0 and p["inherited_s"][0] == 100.0  # only restarts both runs had


def test_pairing_errors_name_the_key() -> None:
    b = pl.DataFrame([_l1("m1", 1, 0, 0), _l1("m2", 1, 0, 0)])
    with pytest.raises(ValueError, match="m2"):
        pair_savings(b, pl.DataFrame([_l1("m1", 1, 0, 0)]))
    with pytest.raises(ValueError, match="several rows"):
        pair_savings(pl.concat([b, b]), b)
    with pytest.raises(ValueError, match="lacks column"):
        pair_savings(b.drop("nof"), b)
    with pytest.raises(ValueError, match="negative"):
        pair_savings(b.with_columns(pl.lit(-1.0).alias("tts_s")), b)
    with pytest.raises(ValueError, match="no saved time"):
        attribute_savings(b, b)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 5000), st.floats(0, 5000), st.integers(0, 5), st.floats(0, 20000), st.floats(0, 20000)),
        min_size=1,
        max_size=6,
    )
)
def test_attribution_properties(pairs) -> None:
    before = pl.DataFrame([_l1(f"m{i}", tb, n, rb, 50.0, 100.0) for i, (tb, _, n, rb, _) in enumerate(pairs)])
    after = pl.DataFrame([_l1(f"m{i}", ta, n, ra, 0.0, 0.0) for i, (_, ta, n, _, ra) in enumerate(pairs)])
    t = attribute_savings(before, after)  # total > 0 thanks to the in-training and shutdown savings
    d = dict(zip(t["source"], t["direct_s"]))
    c = dict(zip(t["source"], t["cascade_s"]))
    assert sum(c[s] for s in ("trainer_start", "recovery_path", "in_training_loss", "shutdown_tail")) == pytest.approx(
        d["total"]
    )
    # cascade moves seconds from recovery to start-up, never more than NoF x dTTS per pair
    p = pair_savings(before, after)
    moved = c["trainer_start"] - d["trainer_start"]
    assert moved == pytest.approx(float(p["inherited_s"].sum()), abs=1e-6)
    for r in p.iter_rows(named=True):
        assert abs(r["inherited_s"]) <= abs(r["nof"] * r["d_tts_s"]) + 1e-6
        assert abs(r["inherited_s"]) <= abs(r["d_ttr_total_s"]) + 1e-6


EPOCH = 1_780_000_000  # 2026-05-28 UTC: T0 of the test traces (epoch seconds)


def _trace(path, init_min: float):
    """A SYNTHETIC one-job trace (minutes from T0): three attempts, two failures, start-up repeated each time.

    Each attempt: hardware setup 10 min, trainer init ``init_min``, then 30/30/50 min of training on new
    data; the first two end with a 10-min hang before the failure, the last with a 10-min shutdown.
    """
    from ettcore.trace.writer import write_trace

    t, attempts, spans, cursor = 0.0, [], [], 0.0
    for a, (train, tail, reason) in enumerate(
        [(30, "hang", "failure"), (30, "hang", "failure"), (50, "shutdown", "completed")]
    ):
        start = t
        spans.append((a, "hardware_setup", t, t + 10, None, None))
        spans.append((a, "trainer_init", t + 10, t + 10 + init_min, None, None))
        t += 10 + init_min
        spans.append((a, "train", t, t + train, cursor, cursor + 10 * train))
        t, cursor = t + train, cursor + 10 * train
        if tail == "shutdown":
            spans.append((a, "shutdown", t, t + 10, None, None))
        t += 10
        attempts.append(
            {"job_id": "j", "attempt": a, "start": EPOCH + start * 60, "end": EPOCH + t * 60, "end_reason": reason}
        )
    span_rows = [
        {
            "job_id": "j",
            "attempt": a,
            "phase": p,
            "start": EPOCH + s * 60,
            "end": EPOCH + e * 60,
            "stage": None,
            "cursor_start": c0,
            "cursor_end": c1,
        }
        for a, p, s, e, c0, c1 in spans
    ]
    write_trace(
        path,
        attempts=pl.DataFrame(attempts),
        spans=pl.DataFrame(
            span_rows, schema_overrides={"stage": pl.String, "cursor_start": pl.Float64, "cursor_end": pl.Float64}
        ),
        jobs=pl.DataFrame({"job_id": ["j"], "model": ["X"], "gpus": [8]}),
        fmt="csv",
        metadata={"synthetic": True, "source": "tests/test_restarts.py"},
    )
    return path


def test_attribution_of_metric_job_summaries(tmp_path) -> None:
    """Before/after L1 summaries straight from ``metric.job_summary`` of two traces.

    Trainer init 10 -> 5 min in every attempt.  By hand: TTS 20 -> 15 min; recovery windows
    (last productive instant to the next) 2 x 30 -> 2 x 25 min; shutdown 10 both.  Saved 5 + 10 = 15 min:
    direct trainer start 5/15 = 33.3 %; cascade 5 + min(2 x 5, 10) = 15 min = 100 %.
    """
    from ettcore import metric
    from ettcore.trace import load_trace

    before = metric.job_summary(load_trace(_trace(tmp_path / "before", 10)))
    after = metric.job_summary(load_trace(_trace(tmp_path / "after", 5)))
    assert before["tts_s"][0] == 20 * 60 and after["tts_s"][0] == 15 * 60
    assert before["ttr_total_s"][0] == 60 * 60 and after["ttr_total_s"][0] == 50 * 60
    t = attribute_savings(before, after)
    row = t.filter(pl.col("source") == "trainer_start").row(0, named=True)
    assert row["direct_pct"] == pytest.approx(100 / 3)
    assert row["cascade_pct"] == pytest.approx(100.0)
    assert t.filter(pl.col("source") == "total")["direct_s"][0] == 15 * 60


def test_pairs_without_failures_have_finite_ratios() -> None:
    p = pair_savings(pl.DataFrame([_l1("m", 500, 0, 0)]), pl.DataFrame([_l1("m", 400, 0, 0)]))
    assert p["ttr_to_tts"][0] == 0.0 and p["inherited_s"][0] == 0.0
