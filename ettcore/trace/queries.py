"""The SQL files of the package, one query a file, read by name.

``ettcore/sql/checks/*.sql``: data checks; each returns the failing rows
(``table_name, _file, _row, field, job_id, message``).
``ettcore/sql/load/*.sql``: what the loader asks of the checked rows (the default as-of, the row accounting).
``ettcore/sql/metric/*.sql``: the metric; each file is named after what it returns.
``ettcore/sql/store/*.sql``: the span store's typed read and screen (``span_store``, ``train_overlap_suspects``), and
the fleet store's statements (:mod:`ettcore.store.statements`).

A file names the vocabulary's lists as ``{{name}}`` (``end_reason IN ({{interruptions}})``), and repeats a text for
each item of one as ``{{each LIST: TEXT}}``, with ``@`` standing for the item (``{{each nof: sum(@) AS @}}`` gives
``sum(nof_failure) AS nof_failure, sum(nof_preemption) AS nof_preemption``), the repeats joined by a comma, or by
``SEP`` as ``{{each LIST joined by SEP: TEXT}}`` (``{{each tables joined by UNION ALL: SELECT '@' FROM typed_@}}``;
TEXT may then span lines): :func:`sql` renders them from :func:`ettcore.vocabulary.sql_fragments` and
:func:`ettcore.vocabulary.sql_lists`, so no end reason or table is typed in a query.  Both engines run the rendered
text (Spark through :mod:`ettcore.engines.spark.transpile`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from ettcore.config import SQL_DIR
from ettcore.vocabulary import VOCABULARY, sql_fragments, sql_lists

FRAGMENT = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
EACH = re.compile(r"\{\{\s*each\s+([a-z_]+)(?:\s+joined\s+by\s+([A-Z][A-Z ]*?))?\s*:\s*(.*?)\s*\}\}", re.S)


def render(text: str, where: str = "SQL") -> str:
    """``text`` with each ``{{each LIST: TEXT}}`` and ``{{name}}`` replaced from the vocabulary; an unknown name is a
    ``KeyError`` naming ``where``."""
    fragments, lists = sql_fragments(VOCABULARY), sql_lists(VOCABULARY)

    def each(m: re.Match) -> str:
        if m.group(1) not in lists:
            raise KeyError(f"{where}: unknown vocabulary list {m.group(1)!r}; known: {', '.join(lists)}")
        sep = ", " if m.group(2) is None else f"\n{m.group(2)}\n"
        return sep.join(m.group(3).replace("@", item) for item in lists[m.group(1)])

    def one(m: re.Match) -> str:
        if m.group(1) not in fragments:
            raise KeyError(f"{where}: unknown vocabulary fragment {m.group(1)!r}; known: {', '.join(fragments)}")
        return fragments[m.group(1)]

    return FRAGMENT.sub(one, EACH.sub(each, text))


@lru_cache(maxsize=None)
def sql(name: str) -> str:
    """The text of ``ettcore/sql/<name>.sql`` (``name`` like ``metric/job_summary``), the vocabulary rendered."""
    path = SQL_DIR / f"{name}.sql"
    return render(path.read_text(encoding="utf-8"), str(path))


def check_names() -> list[str]:
    return sorted(p.stem for p in (SQL_DIR / "checks").glob("*.sql"))
