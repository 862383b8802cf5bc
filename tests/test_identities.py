"""The L1 identity and 'L2 sums to wall' on every bundled trace, checked exactly (to the millisecond)."""

from __future__ import annotations

import pytest

from ettcore import metric
from ettcore.config import DATA_DIR
from ettcore.trace import load_trace

BUNDLED = sorted(p.parent for p in DATA_DIR.glob("*/attempts.*")) + sorted(p.parent for p in DATA_DIR.glob("*/*/attempts.*"))


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: str(p.relative_to(DATA_DIR)))
def test_identity_and_l2_sum(path):
    trace = load_trace(path)
    jobs = metric.job_summary(trace)
    assert jobs.height > 0
    l2 = metric.l2_matrix(trace).group_by("job_id").agg(l2_total=__import__("polars").col("seconds").sum())
    joined = jobs.join(l2, on="job_id")
    for r in joined.iter_rows(named=True):
        l1 = r["productive_s"] + r["tts_s"] + r["ttr_total_s"] + r["in_training_loss_s"] + r["shutdown_tail_s"]
        comps = r["productive_s"] + sum(r[c] for c in metric.COMPONENT_COLUMNS)
        assert l1 == pytest.approx(r["wall_s"], abs=1e-3), r["job_id"]
        assert comps == pytest.approx(r["wall_s"], abs=1e-3), r["job_id"]
        assert r["l2_total"] == pytest.approx(r["wall_s"], abs=1e-3), r["job_id"]
