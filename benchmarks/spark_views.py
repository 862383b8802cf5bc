"""How the Spark engine holds the metric's kept views: ``persist`` against ``checkpoint`` (a benchmark, not part of
``make test``).

The Spark engine registers the metric as a chain of temp views (``register_metric_views``); a few are kept (a row a
job or attempt, the per-instant attribution, the per-job metric).  ``persist`` caches them at their first use, and
every later query still analyses and optimizes the whole chain below them; ``checkpoint`` computes them once when the
trace is opened (``localCheckpoint``) and cuts their lineage, so later queries plan over stored rows.

In one process, one Spark session, the two ways ``--rounds`` times (default 3, in alternating order) on one trace
(default ``data/sample``, 4 jobs): the seconds to open the trace (read, fingerprint, register and materialize the
views) and to answer what ``ett summarize`` asks (per-job frame, fleet row by team, daily trend, causes), and that the
two ways give the same frames. Printed: each way's min and median seconds, and the ratio checkpoint / persist of each
(ratios within one run: the machine is shared and noisy).

Run: ``.venv/bin/python benchmarks/spark_views.py [--master local[2]|spark://...|sc://...] [--trace DIR]
[--rounds N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from polars.testing import assert_frame_equal  # noqa: E402

from ettcore import metric  # noqa: E402
from ettcore.engines import spark as sp  # noqa: E402
from ettcore.trace import load_trace  # noqa: E402

WAYS = ("persist", "checkpoint")
# the small-data settings of the project's Spark tests (tests/conftest.py), where the session allows them
SMALL = {"spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false"}


def answers(st: sp.SparkTrace) -> list:
    return [
        metric.job_summary(st),
        metric.fleet_summary(st, by="team"),
        metric.trend(st, "day"),
        metric.cause_summary(st),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--trace", default=str(ROOT / "data" / "sample"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    trace = load_trace(a.trace)
    session = sp.get_session(a.master, SMALL)
    times: dict[str, dict[str, list[float]]] = {w: {"open_s": [], "answer_s": []} for w in WAYS}
    first: dict[str, list] = {}
    for r in range(a.rounds):
        for way in WAYS if r % 2 == 0 else WAYS[::-1]:  # alternate which goes first (the first warms the JVM)
            t = time.perf_counter()
            st = sp.SparkTrace(spark=session, trace=trace, keep=way)
            with sp.input_errors(trace.path):
                sp.register_trace(st)
            times[way]["open_s"].append(time.perf_counter() - t)
            t = time.perf_counter()
            got = answers(st)
            times[way]["answer_s"].append(time.perf_counter() - t)
            for a_, b_ in zip(first.setdefault("frames", got), got):
                assert_frame_equal(a_, b_)
    out = {
        "trace": a.trace,
        "master": a.master,
        "rounds": a.rounds,
        "machine": f"{platform.machine()}, {platform.python_version()}",
    }
    for way in WAYS:
        for k, v in times[way].items():
            out[f"{way}_{k}_min"] = min(v)
            out[f"{way}_{k}_median"] = statistics.median(v)
    for k in ("open_s", "answer_s"):
        for stat in ("min", "median"):
            out[f"ratio_{k}_{stat}"] = out[f"checkpoint_{k}_{stat}"] / out[f"persist_{k}_{stat}"]
    tot = {w: [o + s for o, s in zip(times[w]["open_s"], times[w]["answer_s"])] for w in WAYS}
    out["ratio_total_median"] = statistics.median(tot["checkpoint"]) / statistics.median(tot["persist"])
    out["ratio_total_min"] = min(tot["checkpoint"]) / min(tot["persist"])
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:28} {v:.3f}" if isinstance(v, float) else f"{k:28} {v}")


if __name__ == "__main__":
    main()
