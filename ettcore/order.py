"""Natural order: ``2`` before ``10``, array task ``37_2`` before ``37_10``, ``node3`` before ``node12``.

Every list of jobs the suite shows (per-job tables, JSON arrays, CSV rows) is in this order, so a campaign's jobs
read ``1, 2, ..., 10, 11`` and not ``1, 10, 11, ..., 2``.  The key splits a name into runs of digits and of other
characters and compares the digit runs as numbers (zero-padded to :data:`WIDTH` digits; a run longer than that
compares as text after the shorter ones); two names with the same key (``007`` and ``7``) keep text order.
"""

from __future__ import annotations

import polars as pl

WIDTH = 24  # digit runs of up to 24 digits compare as numbers


def natural_key(column: str) -> pl.Expr:
    """The sort key of ``column`` (text): each run of digits zero-padded to :data:`WIDTH`."""
    return (
        pl.col(column)
        .cast(pl.String)
        .str.extract_all(r"\d+|\D+")
        .list.eval(
            pl.when(pl.element().str.contains(r"^\d")).then(pl.element().str.zfill(WIDTH)).otherwise(pl.element())
        )
        .list.join("")
    )


def in_natural_order(frame: pl.DataFrame, column: str = "job_id", *then: str) -> pl.DataFrame:
    """``frame``'s rows by ``column`` in natural order, then by ``then`` (each as it sorts), then by text.

    Where every name has its digits in the same places (``fleet-0000007``, seven-digit Slurm ids), natural order is
    text order: the names are sorted as text, or left as they are when they already are (the key costs a second at a
    million names, the check a tenth of that)."""
    if frame.height < 2 or column not in frame.columns:
        return frame
    text = pl.col(column).cast(pl.String)
    one_shape, in_order = frame.select(
        (text.str.replace_all(r"\d", "0").n_unique() == 1).alias("one_shape"),
        (text.shift(-1) >= text).all().alias("in_order"),
    ).row(0)
    if one_shape and in_order and not then:
        return frame  # already in text order (the metric's per-job rows are), which is natural order here
    return frame.sort([text if one_shape else natural_key(column), *then, text], maintain_order=True)
