"""An imported trace held in memory: the three tables, the metadata, and how to write them.

Importers build :class:`TraceFrames` (timestamps as epoch seconds while they
work) and hand it back with their :class:`~ettcore.importers.import_report.ImportReport`;
:func:`write_import` writes the trace folder with
:func:`ettcore.trace.writer.write_trace` and puts the report beside the
tables, inside the folder (``import_report.json`` and ``import_report.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ettcore.importers.import_report import REPORT_JSON, REPORT_MD, ImportReport
from ettcore.trace.writer import write_trace

ATTEMPT_SCHEMA = {
    "job_id": pl.String,
    "attempt": pl.Int64,
    "start": pl.Float64,
    "end": pl.Float64,
    "end_reason": pl.String,
}
# Optional attempts columns: written only when an importer gives a value on some row (docs/trace-format.md):
# the interruption's cause (docs/causes.md) and the run's nodes (Slurm's host-list form).
OPTIONAL_ATTEMPT_SCHEMA = {"cause": pl.String, "nodes": pl.String}
SPAN_SCHEMA = {
    "job_id": pl.String,
    "attempt": pl.Int64,
    "phase": pl.String,
    "start": pl.Float64,
    "end": pl.Float64,
    "stage": pl.String,
    "cursor_start": pl.Float64,
    "cursor_end": pl.Float64,
}


def _to_utc(df: pl.DataFrame, cols: tuple[str, ...]) -> pl.DataFrame:
    """Epoch seconds (float) -> UTC datetimes, microsecond precision."""
    return df.with_columns(
        [(pl.col(c) * 1_000_000).round(0).cast(pl.Int64).cast(pl.Datetime("us", "UTC")).alias(c) for c in cols]
    )


@dataclass
class TraceFrames:
    """The tables of an imported trace; ``start``/``end`` columns in epoch seconds."""

    attempts: pl.DataFrame
    spans: pl.DataFrame
    jobs: pl.DataFrame
    metadata: dict = field(default_factory=dict)
    # the optional rank_timing table (docs/trace-format.md; recorder.rank_timing_frame), None: not written
    rank_timing: pl.DataFrame | None = None

    @classmethod
    def from_rows(cls, attempts: list[dict], spans: list[dict], jobs: list[dict], metadata: dict) -> "TraceFrames":
        a_schema = dict(ATTEMPT_SCHEMA)
        given = {k: t for k, t in OPTIONAL_ATTEMPT_SCHEMA.items() if any(r.get(k) is not None for r in attempts)}
        a_schema.update(given)
        attempts = [{k: r.get(k) for k in a_schema} for r in attempts]
        spans = [
            {k: r.get(k) for k in SPAN_SCHEMA} for r in spans
        ]  # (importers' bookkeeping keys, such as ``how``, stay out)
        a = pl.DataFrame(attempts, schema=a_schema, orient="row") if attempts else pl.DataFrame(schema=a_schema)
        s = pl.DataFrame(spans, schema=SPAN_SCHEMA, orient="row") if spans else pl.DataFrame(schema=SPAN_SCHEMA)
        j = pl.DataFrame(jobs, infer_schema_length=None) if jobs else pl.DataFrame(schema={"job_id": pl.String})
        return cls(
            a.sort("job_id", "attempt"), s.sort("job_id", "attempt", "start", "phase"), j.sort("job_id"), metadata
        )

    def as_datetimes(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(attempts, spans) with timestamps as UTC datetimes, as written to the trace."""
        return _to_utc(self.attempts, ("start", "end")), _to_utc(self.spans, ("start", "end"))


def write_import(out_dir: str | Path, frames: TraceFrames, report: ImportReport, fmt: str = "parquet") -> Path:
    """Write the trace folder (atomically) and the import report inside it; returns the folder."""
    attempts, spans = frames.as_datetimes()
    return write_trace(
        out_dir,
        attempts=attempts,
        spans=spans,
        jobs=frames.jobs,
        rank_timing=frames.rank_timing,
        fmt=fmt,
        metadata=frames.metadata,
        extra_files={REPORT_JSON: report.to_json(), REPORT_MD: report.to_markdown()},
    )
