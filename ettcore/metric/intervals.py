"""A job's wall time instant by instant, for timelines: the metric's attribution as intervals.

:func:`job_timeline` returns, for the selected jobs, every interval ``[start_ms, end_ms)`` of their wall time with
its L1 bucket, phase, component and the attempt in force (``ettcore/sql/metric/attributed_intervals.sql``), and
their attempts with end reasons (``job_attempts.sql``).  The intervals are the pieces of the one attribution
(``attributed_segments.sql``) that the metric's numbers sum (``attributed_time.sql``), so a timeline drawn from them
agrees with the numbers next to it by construction; :func:`mismatches` and :func:`gaps` let a test (or a reader)
check it.  :func:`ettcore.present.charts.gantt` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import polars as pl

from ettcore import metric
from ettcore.errors import InputError, Problem
from ettcore.phases import ALL_COMPONENTS
from ettcore.trace.load import Trace
from ettcore.trace.queries import sql


@dataclass(frozen=True)
class Timeline:
    """``intervals``: job_id, start_ms, end_ms, attempt, bucket, phase, component, owner (time order);
    ``attempts``: job_id, attempt, start_ms, end_ms, end_reason, interrupted, t0_ms, t1_ms."""

    intervals: pl.DataFrame
    attempts: pl.DataFrame
    components: tuple[str, ...] = ("effective_training",) + ALL_COMPONENTS  # the trace's, in report order

    @property
    def job_ids(self) -> list[str]:
        return list(dict.fromkeys(self.attempts["job_id"].to_list()))

    def seconds(self, by: Sequence[str] = ("job_id", "bucket", "phase")) -> pl.DataFrame:
        """Interval lengths summed by ``by`` (seconds)."""
        return (
            self.intervals.group_by(*by)
            .agg(((pl.col("end_ms") - pl.col("start_ms")).sum() / 1000).alias("seconds"))
            .sort(*by)
        )


def mismatches(tl: Timeline, l2: pl.DataFrame) -> pl.DataFrame:
    """Rows (job, bucket, phase) where the timeline's seconds differ from the L2 matrix's by 1 ms or more."""
    want = (
        l2.filter(pl.col("job_id").is_in(tl.job_ids))
        .group_by("job_id", "bucket", "phase")
        .agg(pl.col("seconds").sum().alias("l2_seconds"))
    )
    got = tl.seconds().rename({"seconds": "timeline_seconds"})
    both = want.join(got, on=["job_id", "bucket", "phase"], how="full", coalesce=True).fill_null(0.0)
    return both.filter((pl.col("l2_seconds") - pl.col("timeline_seconds")).abs() >= 5e-4).sort(
        "job_id", "bucket", "phase"
    )


def gaps(tl: Timeline) -> pl.DataFrame:
    """Places where consecutive intervals of a job do not touch, or the intervals miss T0 or T1 (none when tiled)."""
    iv = tl.intervals.sort("job_id", "start_ms").with_columns(
        pl.col("end_ms").shift(1).over("job_id").alias("prev_end")
    )
    inner = iv.filter(pl.col("prev_end").is_not_null() & (pl.col("prev_end") != pl.col("start_ms"))).select(
        "job_id", pl.col("prev_end").alias("at_ms"), pl.lit("intervals do not touch").alias("problem")
    )
    ends = (
        iv.group_by("job_id")
        .agg(pl.col("start_ms").min().alias("first"), pl.col("end_ms").max().alias("last"))
        .join(tl.attempts.select("job_id", "t0_ms", "t1_ms").unique(), on="job_id", how="full", coalesce=True)
    )
    edge = ends.filter(
        (pl.col("first") != pl.col("t0_ms")) | (pl.col("last") != pl.col("t1_ms")) | pl.col("first").is_null()
    ).select("job_id", pl.col("t0_ms").alias("at_ms"), pl.lit("intervals do not cover [T0, T1)").alias("problem"))
    return pl.concat([inner, edge]).sort("job_id", "at_ms")


def job_timeline(trace: Trace, job_ids: str | Sequence[str]) -> Timeline:
    """The attributed intervals and attempts of ``job_ids``."""
    ids = [job_ids] if isinstance(job_ids, str) else list(job_ids)
    metric.prepare(trace)
    found = trace.sql("SELECT job_id, job_key FROM metric_jobs WHERE list_contains($jobs, job_id)", {"jobs": ids})
    known = set(found["job_id"])
    unknown = [j for j in ids if j not in known]
    if unknown:
        raise InputError(
            [
                Problem(str(trace.path), None, "job", f"no job {j!r} in the trace (up to the as-of time)")
                for j in unknown
            ]
        )
    return Timeline(
        trace.sql(sql("metric/attributed_intervals"), {"jobs": ids, "keys": found["job_key"].to_list()}),
        trace.sql(sql("metric/job_attempts"), {"jobs": ids}),
        ("effective_training",) + trace.phase_map.all_components,
    )
