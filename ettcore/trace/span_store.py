"""The spans typed once, in the form the span checks and the attribution share.

A fleet trace holds tens of millions of spans: reading and typing them is most of the cost of a run.  The span
store reads them once (``sql/store/span_store.sql``): a row a span as read, with its 64-bit job key, phase id,
integer-ms times, cursors and a ``suspect`` flag, true where any span check could reject the row.  Then

* the span checks: when no row is suspect and no batch holds overlapping train spans
  (``sql/store/train_overlap_suspects.sql``), the span checks would find nothing and are not run; otherwise they run
  as ever, on the rows as read, and name file, row and field (:mod:`ettcore.trace.checks`);
* the attribution (:mod:`ettcore.metric`) reads its spans from the store (through ``keyed_spans``), not from the files.

Where the spans fit in half the memory budget (:func:`batches`), the store is a DuckDB table.  Where they do not, it
is a Parquet folder partitioned by ``job_key % batches``, written in the same pass, so that one batch of jobs at a
time can be checked and attributed in memory; the folder lives as long as the trace (:meth:`SpanStore.close`, or
when the trace is collected).
"""

from __future__ import annotations

import math
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ettcore.trace import memory
from ettcore.trace.queries import sql

# Working memory of the attribution per span of a batch: DuckDB's peak buffer memory while one batch is attributed,
# its own span table included (measured on the synthetic fleet at 1,000,000 jobs: 1,562 MB for a batch of 7.5 M spans,
# 208 bytes a span).  A batch may use half of DuckDB's memory limit, so its sorts never spill.
BYTES_PER_SPAN = 210


def batches(con: duckdb.DuckDBPyConnection, spans: int) -> int:
    """How many batches of jobs ``spans`` spans take: 1 unless they would not fit in half the memory limit."""
    budget = memory.limit_bytes(con) / 2
    return max(1, math.ceil(spans * BYTES_PER_SPAN / budget))


def _literal(path: Path) -> str:
    """A SQL string literal of a path this module created (COPY targets and view bodies take no bound parameters)."""
    return "'" + str(path).replace("'", "''") + "'"


@dataclass
class SpanStore:
    """Where the typed spans of a trace are: the ``span_store`` table or view, and its batch parts when partitioned."""

    con: duckdb.DuckDBPyConnection
    batches: int
    folder: Path | None = None  # the Parquet parts, one folder a batch (None: a table in memory)
    suspect_parts: int | None = (
        None  # row groups of a partitioned store that may hold a suspect row (footer statistics)
    )
    _finalizer: object = field(default=None, repr=False)

    def batch_source(self, b: int, n: int) -> str:
        """SQL naming the rows of batch ``b`` of ``n`` (jobs split by ``job_key % n``)."""
        if self.folder is not None and n == self.batches:
            files = sorted((self.folder / f"batch={b}").glob("*.parquet"))
            if not files:  # a batch without spans (few jobs): the same columns, no rows
                return "(SELECT * FROM span_store WHERE false)"
            return f"read_parquet([{', '.join(_literal(f) for f in files)}])"
        return f"(SELECT * FROM span_store WHERE job_key % {int(n)} = {int(b)})"

    def close(self) -> None:
        """Remove the batch parts (the trace's connection keeps the table of an unpartitioned store)."""
        if self._finalizer is not None:
            self._finalizer()


def build(
    con: duckdb.DuckDBPyConnection, owner: object, spill_dir: str | Path | None = None, screened: bool = True
) -> SpanStore:
    """Read and type the spans of ``typed_spans`` once into ``span_store``; ``owner`` (the trace) bounds its life.

    ``screened=False``, for a trace whose checks are known to pass (:mod:`ettcore.trace.check_cache`), leaves out the
    ``suspect`` flag, which nothing then reads: every row is marked suspect, and its conditions are not computed (they
    are half the cost of typing the spans: 1.7 of 3.3 s at 45 M spans)."""
    n = batches(con, con.execute("SELECT count(*) FROM raw_spans").fetchall()[0][0])
    query = sql("store/span_store")
    if not screened:
        query = f"SELECT * EXCLUDE (suspect), true AS suspect FROM ({query})"
    if n <= 1:
        con.execute(f"CREATE OR REPLACE TEMP TABLE span_store AS {query}")
        return SpanStore(con, 1)
    folder = Path(tempfile.mkdtemp(prefix="ett-spans-", dir=_usable(spill_dir)))
    finalizer = weakref.finalize(owner, shutil.rmtree, folder, True)
    try:
        # n is written as a number: as a bound parameter, DuckDB plans the partitioned write slower (13.4 s for 10.7 s
        # at 45 M spans), and so does RETURN_STATS (the parts' statistics are read from their footers below instead)
        con.execute(
            f"COPY (SELECT *, coalesce(job_key % {int(n)}, 0) AS batch FROM ({query})) TO {_literal(folder / 'parts')} "
            "(FORMAT parquet, PARTITION_BY (batch), COMPRESSION uncompressed)"
        )
        con.execute(
            "CREATE OR REPLACE TEMP VIEW span_store AS SELECT * EXCLUDE (batch) FROM read_parquet("
            f"{_literal(folder / 'parts' / '*' / '*.parquet')}, hive_partitioning = true)"
        )
    except BaseException:
        finalizer()
        raise
    # each row group's statistics, from the parts' footers: one whose largest `suspect` is false holds no suspect row
    # (a row group without statistics counts as flagged); an unscreened store's rows are all suspect: its footers
    # are not read
    parts = [str(f) for f in sorted((folder / "parts").glob("*/*.parquet"))]
    flagged = (
        con.execute(
            "SELECT count(*) FROM parquet_metadata($f) WHERE path_in_schema = 'suspect' AND coalesce(stats_max_value, "
            "'true') <> 'false'",
            {"f": parts},
        ).fetchall()[0][0]
        if parts and screened
        else len(parts)
    )
    return SpanStore(con, n, folder / "parts", suspect_parts=flagged, _finalizer=finalizer)


def _usable(spill_dir: str | Path | None) -> str | None:
    """DuckDB reads the parts by name: a folder with glob characters is not used."""
    if spill_dir is None or set(str(spill_dir)) & set("*?[]{}"):
        return None
    return str(spill_dir)


def screen(store: SpanStore) -> int:
    """Rows any span check could reject: suspect rows, plus train spans overlapping an earlier one (per batch)."""
    con = store.con
    if store.suspect_parts == 0:  # no part holds one: nothing to count
        suspects = 0
    else:
        suspects = con.execute("SELECT count_if(suspect) FROM span_store").fetchall()[0][0] or 0
    if not suspects:
        for b in range(store.batches):
            src = "span_store" if store.batches == 1 else store.batch_source(b, store.batches)
            con.execute(f"CREATE OR REPLACE TEMP VIEW store_batch AS SELECT * FROM {src}")
            suspects += con.execute(sql("store/train_overlap_suspects")).fetchall()[0][0]
            if suspects:
                break
        con.execute("DROP VIEW IF EXISTS store_batch")
    return suspects


def register_keyed(con: duckdb.DuckDBPyConnection, excluded: bool, source: str = "span_store") -> None:
    """``keyed_spans``: the store's rows of jobs without findings (``excluded``: some job has one), as the metric reads
    them; ``source`` (SQL from :meth:`SpanStore.batch_source`) narrows it to one batch of jobs."""
    cols = (
        "s.job_key, s.attempt, s.phase_id, s.phase_id = (SELECT phase_id FROM ett_phases WHERE is_train) AS is_train, "
        "s.start_ms, s.end_ms, s.cursor_start, s.cursor_end"
    )
    if excluded:
        con.execute(
            "CREATE TEMP TABLE IF NOT EXISTS ett_excluded_keys AS SELECT DISTINCT hash(job_id) AS job_key "
            "FROM ett_excluded_jobs"
        )
        anti = "ANTI JOIN ett_excluded_keys AS x ON x.job_key = s.job_key "
    else:
        anti = ""
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW keyed_spans AS SELECT {cols} FROM {source} AS s {anti}WHERE s.job_key IS NOT NULL"
    )
