"""A SYNTHETIC trace with the interruptions of Llama 3's Table 5, read with Llama 3's causes as a user's causes file.

Llama 3's paper (arXiv 2407.21783, Table 5) counts 419 unexpected interruptions in 54 days of pre-training on 16,384
H100 GPUs, by root cause (a component such as a faulty GPU or a network switch) and category (GPU, host, network,
dependency, ...).  ``data/reference/llama3-table5.csv`` transcribes the counts (``data/reference/README.md`` says
where they were read) and ``data/reference/llama3-causes.yaml`` writes the components as a user's causes file
(``ett --causes-file``; ``docs/causes.md``).

:func:`write_table5_trace` writes one job of 16,384 GPUs whose 420 attempts split the 54 days evenly: 419 failures
carrying Table 5's causes as often as the table counts them (in its order), then one that completes.  Only the
counts are the paper's: the times, the attempts' order and the job are made up (no span: no training is modelled),
so the trace is labelled synthetic and shows interruptions by cause and category, not lost time.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl

from ettcore.config import DATA_DIR
from ettcore.trace.writer import write_trace

REFERENCE = DATA_DIR / "reference"
TABLE5_CSV = REFERENCE / "llama3-table5.csv"  # component, category, count, cause, read_from
LLAMA3_CAUSES = REFERENCE / "llama3-causes.yaml"  # the components as a user's causes file
DAYS = 54
GPUS = 16_384
T0_S = 1_719_792_000  # 2024-07-01T00:00:00Z: a made-up start


def table5() -> list[dict]:
    """Table 5 as transcribed: ``component, category, count (int), cause`` a row, in the table's order."""
    with open(TABLE5_CSV, newline="", encoding="utf-8") as f:
        return [{**r, "count": int(r["count"])} for r in csv.DictReader(f)]


def write_table5_trace(out: str | Path) -> Path:
    """Write the SYNTHETIC trace of the module doc as a trace folder; returns the folder."""
    causes = [r["cause"] for r in table5() for _ in range(r["count"])]
    ends = [*(("failure", c) for c in causes), ("completed", None)]
    step_s = DAYS * 86_400 / len(ends)
    attempts = pl.DataFrame(
        {
            "job_id": ["llama3-pretraining"] * len(ends),
            "attempt": list(range(len(ends))),
            "start": [T0_S + k * step_s for k in range(len(ends))],
            "end": [T0_S + (k + 1) * step_s for k in range(len(ends))],
            "end_reason": [reason for reason, _ in ends],
            "cause": [cause for _, cause in ends],
        },
        schema={
            "job_id": pl.String,
            "attempt": pl.Int64,
            "start": pl.Float64,
            "end": pl.Float64,
            "end_reason": pl.String,
            "cause": pl.String,
        },
    ).with_columns(
        [(pl.col(c) * 1e6).round(0).cast(pl.Int64).cast(pl.Datetime("us", "UTC")).alias(c) for c in ("start", "end")]
    )
    spans = pl.DataFrame(
        schema={
            "job_id": pl.String,
            "attempt": pl.Int64,
            "phase": pl.String,
            "start": pl.Datetime("us", "UTC"),
            "end": pl.Datetime("us", "UTC"),
        }
    )
    jobs = pl.DataFrame({"job_id": ["llama3-pretraining"], "model": ["llama3-405b"], "gpus": [GPUS]})
    meta = {
        "synthetic": True,
        "generator": "ettcore.synthetic.table5",
        "source": "Llama 3 (arXiv 2407.21783), Table 5: the counts by cause; times and order made up",
        "causes_file": str(LLAMA3_CAUSES.relative_to(DATA_DIR.parent)),
    }
    return write_trace(out, attempts=attempts, spans=spans, jobs=jobs, metadata=meta)
