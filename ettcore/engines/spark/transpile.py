"""The metric's DuckDB SQL, rewritten for Spark SQL with SQLGlot.

The ``.sql`` files in ``ettcore/sql/`` are the one source of truth and stay
written for DuckDB.  :func:`spark_sql` reads one of them, lets SQLGlot
translate it from the ``duckdb`` to the ``spark`` dialect, and applies a few
rewrites where the two engines mean different things by the same text or where
SQLGlot's output is not what Spark accepts:

``hash(x)``
    DuckDB's ``hash`` is 64-bit; Spark's ``hash`` is 32-bit Murmur3, which at a
    million jobs would give colliding job keys.  Rewritten to ``xxhash64(x)``
    (64-bit).  The key is internal: no output shows it.
decimal literals (``100.0``, ``1000.0``, ``3600.0``)
    a double in DuckDB, a ``DECIMAL`` in Spark (whose division then rounds to 6
    places).  Rewritten to ``CAST(<literal> AS DOUBLE)``.
``unnest([{...}, ...], recursive := true)``
    DuckDB unnests a list of structs into rows *and* columns; SQLGlot emits
    ``EXPLODE(..., recursive := TRUE)``, which Spark rejects.  Rewritten to
    Spark's ``INLINE(ARRAY(STRUCT(...), ...))``, which does the same.
``date_trunc(unit, <date>)``
    SQLGlot emits Spark's ``TRUNC(date, unit)``, which returns NULL for
    ``'day'``.  Rewritten to ``DATE_TRUNC(unit, x)`` (the caller casts to DATE).
``quantile_cont(x, p)``
    SQLGlot emits ``PERCENTILE_CONT(x, p)``, which Spark refuses (it takes ``WITHIN GROUP``).  Rewritten to Spark's
    ``PERCENTILE(x, p)``: the exact percentile, interpolated linearly between ranks at ``(n - 1) x p``, as DuckDB's
    ``quantile_cont`` is (the slow time's ideal pace, ``job_ideal_pace.sql``).
``lead(...)`` / ``lag(...)`` over a named window with a frame
    DuckDB ignores the frame for offset functions; Spark refuses it.  The named
    window is inlined there without its frame (other functions keep it).
``AS MATERIALIZED``
    a DuckDB planning hint with no Spark syntax; dropped.
``$name`` parameters
    SQLGlot itself writes them as Spark's named markers ``:name``, bound by ``spark.sql(q, args=...)``.

Where a whole query cannot be translated this way, a Spark-specific variant
may be placed at ``ettcore/sql/spark/<name>.sql``; :func:`spark_sql` then uses
it instead, and ``tests/test_spark_equality.py`` holds it to the DuckDB result.
The data checks (``ettcore/sql/checks/``) go through the same function when a
trace given as a URI is checked on Spark (:mod:`ettcore.engines.spark.load`;
held to DuckDB's findings by ``tests/test_spark_uri.py``).
At present no variant is needed: every metric and check query is translated.
"""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

from ettcore.config import SQL_DIR
from ettcore.trace.queries import sql

VARIANT_DIR = SQL_DIR / "spark"


def _is_recursive_unnest(node: exp.Expression) -> bool:
    if not isinstance(node, exp.Explode):
        return False
    extra = node.args.get("expressions") or []
    return any(
        isinstance(e, exp.PropertyEQ)
        and e.this.name.lower() == "recursive"
        and isinstance(e.expression, exp.Boolean)
        and e.expression.this
        for e in extra
    )


def _rewrite(node: exp.Expression, windows: dict[str, exp.Window]) -> exp.Expression:
    """One node's Spark form (see the module docstring for each rule)."""
    if isinstance(node, exp.Anonymous) and node.name.lower() == "hash":
        return exp.Anonymous(this="XXHASH64", expressions=node.expressions)
    if isinstance(node, exp.Literal) and not node.is_string and any(ch in node.this for ch in ".eE"):
        return exp.Cast(this=node.copy(), to=exp.DataType.build("DOUBLE"))
    if _is_recursive_unnest(node):
        return exp.Anonymous(this="INLINE", expressions=[node.this])
    if isinstance(node, exp.PercentileCont) and node.expression is not None:
        return exp.Anonymous(this="PERCENTILE", expressions=[node.this, node.expression])
    if isinstance(node, exp.DateTrunc):
        return exp.TimestampTrunc(this=node.this, unit=node.args.get("unit"))
    if isinstance(node, exp.CTE) and node.args.get("materialized") is not None:
        node.set("materialized", None)
        return node
    if isinstance(node, exp.Window) and isinstance(node.this, (exp.Lead, exp.Lag)) and node.alias in windows:
        named = windows[node.alias]
        return exp.Window(
            this=node.this,
            partition_by=[e.copy() for e in named.args.get("partition_by") or []],
            order=named.args["order"].copy() if named.args.get("order") else None,
            over="OVER",
        )
    return node


def duckdb_to_spark(text: str) -> str:
    """Translate one DuckDB statement to Spark SQL (SQLGlot plus the rewrites above)."""
    tree = sqlglot.parse_one(text, read="duckdb")
    windows: dict[str, exp.Window] = {}
    for select in tree.find_all(exp.Select):
        for w in select.args.get("windows") or []:
            windows[w.name] = w
    tree = tree.transform(lambda n: _rewrite(n, windows), copy=True)
    return tree.sql(dialect="spark")


@lru_cache(maxsize=None)
def spark_sql(name: str) -> str:
    """Spark SQL of ``ettcore/sql/<name>.sql``: the variant in ``sql/spark/`` if one exists, else the translation of
    the file with the vocabulary rendered (:func:`ettcore.trace.queries.sql`)."""
    variant = VARIANT_DIR / f"{name.split('/')[-1]}.sql"
    if variant.is_file():
        return variant.read_text(encoding="utf-8")
    return duckdb_to_spark(sql(name))
