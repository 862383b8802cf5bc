"""Validation: run every data check and turn failing rows into Problems.

Each check is one query in ``ettcore/sql/checks/`` that returns the failing
rows.  After the checks, ``clean_<table>`` views hold the rows of jobs without
problems; :func:`accounting` counts, per table, rows read, used and rejected
(by reason), so nothing is dropped silently.
"""

from __future__ import annotations

import duckdb
import polars as pl

from ettcore.errors import Problem
from ettcore.trace.queries import check_names, sql
from ettcore.vocabulary import VOCABULARY


def is_span_check(name: str) -> bool:
    return name.startswith(("spans_", "train_spans_"))


def findings(con: duckdb.DuckDBPyConnection, has_jobs: bool = True, spans: bool = True) -> pl.DataFrame:
    """All failing rows of all checks, with the check's name, ordered by file and row.

    The checks run as one UNION ALL query: one round trip instead of one a check.  ``spans=False`` leaves out the
    span checks (when the span store's screen shows they would find nothing: :mod:`ettcore.trace.span_store`).
    """
    names = [n for n in check_names() if (has_jobs or not n.startswith("jobs_")) and (spans or not is_span_check(n))]
    union = "\nUNION ALL\n".join(
        f"SELECT table_name, _file, CAST(_row AS BIGINT) AS _row, field, job_id, message, '{n}' AS \"check\" "
        f"FROM ({sql('checks/' + n)})"
        for n in names
    )
    return con.sql(f"SELECT * FROM ({union}) ORDER BY _file, _row, field, message").pl()


def run_checks(con: duckdb.DuckDBPyConnection, has_jobs: bool = True, spans: bool = True) -> list[Problem]:
    df = findings(con, has_jobs, spans)
    con.register("_arrow_findings", df.to_arrow())
    con.execute("CREATE OR REPLACE TEMP TABLE ett_findings AS SELECT * FROM _arrow_findings")
    return [
        Problem(
            file=r["_file"],
            row=r["_row"],
            field=r["field"],
            message=r["message"],
            table=r["table_name"],
            job_id=r["job_id"],
        )
        for r in df.iter_rows(named=True)
    ]


def register_no_findings(con: duckdb.DuckDBPyConnection) -> None:
    """``ett_findings`` without rows, for a trace whose clean verdict is known (:mod:`ettcore.trace.check_cache`)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ett_findings (table_name VARCHAR, _file VARCHAR, _row BIGINT, field VARCHAR, "
        'job_id VARCHAR, message VARCHAR, "check" VARCHAR)'
    )


def register_clean(con: duckdb.DuckDBPyConnection, problems: list[Problem]) -> None:
    """``clean_<table>``: rows without findings, of jobs without findings."""
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE ett_excluded_jobs AS
        SELECT DISTINCT job_id FROM ett_findings WHERE job_id IS NOT NULL
        """
    )
    clean_views(con, anti=bool(problems))


def clean_views(con: duckdb.DuckDBPyConnection, anti: bool) -> None:
    """``clean_<table>``: the typed rows with a job id, less (``anti``) those of the jobs in ``ett_excluded_jobs``."""
    for table in VOCABULARY.tables:
        # an anti join (DuckDB plans a correlated NOT EXISTS over millions of rows far slower); none without problems
        join = "ANTI JOIN ett_excluded_jobs AS x ON x.job_id = t.job_id " if anti else ""
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW clean_{table} AS SELECT t.* FROM typed_{table} AS t {join}WHERE t.job_id IS "
            "NOT NULL"
        )


def accounting(con: duckdb.DuckDBPyConnection, problems: list[Problem]) -> dict:
    """Per table: rows read, used, rejected, and rejected rows by reason (:func:`accounting_of`), by
    :func:`accounting_query`, which Spark runs too."""
    return accounting_of(con.execute(sql(accounting_query(problems))).fetchall())


def accounting_query(problems: list[Problem]) -> str:
    """The query file of the row accounting: ``load/row_accounting`` (each row judged) when the checks found something,
    else ``load/typed_row_counts`` (every row used: counted without reading a column)."""
    return "load/row_accounting" if problems else "load/typed_row_counts"


def accounting_of(rows: list[tuple]) -> dict:
    """Per table: rows read, used, rejected, and rejected rows by reason (in the order of their names), from the
    rows of ``row_accounting.sql`` (table, reason or None for the rows used, count).

    A row is rejected when it has a finding itself (reason: its first check's name) or belongs to a job excluded for
    a finding elsewhere (reason: ``job excluded``).  ``read == used + rejected`` always.
    """
    out: dict[str, dict] = {
        t: {"read": 0, "used": 0, "rejected": 0, "rejected_by_reason": {}} for t in VOCABULARY.tables
    }
    for table, reason, n in sorted(rows, key=lambda r: (r[0], r[1] or "")):
        acc = out[table]
        acc["read"] += n
        if reason is None:
            acc["used"] += n
        else:
            acc["rejected"] += n
            acc["rejected_by_reason"][reason] = n
    return out
