"""The store's SQL: one statement a file in ``ettcore/sql/store/``, read by name, its parameters bound.

Every table definition, digest, comparison, read and write of the store is a file there, named after what it
returns (a read, a temporary table), or after what it does to which table (``create_``, ``insert_``, ``update_``,
``delete_``); its values (a source, an ingest id, an instant) are ``$name`` parameters, bound when it runs.  A reader
can run a file by hand in DuckDB, with the store attached as ``st`` (``ATTACH 'fleet.duckdb' AS st``) and the
markers below written out.  Besides the vocabulary's ``{{...}}`` markers (:func:`ettcore.trace.queries.render`), a
file may hold:

``{{name}}``
    one of the store's own names, given by the caller from this package's lists (a trace table such as ``spans``,
    a result table such as ``res_job_pace``, one of the refresh's temporary tables): a plain identifier, never text
    a user gave;
``{{each LIST: TEXT}}``
    TEXT once a column of LIST, a list of :class:`Column` that the caller read from the store's own schema (a bound
    parameter cannot name a column), joined by ``, ``: ``@`` is the column's quoted name (``NULL`` for a column the
    relation at hand lacks), ``@type`` its DuckDB type and ``@n`` its position in the list.

The expansion is :func:`render`; :func:`text` reads a file and renders it; :func:`run`, :func:`rows` and
:func:`value` run one.  :func:`create_as` gives one of the metric's own queries (``ettcore/sql/metric/``) a temporary
name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import duckdb

from ettcore.config import SQL_DIR
from ettcore.trace.load import quote_ident
from ettcore.trace.queries import render as render_vocabulary

STORE_SQL = SQL_DIR / "store"
_MARKER = re.compile(r"\{\{(.*?)\}\}", re.S)
_EACH = re.compile(r"\s*each\s+([a-z_]+)\s*:\s*(.*?)\s*", re.S)
_ONE = re.compile(r"\s*([a-z_]+)\s*")
_AT = re.compile(r"@(type|n)?")
_NAME = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?")


@dataclass(frozen=True)
class Column:
    """One column of the store's own schema, as a statement's ``{{each ...}}`` list names it: its name, its DuckDB
    type, and whether the relation the statement reads has it (``present``: else ``@`` reads ``NULL``)."""

    name: str
    type: str
    present: bool = True


def columns_of(
    schema: Mapping[str, str], present: Iterable[str] | None = None, skip: Iterable[str] = ()
) -> list[Column]:
    """The columns of ``schema`` (name -> DuckDB type, in the store's order, e.g. :func:`ettcore.store.db.columns`)
    less those named in ``skip``; a column whose name (without case) is not in ``present`` is marked absent
    (``present`` None: every column is there)."""
    have = None if present is None else {c.lower() for c in present}
    left_out = set(skip)
    return [
        Column(name, dtype, have is None or name.lower() in have)
        for name, dtype in schema.items()
        if name not in left_out
    ]


def render(template: str, where: str = "SQL", **parts: str | list[Column]) -> str:
    """``template`` with each ``{{name}}`` of ``parts`` written as that name and each ``{{each LIST: TEXT}}`` of
    ``parts`` expanded over its columns (see the module docs); the vocabulary's markers as
    :func:`ettcore.trace.queries.render` writes them.  A name that is not a plain identifier, a column list given as
    a name or a name as a list, and a part the template does not use are errors (``ValueError`` naming ``where``)."""
    used: set[str] = set()

    def expand(m: re.Match) -> str:
        each, one = _EACH.fullmatch(m.group(1)), _ONE.fullmatch(m.group(1))
        name = each.group(1) if each else one.group(1) if one else None
        if name not in parts:
            return render_vocabulary(m.group(0), where)
        used.add(name)
        value = parts[name]
        if each:  # {{each LIST: TEXT}}
            if not isinstance(value, list) or not all(isinstance(c, Column) for c in value):
                raise ValueError(f"{where}: {{{{each {name}: ...}}}} needs a list of columns")
            return ", ".join(_each(each.group(2), c, i) for i, c in enumerate(value))
        if not isinstance(value, str) or not _NAME.fullmatch(value):
            raise ValueError(f"{where}: {{{{{name}}}}} must be one of the store's own names, not {value!r}")
        return value

    # one pass: no text written for a marker is read again as a marker
    out = _MARKER.sub(expand, template)
    unused = set(parts) - used
    if unused:
        raise ValueError(f"{where}: no marker for {', '.join(sorted(unused))}")
    return out


def _each(text: str, column: Column, i: int) -> str:
    def one(m: re.Match) -> str:
        if m.group(1) == "type":
            return column.type
        if m.group(1) == "n":
            return str(i)
        return quote_ident(column.name) if column.present else "NULL"

    return _AT.sub(one, text)


@lru_cache(maxsize=None)
def _read(name: str) -> str:
    return (STORE_SQL / f"{name}.sql").read_text(encoding="utf-8")


def text(name: str, **parts: str | list[Column]) -> str:
    """The statement of ``ettcore/sql/store/<name>.sql``, rendered (:func:`render`)."""
    return render(_read(name), f"sql/store/{name}.sql", **parts)


def run(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None, **parts: str | list[Column]
) -> duckdb.DuckDBPyConnection:
    """Run the statement ``name`` with ``params`` bound."""
    return con.execute(text(name, **parts), params or {})


def rows(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None, **parts: str | list[Column]
) -> list[tuple]:
    """The rows the statement ``name`` returns."""
    return run(con, name, params, **parts).fetchall()


def value(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None, **parts: str | list[Column]
) -> Any:
    """The first column of the first row the statement ``name`` returns (None when it returns no row)."""
    got = run(con, name, params, **parts).fetchone()
    return None if got is None else got[0]


def create_as(con: duckdb.DuckDBPyConnection, kind: str, name: str, query: str) -> None:
    """``name`` (a temporary ``TABLE`` or ``VIEW``, replacing one of that name) holding ``query``, one of the
    metric's own queries (``ettcore.trace.queries.sql``) or of this folder (:func:`text`)."""
    if kind not in ("TABLE", "VIEW") or not _NAME.fullmatch(name):
        raise ValueError(f"not a temporary relation this package makes: {kind} {name}")
    con.execute(f"CREATE OR REPLACE TEMP {kind} {name} AS {query}")
