"""Write a trace folder (``jobs``, ``attempts``, ``spans``, ``rank_timing``) from Polars frames.

Used by the generator, the importers and the recorder.  Timestamps may be
Polars datetimes (written as UTC Parquet timestamps) or epoch seconds
(floats).  The folder is written under a temporary name and renamed into
place, so a reader never sees half a trace.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ettcore.atomic import atomic_path

FORMATS = ("parquet", "csv", "jsonl")


def _write_table(df: pl.DataFrame, path: Path, fmt: str) -> None:
    if fmt == "parquet":
        df.write_parquet(path)
    elif fmt == "csv":
        df.write_csv(path)
    elif fmt == "jsonl":
        df.write_ndjson(path)
    else:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")


def write_table(df: pl.DataFrame, path: str | Path, fmt: str) -> None:
    """One table as one file in ``fmt`` (parquet, csv or jsonl); not atomic (see :func:`write_trace`)."""
    _write_table(df, Path(path), fmt)


def write_trace(
    out_dir: str | Path,
    *,
    attempts: pl.DataFrame,
    spans: pl.DataFrame,
    jobs: pl.DataFrame | None = None,
    rank_timing: pl.DataFrame | None = None,
    fmt: str = "parquet",
    metadata: dict | None = None,
    extra_files: dict[str, str] | None = None,
) -> Path:
    """Write a trace folder atomically; ``metadata`` goes to ``trace.json`` (provenance, synthetic flag); ``jobs`` and
    ``rank_timing`` are the optional tables (docs/trace-format.md), written when given.

    ``extra_files`` (name -> text, e.g. an import report) are written inside the
    folder before it is renamed into place, so they are there whenever it is.
    """
    out_dir = Path(out_dir)
    with atomic_path(out_dir, directory=True) as tmp:
        if jobs is not None:
            _write_table(jobs, tmp / f"jobs.{fmt}", fmt)
        _write_table(attempts, tmp / f"attempts.{fmt}", fmt)
        _write_table(spans, tmp / f"spans.{fmt}", fmt)
        if rank_timing is not None:
            _write_table(rank_timing, tmp / f"rank_timing.{fmt}", fmt)
        if metadata is not None:
            (tmp / "trace.json").write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        for name, text in (extra_files or {}).items():
            if Path(name).name != name or name.startswith("."):
                raise ValueError(f"extra file name must be a plain file name: {name!r}")
            (tmp / name).write_text(text, encoding="utf-8")
    return out_dir
