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

from ettcore.store import db
from ettcore.trace.queries import sql
from ettcore.trace.window import Window
from ettcore.trace.window import register as register_window

_LEAD = "''::VARCHAR AS source, 0::BIGINT AS ingest_id, "
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


def drop_any(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop the temporary table or view ``name``, whichever it is."""
    kind = con.execute(
        "SELECT 'VIEW' FROM duckdb_views() WHERE view_name = $n AND temporary UNION ALL SELECT 'TABLE' "
        "FROM duckdb_tables() WHERE table_name = $n AND temporary",
        {"n": name},
    ).fetchall()
    if kind:
        con.execute(f"DROP {kind[0][0]} temp.main.{name}")


def drop_metric_views(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the metric's temporary tables and views (:data:`METRIC_VIEWS`) that exist (one look at the catalog)."""
    present = con.execute(
        "SELECT view_name, 'VIEW' FROM duckdb_views() WHERE temporary AND list_contains($n, view_name) UNION ALL "
        "SELECT table_name, 'TABLE' FROM duckdb_tables() WHERE temporary AND list_contains($n, table_name)",
        {"n": list(METRIC_VIEWS)},
    ).fetchall()
    for name, kind in present:
        con.execute(f"DROP {kind} temp.main.{name}")


def set_params(con: duckdb.DuckDBPyConnection, as_of_ms: int | None, explicit: bool = False) -> None:
    """``ett_params``: the analysis time; the cut on starts is one ms later unless the as-of was given explicitly
    (the loader's rule)."""
    cut = as_of_ms if explicit else (None if as_of_ms is None else as_of_ms + 1)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_params AS SELECT $a::BIGINT AS as_of_ms, $c::BIGINT AS cut_ms",
        {"a": as_of_ms, "c": cut},
    )


def row_views(con: duckdb.DuckDBPyConnection, qualified: bool, restrict: str | None) -> None:
    """``clean_<table>`` and the ``span_store`` view over the store's rows: every source, or (``restrict``) the jobs
    of the temporary table ``restrict`` (source, job_id).  ``qualified``: job ids as ``source/job_id`` (several
    sources)."""
    for table in db.ROW_TABLES:
        drop_any(con, f"clean_{table}")
        jid = "r.source || '/' || r.job_id" if qualified else "r.job_id"
        semi = f"SEMI JOIN {restrict} AS k ON k.source = r.source AND k.job_id = r.job_id " if restrict else ""
        if qualified and table == "jobs":
            # several sources: every stored job has a jobs row carrying its source as a label (a job whose source
            # gave no jobs table gets NULLs, which metric_jobs.sql reads as a missing row), so a figure attributed
            # again from the rows groups by source as the stored results do
            con.execute(
                "CREATE TEMP VIEW clean_jobs AS SELECT e.source || '/' || e.job_id AS job_id, "
                "r.* EXCLUDE (source, ingest_id, job_id), e.source AS source FROM st.ett_jobs AS e "
                "LEFT JOIN st.rows_jobs AS r ON r.source = e.source AND r.job_id = e.job_id"
                + (f" SEMI JOIN {restrict} AS k ON k.source = e.source AND k.job_id = e.job_id" if restrict else "")
            )
            continue
        con.execute(
            f"CREATE TEMP VIEW clean_{table} AS SELECT {jid} AS job_id, * EXCLUDE (source, ingest_id, job_id) "
            f"FROM st.rows_{table} AS r {semi}"
        )
    drop_any(con, "span_store")
    con.execute(
        "CREATE TEMP VIEW span_store AS SELECT hash(s.job_id) AS job_key, s.attempt, CAST(p.phase_id AS SMALLINT) "
        "AS phase_id, s.start_ms, s.end_ms, s.cursor_start, s.cursor_end, false AS suspect FROM clean_spans AS s "
        "JOIN ett_phases AS p ON p.phase = s.phase"
    )
    con.execute("CREATE OR REPLACE TEMP TABLE ett_excluded_jobs (job_id VARCHAR)")


def write_results(con: duckdb.DuckDBPyConnection, source: str, ingest_id: int | None) -> None:
    """Insert the metric's per-job tables (as one attribution left them) into the result tables, with the source
    and ``ingest_id`` (the ingest that inserted the jobs' rows; None: the jobs' stored rows keep theirs, looked up)."""
    for target, table in db.RESULT_TABLES.items():
        db.merge_schema(con, target, table, _LEAD)
        if ingest_id is not None:
            con.execute(
                f"INSERT INTO st.{target} BY NAME SELECT $s AS source, $i::BIGINT AS ingest_id, * FROM {table}",
                {"s": source, "i": ingest_id},
            )
            continue
        on = "k.job_id = t.job_id" if target in db.KEYED_BY_ID else "k.job_key = t.job_key"
        con.execute(
            f"INSERT INTO st.{target} BY NAME SELECT $s AS source, k.ingest_id, t.* FROM {table} AS t "
            f"JOIN (SELECT * FROM st.ett_jobs WHERE source = $s) AS k ON {on}",
            {"s": source},
        )


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
        if not con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = $t AND temporary", {"t": delta}
        ).fetchall()[0][0]:
            continue  # nothing attributed, nothing subtracted
        types = db.columns(con, delta)
        values = [c for c in types if c not in keys]
        have = db.has_table(con, target)
        rows = (
            f"SELECT * FROM st.{target} UNION ALL BY NAME SELECT * FROM {delta}" if have else f"SELECT * FROM {delta}"
        )
        summed = ", ".join(f"CAST(sum({c}) AS {types[c]}) AS {c}" for c in values)
        nonzero = " OR ".join(f"sum({c}) <> 0" for c in values)
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE ett_summed AS SELECT {', '.join(keys)}, {summed} FROM ({rows}) "
            f"GROUP BY ALL HAVING {nonzero} ORDER BY ALL"
        )
        if have:
            con.execute(f"DELETE FROM st.{target}")
            con.execute(f"INSERT INTO st.{target} BY NAME SELECT * FROM ett_summed")
        else:
            con.execute(f"CREATE TABLE st.{target} AS SELECT * FROM ett_summed")
        drop_any(con, delta)
        drop_any(con, "ett_summed")


def _add(con: duckdb.DuckDBPyConnection, sign: int) -> None:
    """Add (``sign`` 1) or subtract (-1) the rows of the metric's slot views, as they are now, to the changes."""
    for target, (view, keys) in db.SUM_TABLES.items():
        delta = _delta(target)
        values = [c for c in db.columns(con, view) if c not in keys]
        cols = ", ".join([*keys, *(f"{sign} * {c} AS {c}" for c in values)])
        exists = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = $t AND temporary", {"t": delta}
        ).fetchall()[0][0]
        if exists:
            con.execute(f"INSERT INTO {delta} BY NAME SELECT {cols} FROM {view}")
        else:
            con.execute(f"CREATE TEMP TABLE {delta} AS SELECT * FROM {view} LIMIT 0")
            con.execute(f"INSERT INTO {delta} BY NAME SELECT {cols} FROM {view}")


def add_sums(con: duckdb.DuckDBPyConnection) -> None:
    """Add the share of the jobs just attributed (the metric's slot views on this connection) to the changes."""
    _add(con, 1)


def old_sums(con: duckdb.DuckDBPyConnection, keys: str, grid_ms: int) -> None:
    """Subtract the stored share of the jobs of ``keys`` (source, job_id, job_key) from the changes: the metric's
    slot queries on views of their stored results (per source: job keys are unique within one)."""
    if not db.has_table(con, "res_metric_jobs"):
        return
    sources = [r[0] for r in con.execute(f"SELECT DISTINCT source FROM {keys} ORDER BY 1").fetchall()]
    for source in sources:
        drop_metric_views(con)
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE ett_keys_one AS SELECT source, job_key FROM {keys} WHERE source = $s",
            {"s": source},
        )
        stored_views(con, "ett_keys_one", grid_ms)
        _add(con, -1)
        drop_metric_views(con)


def stored_views(con: duckdb.DuckDBPyConnection, restrict: str, grid_ms: int) -> None:
    """The metric's ``metric_jobs``, ``metric_attempts`` and ``attributed_time`` as views of the stored results of the
    jobs of the temporary table ``restrict`` (source, job_key; one source; their cells already in
    ``ett_old_attributed``), the whole window's ``unmeasured_time``
    (none) and, from the metric's queries, ``measured_time``, ``measured_interruptions``, ``fleet_slots`` and
    ``interruption_slots``: the slots of those jobs as the stored attribution gives them."""
    for view, target, drop in (
        ("metric_jobs", "st.res_metric_jobs", ""),
        ("metric_attempts", "st.res_metric_attempts", ""),
        ("attributed_time", "ett_old_attributed", "ett_rowid, "),  # collected by the caller (refresh.delete_results)
    ):
        con.execute(
            f"CREATE TEMP VIEW {view} AS SELECT r.* EXCLUDE ({drop}source, ingest_id) FROM {target} AS r "
            f"SEMI JOIN {restrict} AS k ON k.source = r.source AND k.job_key = r.job_key"
        )
    register_window(con, Window())
    con.execute("CREATE OR REPLACE TEMP TABLE ett_grid AS SELECT $g::BIGINT AS grid_ms", {"g": grid_ms})
    con.execute(f"CREATE TEMP TABLE unmeasured_time AS {sql('metric/unmeasured_time')} LIMIT 0")
    for view in ("measured_time", "measured_interruptions", "fleet_slots", "interruption_slots"):
        con.execute(f"CREATE TEMP VIEW {view} AS {sql('metric/' + view)}")
