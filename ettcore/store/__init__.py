"""The fleet store: one DuckDB database file that keeps a fleet's checked rows and each job's results.

``ett ingest STORE SOURCE`` reads a source through the loader (:func:`ettcore.trace.load_trace`, or an importer first),
compares each job's rows with the stored ones, replaces the jobs that are new or changed as a whole, and attributes
again only those (and running jobs, when the store's analysis time moved) with the metric's own SQL
(:func:`ettcore.metric.prepare` on a trace whose ``clean_*`` views are the store's rows of those jobs): there is no
second attribution kernel.  The measuring commands open a store (:func:`open_store`) as a trace whose
``attributed_time``, ``job_metrics`` and ``job_component_time`` are the stored per-job results, so fleet figures,
trends and the Prometheus export are queries over them.  A refresh is one DuckDB transaction.  See ``docs/store.md``.

Tables of a store (``st.`` while attached): ``ett_store`` (key, value: format, version, grid, phase map, as-of),
``ett_ingests``, ``ett_notes``, ``ett_skipped``; the rows ``rows_jobs``, ``rows_attempts``, ``rows_spans`` (the loader's
typed rows as they are, any columns, with ``source`` and ``ingest_id``; ``_file``/``_row`` say where each came from);
the results ``res_metric_jobs``, ``res_metric_attempts``, ``res_attributed``, ``res_job_metrics``,
``res_job_components`` (the metric's tables of the same names without ``res_``, with ``source``).
"""

from ettcore.store.db import DEFAULT_SOURCE, FORMAT, GRID_MS, VERSION, attach, meta, wait_seconds
from ettcore.store.housekeeping import compact, remove_source
from ettcore.store.read import StoreTrace, is_store, open_store
from ettcore.store.refresh import Refresh, ingest_path, ingest_trace

# the names the CLI used before the store was split into modules
_attach = attach
_meta = meta

__all__ = [
    "DEFAULT_SOURCE",
    "FORMAT",
    "GRID_MS",
    "VERSION",
    "Refresh",
    "StoreTrace",
    "attach",
    "compact",
    "ingest_path",
    "ingest_trace",
    "is_store",
    "meta",
    "open_store",
    "remove_source",
    "wait_seconds",
]
