"""The store's per-job results and the fleet's sums: written from the metric's tables, read back as its views.

The result tables (:data:`ettcore.store.db.RESULT_TABLES`) keep, per source, the rows the metric's tables of the same
names hold for each job.  The fleet's sums (:data:`ettcore.store.db.SUM_TABLES`) keep ``fleet_slots`` and
``interruption_slots`` (the rows every trend sums) added over every stored job: a refresh subtracts a replaced
job's old rows (the same queries, on views of its stored results) and adds its new ones.  The rows are whole numbers
(GPU-milliseconds, counts), so the sums are exact in any order, and every row a one-shot query gives is positive
(a job holds at least one GPU, an attributed piece lasts at least a millisecond, a slot with an interruption counts
at least one), so a key whose sum comes back to zero is dropped: the kept rows are the one-shot query's.
"""

from __future__ import annotations

import duckdb

from ettcore.store import db, statements
from ettcore.store.statements import columns_of
from ettcore.trace.queries import sql
from ettcore.trace.window import Window
from ettcore.trace.window import register as register_window

# the metric's temporary tables and views one attribution makes: dropped before the next one on the same connection
METRIC_VIEWS = (
    "metric_jobs",
    "metric_attempts",
    "metric_spans",
    "unmeasured_time",
    "analysis_cuts",
    "attributed_segments",
    "attributed_time",
    "measured_time",
    "measured_interruptions",
    "fleet_slots",
    "interruption_slots",
    "job_metrics",
    "job_component_time",
    "job_cause_time",
    "job_pace",
    "train_pace",
    "train_stalls",
)


def temporary_kind(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """``'VIEW'`` or ``'TABLE'`` where the connection has a temporary view or table ``name``, else None."""
    return statements.value(con, "temporary_relation_kind", {"name": name})


def drop_any(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop the temporary table or view ``name``, whichever it is."""
    kind = temporary_kind(con, name)
    if kind:
        con.execute(f"DROP {kind} temp.main.{name}")


def drop_metric_views(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the metric's temporary tables and views (:data:`METRIC_VIEWS`) that exist (one look at the catalog)."""
    for name, kind in statements.rows(con, "temporary_relations_named", {"names": list(METRIC_VIEWS)}):
        con.execute(f"DROP {kind} temp.main.{name}")


def set_params(con: duckdb.DuckDBPyConnection, as_of_ms: int | None, explicit: bool = False) -> None:
    """``ett_params``: the analysis time; the cut on starts is one ms later unless the as-of was given explicitly
    (the loader's rule)."""
    cut = as_of_ms if explicit else (None if as_of_ms is None else as_of_ms + 1)
    statements.run(con, "analysis_params", {"as_of_ms": as_of_ms, "cut_ms": cut})


def row_views(con: duckdb.DuckDBPyConnection, qualified: bool, restrict: str | None, horizons: bool = False) -> None:
    """``clean_<table>`` and the ``span_store`` view over the store's rows: every source, or (``restrict``) the jobs
    of the temporary table ``restrict`` (source, job_id; one source).  ``qualified``: job ids as ``source/job_id``
    (several sources; every source, then).  ``horizons``: each source's open attempts end at its own horizon
    (``stored_attempts_at_horizons.sql``), so that an attribution at the store's analysis time measures each
    source's running jobs to the source's own."""
    statements.run(con, "job_id_with_source" if qualified else "job_id_within_source")
    if horizons:
        statements.create_as(con, "TABLE", "ett_horizons", statements.text("source_horizons"))
    held = db.row_tables(con)
    for table in db.ROW_TABLES:
        drop_any(con, f"clean_{table}")
        if table not in held:
            continue  # a table a store made before it kept it lacks (rank_timing): no rows, as in a trace without it
        if qualified and table == "jobs":
            statements.run(con, "stored_jobs_with_sources")
        elif horizons and table == "attempts":
            statements.run(con, "stored_attempts_at_horizons")
        elif restrict:
            statements.run(con, "stored_rows_of_jobs", table=table, keys=restrict)
        else:
            statements.run(con, "stored_rows", table=table)
    drop_any(con, "span_store")
    statements.run(con, "stored_span_store")
    statements.run(con, "no_excluded_jobs")


def write_results(con: duckdb.DuckDBPyConnection, source: str, ingest_id: int | None) -> None:
    """Insert the metric's per-job tables (as one attribution left them) into the result tables, with the source
    and ``ingest_id`` (the ingest that inserted the jobs' rows; None: the jobs' stored rows keep theirs, looked up)."""
    for target, table in db.RESULT_TABLES.items():
        db.merge_schema(con, target, table)
        if ingest_id is not None:
            statements.run(
                con, "insert_results", {"source": source, "ingest_id": ingest_id}, result=target, table=table
            )
            continue
        key = "job_id" if target in db.KEYED_BY_ID else "job_key"
        statements.run(con, "insert_remeasured_results", {"source": source}, result=target, table=table, key=key)


# ----------------------------------------------------------------------------- the fleet's sums


def _delta(target: str) -> str:
    return f"ett_delta_{target}"


def sum_tables(con: duckdb.DuckDBPyConnection, apply: bool = False) -> None:
    """Start a refresh's changes to the fleet's sums (no change yet), or ``apply`` them to the stored sums."""
    for target, (_view, keys) in db.SUM_TABLES.items():
        delta = _delta(target)
        if not apply:
            drop_any(con, delta)
            continue
        if temporary_kind(con, delta) != "TABLE":
            continue  # nothing attributed, nothing subtracted
        parts = _slot_columns(con, delta, keys)
        if not db.has_table(con, target):
            statements.run(con, "create_sums", target=target, changes=delta, **parts)
        statements.run(con, "summed_slots", target=target, changes=delta, **parts)
        statements.run(con, "delete_sums", target=target)
        statements.run(con, "insert_sums", target=target)
        drop_any(con, delta)
        drop_any(con, "ett_summed")


def _slot_columns(con: duckdb.DuckDBPyConnection, relation: str, keys: tuple[str, ...]) -> dict:
    """The key columns and the value columns (every other) of a slot view or of its changes, as the statements'
    ``keys`` and ``values`` lists."""
    schema = db.columns(con, relation)
    return {
        "keys": columns_of({k: schema[k] for k in keys}),
        "values": columns_of(schema, skip=keys),
    }


def _add(con: duckdb.DuckDBPyConnection, sign: int) -> None:
    """Add (``sign`` 1) or subtract (-1) the rows of the metric's slot views, as they are now, to the changes."""
    for target, (view, keys) in db.SUM_TABLES.items():
        delta = _delta(target)
        if temporary_kind(con, delta) != "TABLE":
            statements.run(con, "slot_changes", changes=delta, view=view)
        statements.run(
            con, "add_slot_changes", {"sign": sign}, changes=delta, view=view, **_slot_columns(con, view, keys)
        )


def add_sums(con: duckdb.DuckDBPyConnection) -> None:
    """Add the share of the jobs just attributed (the metric's slot views on this connection) to the changes."""
    _add(con, 1)


def old_sums(con: duckdb.DuckDBPyConnection, keys: str, grid_ms: int) -> None:
    """Subtract the stored share of the jobs of ``keys`` (source, job_id, job_key) from the changes: the metric's
    slot queries on views of their stored results (per source: job keys are unique within one)."""
    if not db.has_table(con, "res_metric_jobs"):
        return
    for (source,) in statements.rows(con, "sources_of", relation=keys):
        drop_metric_views(con)
        statements.run(con, "jobs_of_source", {"source": source}, into="ett_keys_one", keys=keys)
        stored_views(con, "ett_keys_one", grid_ms)
        _add(con, -1)
        drop_metric_views(con)


def stored_views(con: duckdb.DuckDBPyConnection, restrict: str, grid_ms: int) -> None:
    """The metric's ``metric_jobs``, ``metric_attempts`` and ``attributed_time`` as views of the stored results of the
    jobs of the temporary table ``restrict`` (source, job_key; one source; their cells already in
    ``ett_old_attributed``), the whole window's ``unmeasured_time``
    (none) and, from the metric's queries, ``measured_time``, ``measured_interruptions``, ``fleet_slots`` and
    ``interruption_slots``: the slots of those jobs as the stored attribution gives them."""
    for view, result in (("metric_jobs", "res_metric_jobs"), ("metric_attempts", "res_metric_attempts")):
        statements.run(con, "stored_results_of_jobs", view=view, result=result, keys=restrict)
    statements.run(con, "stored_cells_of_jobs", keys=restrict)  # collected by the caller (refresh.delete_results)
    register_window(con, Window())
    statements.run(con, "grid", {"grid_ms": grid_ms})
    statements.create_as(con, "TABLE", "unmeasured_time", f"{sql('metric/unmeasured_time')} LIMIT 0")
    for view in ("measured_time", "measured_interruptions", "fleet_slots", "interruption_slots"):
        statements.create_as(con, "VIEW", view, sql("metric/" + view))
