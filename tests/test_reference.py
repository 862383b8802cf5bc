"""The reference implementation (tests/reference.py) against numbers worked out by hand.

Expected values are typed from the spec's worked example (section 7) or derived
by hand in the comments; none is computed by the code under test.  Times in the
cases are minutes after a base instant; the helpers convert to integer ms.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
import reference as ref  # tests/reference.py, the plain-Python oracle

M = 60_000  # ms per minute
BASE = 1_780_000_000_000  # 2026-05-28T20:26:40Z, an arbitrary base instant


def T(minutes: float) -> int:
    return BASE + round(minutes * M)


def att(attempt: int, start: float, end: float | None, reason: str, job: str = "j") -> dict:
    return dict(job_id=job, attempt=attempt, start=T(start), end=None if end is None else T(end), end_reason=reason)


def sp(attempt: int, phase: str, start: float, end: float, c0=None, c1=None, job: str = "j") -> dict:
    return dict(job_id=job, attempt=attempt, phase=phase, start=T(start), end=T(end), cursor_start=c0, cursor_end=c1)


def one(attempts, spans, gpus=1, as_of=None):
    ref.check_valid(attempts, spans)
    return ref.reference_metrics([dict(job_id="j", gpus=gpus)], attempts, spans, as_of)["jobs"]["j"]


def minutes(x: float) -> float:
    return pytest.approx(x * 60, abs=1e-9)


def assert_identity(r):
    total = r["productive_s"] + r["tts_s"] + r["ttr_total_s"] + r["in_training_loss_s"] + r["shutdown_tail_s"]
    assert total == pytest.approx(r["wall_s"], abs=1e-9)
    assert sum(r["l2"].values()) == pytest.approx(r["wall_s"], abs=1e-9)
    assert sum(r["l2_phase"].values()) == pytest.approx(r["wall_s"], abs=1e-9)


# --------------------------------------------------------------------------- spec section 7

WORKED_ATTEMPTS = [att(0, 0, 50, "failure"), att(1, 55, 120, "completed")]
WORKED_SPANS = [
    sp(0, "hardware_setup", 0, 5),
    sp(0, "trainer_init", 5, 10),
    sp(0, "pt2_compile", 10, 20),
    sp(0, "train", 20, 30, 0, 100),
    sp(0, "checkpoint_save", 30, 31),
    sp(0, "train", 31, 45, 100, 240),
    sp(1, "hardware_setup", 55, 58),
    sp(1, "trainer_init", 58, 62),
    sp(1, "checkpoint_load", 62, 64),
    sp(1, "pt2_compile", 64, 70),
    sp(1, "train", 70, 110, 100, 500),
    sp(1, "shutdown", 110, 120),
]


def test_worked_example_level1():
    r = one(WORKED_ATTEMPTS, WORKED_SPANS, gpus=128)
    # Spec: productive 20-30, 31-45, 84-110 = 50 min; wall 120; ETT% 41.67.
    assert r["wall_s"] == minutes(120)
    assert r["productive_s"] == minutes(50)
    assert round(r["ett_pct"], 2) == 41.67
    # TTS 20, NoF 1, recovery 45-84 = 39, in-training loss 1 (30-31), shutdown tail 10.
    assert r["tts_s"] == minutes(20)
    assert r["nof"] == 1 and r["nof_failure"] == 1 and r["nof_preemption"] == 0
    assert r["ttr_total_s"] == minutes(39)
    assert r["ttr_mean_s"] == minutes(39)
    assert r["in_training_loss_s"] == minutes(1)
    assert r["shutdown_tail_s"] == minutes(10)
    assert r["status"] == "completed"
    assert_identity(r)


def test_worked_example_level2():
    r = one(WORKED_ATTEMPTS, WORKED_SPANS, gpus=128)
    # Spec: scheduling 5, hardware_setup 8, trainer_init 11, pt2_compile 16,
    # wasted_training 15 (1 save + 14 replay), shutdown 10, unattributed 5.
    expected = dict(
        scheduling=5, hardware_setup=8, trainer_init=11, pt2_compile=16, wasted_training=15, shutdown=10, unattributed=5
    )
    assert r["components"] == {k: minutes(v) for k, v in expected.items()}
    # Cells by hand: TTS = hw 0-5, init 5-10, compile 10-20; recovery 45-84 =
    # unattributed 45-50, gap 50-55, hw 55-58, init 58-62 + load 62-64,
    # compile 64-70, replay 70-84; in-training loss = save 30-31; tail = shutdown.
    cells = {
        ("tts", "hardware_setup"): 5,
        ("tts", "trainer_init"): 5,
        ("tts", "pt2_compile"): 10,
        ("productive", ref.PRODUCTIVE): 50,
        ("in_training_loss", "wasted_training"): 1,
        ("recovery", "unattributed"): 5,
        ("recovery", "scheduling"): 5,
        ("recovery", "hardware_setup"): 3,
        ("recovery", "trainer_init"): 6,
        ("recovery", "pt2_compile"): 6,
        ("recovery", "wasted_training"): 14,
        ("shutdown_tail", "shutdown"): 10,
    }
    assert r["l2"] == {k: minutes(v) for k, v in cells.items()}
    assert r["l2_phase"][("recovery", "checkpoint_load")] == minutes(2)
    assert r["l2_phase"][("recovery", "train")] == minutes(14)
    # Busy = plain span sums: train 10 + 14 + 40 = 64 min.
    assert r["busy"]["train"] == minutes(64)
    assert r["busy"]["hardware_setup"] == minutes(8)


def test_worked_example_fleet_gpu_hours():
    res = ref.reference_metrics([dict(job_id="j", gpus=128)], WORKED_ATTEMPTS, WORKED_SPANS)
    (fleet,) = ref.reference_fleet(res)
    # 128 GPUs x 2 h wall = 256 GPU-h; productive 128 x 50/60 h = 106.667; compile 128 x 16/60 = 34.133.
    assert fleet["wall_gpu_h"] == pytest.approx(256)
    assert fleet["productive_gpu_h"] == pytest.approx(128 * 50 / 60)
    assert fleet["pt2_compile_gpu_h"] == pytest.approx(128 * 16 / 60)
    assert fleet["ett_pct"] == pytest.approx(100 * 50 / 120)
    assert fleet["nof"] == 1 and fleet["jobs"] == 1


# --------------------------------------------------------------------------- L2 tie rules


def test_equal_end_goes_to_later_phase():
    # hardware_setup 2-6 and trainer_init 0-6 end together: trainer_init is later
    # in the vocabulary, so it takes all of 0-6 (6 min); hardware_setup gets 0.
    r = one(
        [att(0, 0, 10, "completed")],
        [sp(0, "trainer_init", 0, 6), sp(0, "hardware_setup", 2, 6), sp(0, "train", 6, 10, 0, 10)],
    )
    assert r["components"]["trainer_init"] == minutes(6)
    assert r["components"]["hardware_setup"] == 0
    assert r["tts_s"] == minutes(6) and r["productive_s"] == minutes(4)
    assert_identity(r)


def test_largest_end_wins_over_vocabulary_order():
    # hardware_setup 0-8 ends after trainer_init 2-5, so it takes 2-5 too: 8 min.
    # pt2_compile 8-10 covers the rest of TTS; train 10-12 productive.
    spans = [
        sp(0, "hardware_setup", 0, 8),
        sp(0, "trainer_init", 2, 5),
        sp(0, "pt2_compile", 8, 10),
        sp(0, "train", 10, 12, 0, 5),
    ]
    r = one([att(0, 0, 12, "completed")], spans)
    assert r["components"]["hardware_setup"] == minutes(8)
    assert r["components"]["trainer_init"] == 0
    assert r["components"]["pt2_compile"] == minutes(2)
    assert r["busy"]["trainer_init"] == minutes(3)  # busy still counts the hidden span


def test_background_span_over_productive_time_costs_nothing():
    # eval 5-15 overlaps productive train 0-10: 5-10 productive, 10-15 eval.
    # Train 15-20 follows, so 10-15 is in-training loss (no interruption).
    spans = [sp(0, "train", 0, 10, 0, 10), sp(0, "eval", 5, 15), sp(0, "train", 15, 20, 10, 20)]
    r = one([att(0, 0, 20, "completed")], spans)
    assert r["productive_s"] == minutes(15)
    assert r["in_training_loss_s"] == minutes(5)
    assert r["l2"] == {("productive", ref.PRODUCTIVE): minutes(15), ("in_training_loss", "wasted_training"): minutes(5)}
    assert r["tts_s"] == 0 and r["shutdown_tail_s"] == 0


def test_replay_loses_to_later_ending_span_and_wins_ties():
    # Attempt 0: train 0-10 cursor 0-50 (first span: productive), fails at 10.
    # Attempt 1 (12-30): pt2_compile 12-17, checkpoint_load 14-16, train 16-26
    # cursor 0-100 with h = 50: split = 16 + 50 * 10 / 100 = 21, so 16-21 is
    # replay.  12-16: compile (ends 17) beats load (ends 16); 16-21: the replay
    # part (ends 21) beats compile (ends 17).  So compile 4, replay 5, load 0.
    # Productive 21-26; shutdown 26-30.
    spans = [
        sp(0, "train", 0, 10, 0, 50),
        sp(1, "pt2_compile", 12, 17),
        sp(1, "checkpoint_load", 14, 16),
        sp(1, "train", 16, 26, 0, 100),
        sp(1, "shutdown", 26, 30),
    ]
    r = one([att(0, 0, 10, "failure"), att(1, 12, 30, "completed")], spans)
    assert r["components"]["wasted_training"] == minutes(5)
    assert r["components"]["pt2_compile"] == minutes(4)
    assert r["components"]["trainer_init"] == 0
    assert r["components"]["scheduling"] == minutes(2)
    # L1: productive 0-10 and 21-26 = 15; recovery 10-21 = 11; tail 4; TTS 0.
    assert r["productive_s"] == minutes(15)
    assert r["ttr_total_s"] == minutes(11)
    assert r["shutdown_tail_s"] == minutes(4)
    assert r["tts_s"] == 0
    assert_identity(r)


def test_replay_ties_with_non_train_span_go_to_train():
    # As above but checkpoint_load 16-21 ends exactly with the replay part 16-21:
    # train (index 6) stands later than checkpoint_load (index 4) -> wasted_training.
    spans = [sp(0, "train", 0, 10, 0, 50), sp(1, "checkpoint_load", 16, 21), sp(1, "train", 16, 26, 0, 100)]
    r = one([att(0, 0, 10, "failure"), att(1, 12, 26, "completed")], spans)
    assert r["l2_phase"][("recovery", "train")] == minutes(5)
    assert ("recovery", "checkpoint_load") not in r["l2_phase"]
    assert r["l2_phase"][("recovery", "unattributed")] == minutes(4)  # 12-16 nothing recorded
    assert r["busy"]["checkpoint_load"] == minutes(5)


def test_replay_split_is_floored_to_the_millisecond():
    # One attempt, ms times: train 0-1000 ms cursor 0-3; then train 1000-1010 ms
    # cursor 0-3 with h = 3: split = 1000 + floor(3*10/3) = 1010 -> all replay.
    # Then train 1010-1020 ms cursor 2-5, h = 3: split = 1010 + floor(1*10/3) =
    # 1010 + floor(3.33) = 1013 -> replay 3 ms, productive 7 ms.
    a = [dict(job_id="j", attempt=0, start=BASE, end=BASE + 1020, end_reason="completed")]
    s = [
        dict(job_id="j", attempt=0, phase="train", start=BASE, end=BASE + 1000, cursor_start=0, cursor_end=3),
        dict(job_id="j", attempt=0, phase="train", start=BASE + 1000, end=BASE + 1010, cursor_start=0, cursor_end=3),
        dict(job_id="j", attempt=0, phase="train", start=BASE + 1010, end=BASE + 1020, cursor_start=2, cursor_end=5),
    ]
    r = one(a, s)
    assert r["productive_s"] == pytest.approx(1.007, abs=1e-12)
    assert r["components"]["wasted_training"] == pytest.approx(0.013, abs=1e-12)
    assert r["in_training_loss_s"] == pytest.approx(0.013, abs=1e-12)


def test_high_water_mark_is_max_not_last():
    # Cursors 0-100 (0-10 min), 50-80 (10-20, all below 100: replay), 80-150
    # (20-27): h = 100 -> split = 20 + floor(20 * 7 min / 70) = 22 min.
    spans = [sp(0, "train", 0, 10, 0, 100), sp(0, "train", 10, 20, 50, 80), sp(0, "train", 20, 27, 80, 150)]
    r = one([att(0, 0, 27, "completed")], spans)
    assert r["productive_s"] == minutes(15)  # 0-10 and 22-27
    assert r["components"]["wasted_training"] == minutes(12)  # 10-22
    assert r["in_training_loss_s"] == minutes(12)


def test_flat_cursor_spans():
    # c0 == c1: replay if c0 <= h, else productive.  0-10 cursor 0-10 (first),
    # 10-12 cursor 10-10 (10 <= h=10: replay), 12-15 cursor 20-20 (> h: productive).
    spans = [sp(0, "train", 0, 10, 0, 10), sp(0, "train", 10, 12, 10, 10), sp(0, "train", 12, 15, 20, 20)]
    r = one([att(0, 0, 15, "completed")], spans)
    assert r["productive_s"] == minutes(13)
    assert r["components"]["wasted_training"] == minutes(2)


def test_first_train_span_is_productive_whatever_its_cursor():
    r = one([att(0, 0, 5, "completed")], [sp(0, "train", 1, 5, 1000, 1000)])
    assert r["productive_s"] == minutes(4)
    assert r["tts_s"] == minutes(1)
    assert r["components"]["unattributed"] == minutes(1)


# --------------------------------------------------------------------------- L1 edges


def test_startup_failure_splits_tts_and_recovery():
    # Attempt 0 (0-10) fails before training: hardware_setup 0-4, hang 4-10.
    # Attempt 1 (12-30): hardware_setup 12-14, train 14-28, shutdown 28-30.
    # TTS = 0-10 (first interruption before first productive instant 14);
    # recovery = 10-14 = 4; productive 14; tail 2.  NoF 1, TTR mean 4.
    spans = [
        sp(0, "hardware_setup", 0, 4),
        sp(1, "hardware_setup", 12, 14),
        sp(1, "train", 14, 28, 0, 100),
        sp(1, "shutdown", 28, 30),
    ]
    r = one([att(0, 0, 10, "failure"), att(1, 12, 30, "completed")], spans)
    assert (r["tts_s"], r["ttr_total_s"], r["ttr_mean_s"]) == (minutes(10), minutes(4), minutes(4))
    assert (r["productive_s"], r["shutdown_tail_s"], r["in_training_loss_s"]) == (minutes(14), minutes(2), 0)
    assert r["l2"][("tts", "hardware_setup")] == minutes(4)
    assert r["l2"][("tts", "unattributed")] == minutes(6)
    assert r["l2"][("recovery", "scheduling")] == minutes(2)
    assert r["l2"][("recovery", "hardware_setup")] == minutes(2)
    assert_identity(r)


def test_never_trained_without_interruption_is_all_tts():
    r = one([att(0, 0, 10, "cancelled")], [sp(0, "trainer_init", 0, 5)])
    assert r["tts_s"] == minutes(10) and r["productive_s"] == 0 and r["ett_pct"] == 0
    assert r["components"]["trainer_init"] == minutes(5)
    assert r["components"]["unattributed"] == minutes(5)
    assert r["nof"] == 0 and r["ttr_mean_s"] is None


def test_never_trained_with_failure_is_tts_then_recovery():
    # Fails at 10, re-queued 10-15, cancelled at 20: TTS 0-10, recovery 10-20.
    r = one([att(0, 0, 10, "failure"), att(1, 15, 20, "cancelled")], [])
    assert r["tts_s"] == minutes(10) and r["ttr_total_s"] == minutes(10)
    assert r["components"]["scheduling"] == minutes(5) and r["components"]["unattributed"] == minutes(15)


def test_trailing_stretch_with_interruption_is_recovery():
    # Train 0-15, then the job fails at 20 and never restarts: 15-20 is recovery.
    r = one([att(0, 0, 20, "preemption")], [sp(0, "train", 0, 15, 0, 10)])
    assert r["ttr_total_s"] == minutes(5) and r["shutdown_tail_s"] == 0
    assert r["nof_preemption"] == 1 and r["nof_failure"] == 0


def test_middle_stretch_with_preemption_and_zero_requeue_gap():
    # Attempt 0 0-10 (train 2-10) preempted; attempt 1 starts at once at 10:
    # train 13-20 cursor resumes above h (productive).  Stretch 10-13 holds the
    # interruption at 10 -> recovery 3; TTS 2; NoF 1.
    spans = [sp(0, "train", 2, 10, 0, 10), sp(1, "hardware_setup", 10, 13), sp(1, "train", 13, 20, 10, 20)]
    r = one([att(0, 0, 10, "preemption"), att(1, 10, 20, "completed")], spans)
    assert (r["tts_s"], r["ttr_total_s"], r["productive_s"]) == (minutes(2), minutes(3), minutes(15))
    assert r["components"]["scheduling"] == 0


def test_cancelled_and_completed_attempt_ends_are_not_interruptions():
    # Attempt 0 0-10 cancelled after training 0-8; attempt 1 12-20 train 12-20
    # productive (cursor above h).  Middle stretch 8-12 has no interruption:
    # in-training loss 4 (2 unattributed + 2 scheduling).
    spans = [sp(0, "train", 0, 8, 0, 8), sp(1, "train", 12, 20, 8, 16)]
    r = one([att(0, 0, 10, "cancelled"), att(1, 12, 20, "completed")], spans)
    assert r["nof"] == 0 and r["in_training_loss_s"] == minutes(4) and r["ttr_total_s"] == 0
    assert r["l2"][("in_training_loss", "scheduling")] == minutes(2)


# --------------------------------------------------------------------------- as-of


def test_explicit_as_of_clips_spans_and_prorates_the_cursor():
    # Attempt 0 runs 0-30 and fails at 30; as_of = 15 (before the failure):
    # the attempt ends at 15 as running, NoF 0.  Train 5-25 cursor 0-200 is
    # clipped to 5-15 (cursor_end 100).  Productive 5-15 = 10; TTS 0-5 = 5.
    spans = [sp(0, "hardware_setup", 0, 5), sp(0, "train", 5, 25, 0, 200), sp(0, "shutdown", 25, 30)]
    r = one([att(0, 0, 30, "failure")], spans, as_of=T(15))
    assert r["wall_s"] == minutes(15) and r["productive_s"] == minutes(10)
    assert r["nof"] == 0 and r["status"] == "running"
    assert r["busy"]["train"] == minutes(10) and "shutdown" not in r["busy"]


def test_attempt_starting_at_as_of_is_dropped():
    # as_of 12 drops the attempt that starts at 12 (start >= as_of) entirely.
    attempts = [att(0, 0, 10, "failure"), att(1, 12, 20, "completed")]
    spans = [sp(0, "train", 0, 10, 0, 10), sp(1, "train", 12, 20, 10, 20)]
    r = one(attempts, spans, as_of=T(12))
    # Only attempt 0 remains; its end 10 <= 12 keeps its failure.
    assert r["wall_s"] == minutes(10) and r["nof"] == 1 and r["ttr_total_s"] == 0
    assert r["status"] == "failure"


def test_default_as_of_is_latest_timestamp_in_the_trace():
    # Job r is running (end None), last span ends at 30; job k ends at 40.
    # Default as_of = 40: job r's wall is 0-40, 30-40 unattributed shutdown tail.
    attempts = [att(0, 0, None, "running", job="r"), att(0, 5, 40, "completed", job="k")]
    spans = [sp(0, "train", 0, 30, 0, 10, job="r"), sp(0, "train", 5, 40, 0, 10, job="k")]
    ref.check_valid(attempts, spans)
    res = ref.reference_metrics(None, attempts, spans)
    assert res["as_of"] == T(40)
    r = res["jobs"]["r"]
    assert r["wall_s"] == minutes(40) and r["shutdown_tail_s"] == minutes(10) and r["status"] == "running"
    assert r["components"]["unattributed"] == minutes(10)
    assert res["jobs"]["k"]["model"] == "k" and res["jobs"]["k"]["gpus"] == 1  # defaults without a jobs table


def test_default_as_of_keeps_an_attempt_that_starts_at_the_latest_instant():
    """Without an explicit as-of nothing recorded is cut: a zero-length attempt at the trace's latest instant (40,
    while job r runs) is measured, so job k ends completed at 40; an explicit as-of 40 cuts it (k ends failed at 30).
    Found by the property test (hypothesis) against the SQL, whose cut is as-of + 1 ms by default."""
    attempts = [
        att(0, 0, None, "running", job="r"),
        att(0, 5, 30, "failure", job="k"),
        att(1, 40, 40, "completed", job="k"),
    ]
    spans = [sp(0, "train", 0, 30, 0, 10, job="r")]
    ref.check_valid(attempts, spans)
    res = ref.reference_metrics(None, attempts, spans)
    assert res["as_of"] == T(40) and res["cut"] == T(40) + 1
    k = res["jobs"]["k"]
    assert k["status"] == "completed" and k["wall_s"] == minutes(35) and k["nof"] == 1
    assert k["ttr_total_s"] == minutes(10)  # 30-40: scheduling after the failure, until the attempt that completes
    cut = ref.reference_metrics(None, attempts, spans, as_of=T(40))["jobs"]["k"]
    assert cut["status"] == "failure" and cut["wall_s"] == minutes(25)


# --------------------------------------------------------------------------- fleet and trend


def test_fleet_is_gpu_weighted_and_mean_is_not():
    # Job a: 1 GPU, 10 min all productive (100%).  Job b: 3 GPUs, 10 min, never
    # trains (0%).  Weighted: 10 / (10 + 30) = 25%; mean: 50%.
    attempts = [att(0, 0, 10, "completed", job="a"), att(0, 0, 10, "completed", job="b")]
    spans = [sp(0, "train", 0, 10, 0, 1, job="a")]
    jobs = [dict(job_id="a", gpus=1, model="m1", team="x"), dict(job_id="b", gpus=3, model="m2", team="x")]
    res = ref.reference_metrics(jobs, attempts, spans)
    (fleet,) = ref.reference_fleet(res)
    assert fleet["ett_pct"] == pytest.approx(25.0) and fleet["ett_mean_pct"] == pytest.approx(50.0)
    assert fleet["unattributed_gpu_h"] == pytest.approx(3 * 10 / 60)
    by_model = ref.reference_fleet(res, by="model")
    assert [(g["key"], g["ett_pct"]) for g in by_model] == [("m1", pytest.approx(100.0)), ("m2", pytest.approx(0.0))]
    (team,) = ref.reference_fleet(res, by="team")
    assert team["key"] == "x" and team["jobs"] == 2


def ms_of(iso: str) -> int:
    return int(datetime.fromisoformat(iso).replace(tzinfo=timezone.utc).timestamp() * 1000)


def test_trend_prorates_across_midnight_week_and_month():
    # 2 GPUs, Sat 2026-01-31 23:00 -> Sun 2026-02-01 01:00: hardware_setup
    # 23:00-23:30, train 23:30-01:00.  Day buckets: Jan 31 = 1 h wall (0.5 h
    # productive) x 2 GPUs; Feb 1 = 1 h productive x 2.  Week (Monday start):
    # both halves fall in the week of Mon 2026-01-26.  Month: Jan and Feb.
    start, mid, end = ms_of("2026-01-31T23:00:00"), ms_of("2026-01-31T23:30:00"), ms_of("2026-02-01T01:00:00")
    attempts = [dict(job_id="j", attempt=0, start=start, end=end, end_reason="completed")]
    spans = [
        dict(job_id="j", attempt=0, phase="hardware_setup", start=start, end=mid, cursor_start=None, cursor_end=None),
        dict(job_id="j", attempt=0, phase="train", start=mid, end=end, cursor_start=0, cursor_end=9),
    ]
    jobs = [dict(job_id="j", gpus=2)]
    day = ref.reference_trend(jobs, attempts, spans, "day")
    assert [r["bucket_start"].isoformat() for r in day] == ["2026-01-31T00:00:00+00:00", "2026-02-01T00:00:00+00:00"]
    assert [r["wall_gpu_h"] for r in day] == [pytest.approx(2.0), pytest.approx(2.0)]
    assert [r["productive_gpu_h"] for r in day] == [pytest.approx(1.0), pytest.approx(2.0)]
    assert day[0]["hardware_setup_gpu_h"] == pytest.approx(1.0) and day[0]["ett_pct"] == pytest.approx(50.0)
    (week,) = ref.reference_trend(jobs, attempts, spans, "week")
    assert week["bucket_start"].isoformat() == "2026-01-26T00:00:00+00:00"
    assert week["wall_gpu_h"] == pytest.approx(4.0) and week["ett_pct"] == pytest.approx(75.0)
    month = ref.reference_trend(jobs, attempts, spans, "month")
    assert [r["bucket_start"].isoformat()[:10] for r in month] == ["2026-01-01", "2026-02-01"]


def test_trend_week_boundary_is_monday():
    # Sun 2026-02-01 23:30 -> Mon 2026-02-02 00:30 crosses an ISO week boundary.
    start, end = ms_of("2026-02-01T23:30:00"), ms_of("2026-02-02T00:30:00")
    attempts = [dict(job_id="j", attempt=0, start=start, end=end, end_reason="completed")]
    week = ref.reference_trend(None, attempts, [], "week")
    assert [r["bucket_start"].isoformat()[:10] for r in week] == ["2026-01-26", "2026-02-02"]
    assert [r["unattributed_gpu_h"] for r in week] == [pytest.approx(0.5), pytest.approx(0.5)]


# --------------------------------------------------------------------------- the checker


@pytest.mark.parametrize(
    "attempts, spans",
    [
        ([att(0, 0, 10, "completed")], [sp(0, "train", 0, 5, 0, 10), sp(0, "train", 4, 8, 10, 20)]),  # train overlap
        ([att(0, 0, 10, "completed")], [sp(0, "train", 0, 5, 10, 5)]),  # decreasing cursor
        ([att(0, 0, 10, "completed")], [sp(0, "eval", 5, 11)]),  # outside the attempt
        ([att(0, 0, 10, "completed"), att(1, 9, 12, "completed")], []),  # overlapping attempts
        ([att(0, 0, None, "completed")], []),  # null end without running
        ([att(0, 0, 10, "completed")], [sp(0, "nap", 0, 1)]),  # unknown phase
    ],
)
def test_check_valid_rejects_broken_traces(attempts, spans):
    with pytest.raises(ValueError):
        ref.check_valid(attempts, spans)


# --------------------------------------------------------------------------- properties of the reference itself

import random  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from trace_strategies import traces  # noqa: E402

FAST = settings(
    max_examples=80,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FAST
@given(traces())
def test_generated_traces_are_valid_and_satisfy_the_identities(trace):
    ref.check_valid(trace["attempts"], trace["spans"])
    res = ref.reference_metrics(trace["jobs"], trace["attempts"], trace["spans"])
    assert res["jobs"], "every generated job keeps at least one attempt"
    for r in res["jobs"].values():
        assert r["wall_s"] > 0
        assert_identity(r)
        assert sum(r["components"].values()) + r["productive_s"] == pytest.approx(r["wall_s"], abs=1e-9)
        assert all(v >= 0 for v in r["l2"].values())
        assert r["nof"] == r["nof_failure"] + r["nof_preemption"]
        # Attributed time of a span phase never exceeds its busy time (scheduling
        # also takes re-queue gaps, so it is left out); replay <= train busy.
        for phase, busy in r["busy"].items():
            if phase == "scheduling":
                continue
            attributed = sum(v for (bucket, p), v in r["l2_phase"].items() if p == phase)
            assert attributed <= busy + 1e-9, phase


@FAST
@given(traces(), st.integers(0, 2**16))
def test_reference_ignores_row_order(trace, seed):
    rng = random.Random(seed)
    a, s = list(trace["attempts"]), list(trace["spans"])
    rng.shuffle(a)
    rng.shuffle(s)
    r1 = ref.reference_metrics(trace["jobs"], trace["attempts"], trace["spans"])
    r2 = ref.reference_metrics(trace["jobs"], a, s)
    strip = lambda res: {k: {f: v for f, v in j.items() if f != "pieces"} for k, j in res["jobs"].items()}  # noqa: E731
    assert strip(r1) == strip(r2)


@FAST
@given(traces())
def test_trend_buckets_add_up_to_the_fleet(trace):
    res = ref.reference_metrics(trace["jobs"], trace["attempts"], trace["spans"])
    (fleet,) = ref.reference_fleet(res)
    for every in ref.EVERY:
        rows = ref.reference_trend(trace["jobs"], trace["attempts"], trace["spans"], every)
        starts = [r["bucket_start_ms"] for r in rows]
        assert starts == sorted(set(starts))
        for col in ["wall_gpu_h", "productive_gpu_h"] + [f"{c}_gpu_h" for c in ref.ALL_COMPONENTS]:
            assert sum(r[col] for r in rows) == pytest.approx(fleet[col], rel=1e-9, abs=1e-9), (every, col)


@FAST
@given(traces())
def test_far_future_as_of_changes_nothing_for_finished_traces(trace):
    if any(a["end"] is None for a in trace["attempts"]):
        return
    latest = max(a["end"] for a in trace["attempts"])
    r1 = ref.reference_metrics(trace["jobs"], trace["attempts"], trace["spans"])
    r2 = ref.reference_metrics(trace["jobs"], trace["attempts"], trace["spans"], as_of=latest + 1)
    assert {k: j["l2"] for k, j in r1["jobs"].items()} == {k: j["l2"] for k, j in r2["jobs"].items()}
