"""The SQL files of the package, one query a file, read by name.

``ettcore/sql/checks/*.sql``: data checks; each returns the failing rows
(``table_name, _file, _row, field, job_id, message``).
``ettcore/sql/metric/*.sql``: the metric; each file is named after what it returns.
"""

from __future__ import annotations

from functools import lru_cache

from ettcore.config import SQL_DIR


@lru_cache(maxsize=None)
def sql(name: str) -> str:
    """The text of ``ettcore/sql/<name>.sql`` (``name`` like ``metric/job_summary``)."""
    path = SQL_DIR / f"{name}.sql"
    return path.read_text(encoding="utf-8")


def check_names() -> list[str]:
    return sorted(p.stem for p in (SQL_DIR / "checks").glob("*.sql"))
