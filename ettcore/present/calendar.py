"""Calendar buckets of a trend: where each ends, and how much of it the trace observed.

A trend bucket (UTC day, ISO week from Monday, calendar month) is *partial* when the trace's observation window
(first job start to last job end) covers only part of it: its GPU-hours are then a fraction of a full bucket's,
and a chart that draws it like the others shows a cliff that is not there.  :func:`coverage` adds to a trend
frame the bucket's end, its length in days, the days observed and a ``partial`` flag; the charts mark partial
buckets (open symbols, lighter bars, "partial" in the label) and draw GPU-hours as a rate per observed day, so
every bucket compares.  Nothing is dropped.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import polars as pl

_DAY_MS = 86_400_000


def bucket_end(start: date, every: str) -> date:
    """The first day after the bucket that starts on ``start``."""
    if every == "day":
        return start + timedelta(days=1)
    if every == "week":
        return start + timedelta(days=7)
    if every == "month":
        return date(start.year + (start.month == 12), start.month % 12 + 1, 1)
    raise ValueError(f"unknown bucket {every!r}; choose day, week or month")


def _ms(d: date) -> int:
    return int(datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp() * 1000)


def bucket_label(start: date, every: str) -> str:
    """``Jan 2026`` for a month, ``2026-W02 (Jan 05)`` for an ISO week, ``2026-01-05`` for a day."""
    if every == "month":
        return start.strftime("%b %Y")
    if every == "week":
        y, w, _ = start.isocalendar()
        return f"{y}-W{w:02d} ({start.strftime('%b %d')})"
    return start.isoformat()


def coverage(trend: pl.DataFrame, every: str, window_start_ms: int, window_end_ms: int) -> pl.DataFrame:
    """``trend`` with ``bucket``, ``bucket_end``, ``bucket_days``, ``observed_days`` and ``partial`` added.

    ``window_start_ms``/``window_end_ms``: the trace's observation window (the first T0 and the last T1, ms UTC).
    """
    rows = []
    for start in trend["bucket_start"].to_list():
        end = bucket_end(start, every)
        a, b = _ms(start), _ms(end)
        seen = max(0, min(b, window_end_ms) - max(a, window_start_ms))
        rows.append(
            {
                "bucket_start": start,
                "bucket": bucket_label(start, every),
                "bucket_end": end,
                "bucket_days": (b - a) / _DAY_MS,
                "observed_days": seen / _DAY_MS,
                "partial": seen < b - a,
            }
        )
    cov = pl.DataFrame(
        rows,
        schema={
            "bucket_start": pl.Date,
            "bucket": pl.String,
            "bucket_end": pl.Date,
            "bucket_days": pl.Float64,
            "observed_days": pl.Float64,
            "partial": pl.Boolean,
        },
    )
    return trend.join(cov, on="bucket_start", how="left").sort("bucket_start")


def shown_label() -> pl.Expr:
    """A :func:`coverage` frame's bucket as charts and tables show it: ``Jan 2026``, or ``Jan 2026 (partial)`` for a
    bucket the trace observed only in part (named ``label``)."""
    return pl.when(pl.col("partial")).then(pl.col("bucket") + " (partial)").otherwise(pl.col("bucket")).alias("label")


def window_ms(job_summary: pl.DataFrame) -> tuple[int, int]:
    """The observation window of a trace from its job summary: first ``t0``, last ``t1`` (ms UTC)."""

    def ms(v) -> int:
        if v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)
        return int(v.timestamp() * 1000)

    return ms(job_summary["t0"].min()), ms(job_summary["t1"].max())
