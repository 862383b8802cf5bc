"""Instants and durations as a user writes them, in integer milliseconds since the Unix epoch (UTC).

A leaf: it imports nothing of ettcore but the error type, so the loader, the windows and the engines can all use it.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

import duckdb

from ettcore.errors import InputError, Problem

HOUR_MS = 3_600_000
DAY_MS = 86_400_000
# Plausible timestamps: 1990-01-01 .. 2100-01-01 (ms).  Outside is an input error
# (a common cause: milliseconds given where seconds are expected).
TS_MIN_MS = 631_152_000_000
TS_MAX_MS = 4_102_444_800_000


def iso(ms: int | None) -> str | None:
    """ISO-8601 UTC text of an instant in ms (``...Z``), as every JSON output of ``ett`` writes instants."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def parse_instant(value: Any, file: str, field_name: str, row: int | None = None) -> int:
    """An instant given by a user (ISO-8601, zone-less = UTC, ``Z`` or an offset; or epoch seconds) in ms.

    Errors name ``file``, ``row`` and ``field_name``; instants outside 1990..2100 are refused like the trace's.
    """

    def bad(message: str) -> InputError:
        return InputError(Problem(file, row, field_name, message))

    if value is None or (isinstance(value, str) and not value.strip()):
        raise bad("missing time")
    if isinstance(value, bool):
        raise bad(f"not a time: {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(float(value)):
            raise bad(f"not a finite time: {value!r}")
        ms = round(float(value) * 1000)
    elif isinstance(value, str):
        try:
            num = float(value)
        except ValueError:
            num = None
        if num is not None:
            if not math.isfinite(num):
                raise bad(f"not a finite time: {value!r}")
            ms = round(num * 1000)
        else:
            con = duckdb.connect()
            con.execute("SET TimeZone = 'UTC'")
            got = con.execute("SELECT epoch_ms(TRY_CAST(trim($v) AS TIMESTAMPTZ))", {"v": value}).fetchall()[0][0]
            if got is None:
                raise bad(f"not a timestamp: {value!r}")
            ms = int(got)
    else:
        raise bad(f"not a time: {value!r}")
    if not TS_MIN_MS <= ms <= TS_MAX_MS:
        raise bad(f"timestamp out of the plausible range 1990..2100: {value!r}")
    return ms


def parse_duration(value: str, flag: str = "--window") -> int:
    """A duration like ``24h``, ``90m``, ``7d``, ``3600s`` (or a plain number of seconds) in ms; positive."""
    text = str(value).strip().lower()
    units = {"ms": 1, "s": 1000, "m": 60_000, "h": HOUR_MS, "d": DAY_MS, "w": 7 * DAY_MS}
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix):
            number, unit = text[: -len(suffix)], units[suffix]
            break
    else:
        number, unit = text, 1000
    try:
        amount = float(number)
    except ValueError:
        amount = float("nan")
    ms = amount * unit
    if not math.isfinite(ms) or ms <= 0 or ms != round(ms):
        raise InputError(
            Problem(
                flag,
                None,
                flag.lstrip("-").replace("-", "_"),
                f"not a positive duration: {value!r} (for example 24h, 90m, 7d or 3600s)",
            )
        )
    return int(round(ms))
