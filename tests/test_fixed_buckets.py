"""Trends in fixed buckets shorter than a day (``metric.trend(t, "5m")``), checked against the plain-Python reference.

The reference cuts every job's per-instant pieces at the same boundaries; wall and productive GPU-hours per
bucket and the interruptions per bucket must agree.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
import reference as ref  # tests/reference.py, the plain-Python oracle
import slurm_oracle  # tests/slurm_oracle.py

from ettcore import metric
from ettcore.config import DATA_DIR, SAMPLE_TRACE
from ettcore.trace import load_trace

SLURM_FLEET = DATA_DIR / "slurm-fleet" / "trace"


def reference_buckets(trace_dir, seconds: int) -> dict[int, dict[str, float]]:
    """Per bucket start (s): wall and productive GPU-hours from the reference's per-instant pieces."""
    jobs, attempts, spans = slurm_oracle.reference_input(trace_dir)
    res = ref.reference_metrics(jobs, attempts, spans)
    atts, sps = ref.clip_to_as_of(attempts, spans, res["as_of"], res["cut"])
    out: dict[int, dict[str, float]] = defaultdict(lambda: {"wall": 0.0, "productive": 0.0})
    step = seconds * 1000
    for job_id, job in res["jobs"].items():
        edges = list(range(job["t0"] // step * step, job["t1"] + step, step))
        pieces = ref.job_pieces(
            [a for a in atts if a["job_id"] == job_id], [s for s in sps if s["job_id"] == job_id], extra_bounds=edges
        )
        for a, b, _bucket, _phase, comp in pieces:
            row = out[a // step * seconds]
            row["wall"] += job["gpus"] * (b - a) / 3.6e6
            if comp == ref.PRODUCTIVE:
                row["productive"] += job["gpus"] * (b - a) / 3.6e6
    return out


@pytest.mark.parametrize(
    "trace_dir,every,seconds", [(SLURM_FLEET, "5m", 300), (SLURM_FLEET, "hour", 3600), (SAMPLE_TRACE, "30m", 1800)]
)
def test_buckets_match_the_reference(trace_dir, every, seconds):
    got = metric.trend(load_trace(trace_dir), every)
    want = reference_buckets(trace_dir, seconds)
    got_by = {int(r["bucket_start"].timestamp()): r for r in got.iter_rows(named=True)}
    for start, w in want.items():
        assert start in got_by, start
        assert got_by[start]["wall_gpu_h"] == pytest.approx(w["wall"], abs=1e-6)
        assert got_by[start]["productive_gpu_h"] == pytest.approx(w["productive"], abs=1e-6)
    for start, g in got_by.items():  # buckets the reference has nothing in are empty
        if start not in want:
            assert g["wall_gpu_h"] == pytest.approx(0, abs=1e-9)


def test_interruptions_are_counted_in_the_bucket_where_they_happen():
    got = metric.trend(load_trace(SLURM_FLEET), "5m")
    _, attempts, _ = slurm_oracle.reference_input(SLURM_FLEET)
    ends = [a for a in attempts if a["end_reason"] in ("failure", "preemption")]
    assert got["nof"].sum() == len(ends) > 0
    assert got["nof_preemption"].sum() == sum(a["end_reason"] == "preemption" for a in ends)
    for r in got.iter_rows(named=True):
        lo = int(r["bucket_start"].timestamp()) * 1000
        assert r["nof"] == sum(lo <= a["end"] < lo + 300_000 for a in ends), r["bucket_start"]
