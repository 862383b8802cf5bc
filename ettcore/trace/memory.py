"""DuckDB's memory budget: the default every load uses, the environment variable that changes it, and reading it back.

Without a budget DuckDB takes 80 % of the machine's memory, so a command's peak depends on the machine it runs on
(6.6 GiB for a million jobs on a 24 GiB machine).  ettcore gives DuckDB a fixed budget instead, chosen in this
order:

1. the ``memory_limit`` argument of :func:`ettcore.trace.load_trace` (``--memory-limit`` on the command line);
2. the environment variable ``ETT_MEMORY_LIMIT`` (e.g. ``ETT_MEMORY_LIMIT=8GB``);
3. :data:`DEFAULT_MEMORY_LIMIT`, 3 GB, or 80 % of the machine's memory where that is less.

Beyond the budget DuckDB spills to disk, and a trace whose spans do not fit in half of it is attributed in batches
of jobs (:func:`ettcore.metric.attribution_batches`); the answers are the same.  3 GB keeps a command's peak
resident memory under 4 GiB with room for Python and Polars.
"""

from __future__ import annotations

import os
import re

import duckdb

DEFAULT_MEMORY_LIMIT = "3GB"
ENV_VAR = "ETT_MEMORY_LIMIT"
_UNITS = {
    "": 1,
    "B": 1,
    "KB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "TB": 1e12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


def size_bytes(text: str) -> float | None:
    """A size as DuckDB writes or reads one (``'3GB'``, ``'2.7 GiB'``, ``'500 MB'``) in bytes;
    None when it is not one."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).upper() not in _UNITS:
        return None
    try:
        return float(m.group(1)) * _UNITS[m.group(2).upper()]
    except ValueError:  # e.g. '1.2.3'
        return None


def _machine_bytes() -> float | None:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not on every platform
        return None


def default_limit() -> str:
    """3 GB, or 80 % of the machine's memory (DuckDB's own default) where that is less; in MB, as DuckDB takes it."""
    budget = size_bytes(DEFAULT_MEMORY_LIMIT)
    machine = _machine_bytes()
    if machine is not None:
        budget = min(budget, 0.8 * machine)
    return f"{int(budget // 1e6)}MB"


def resolve(given: str | None) -> tuple[str, str]:
    """(the budget, where it came from: ``--memory-limit``, ``ETT_MEMORY_LIMIT`` or ``default``)."""
    if given is not None:
        return str(given), "--memory-limit"
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return env, ENV_VAR
    return default_limit(), "default"


def limit_bytes(con: duckdb.DuckDBPyConnection) -> float:
    """The connection's memory limit in bytes (DuckDB reads it back like ``'2.7 GiB'``); infinity when unreadable."""
    text = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    got = size_bytes(text)
    return float("inf") if got is None else got
