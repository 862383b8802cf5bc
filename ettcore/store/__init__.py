"""The fleet store: one DuckDB database file that keeps a fleet's checked rows and each job's results.

``ett ingest STORE SOURCE`` reads a source through the loader (:func:`ettcore.trace.load_trace`, or an importer first),
compares each job's digest with the stored one, replaces the jobs that are new or changed as a whole, and attributes
only those (and the source's running jobs, when its horizon moved: each source's running jobs are measured to its
own latest snapshot) with the metric's own SQL
(:func:`ettcore.metric.prepare` on the loaded source, the other jobs left out): there is no second attribution kernel
(:mod:`ettcore.store.refresh`).  The measuring commands open a store (:func:`open_store`) as a trace whose per-job
results, paces, stalls and the fleet's slot sums are the stored ones, so fleet figures, trends and the Prometheus
export are queries over per-job results (:mod:`ettcore.store.read`, :mod:`ettcore.store.results`).  A refresh, a
source's removal and a compaction are each one transaction, or one atomic rename (:mod:`ettcore.store.housekeeping`);
the file, its tables and the bounded wait for another process are :mod:`ettcore.store.db`'s.  See ``docs/store.md``.
"""

from ettcore.store.db import DEFAULT_SOURCE, FORMAT, GRID_MS, VERSION, attach, horizons, meta, wait_seconds
from ettcore.store.housekeeping import compact, remove_source
from ettcore.store.read import StoreTrace, is_store, open_store, skipped_problems
from ettcore.store.refresh import Refresh, ingest_path, ingest_trace

__all__ = [
    "DEFAULT_SOURCE",
    "FORMAT",
    "GRID_MS",
    "VERSION",
    "Refresh",
    "StoreTrace",
    "attach",
    "compact",
    "horizons",
    "ingest_path",
    "ingest_trace",
    "is_store",
    "meta",
    "open_store",
    "remove_source",
    "skipped_problems",
    "wait_seconds",
]
