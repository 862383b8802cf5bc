"""The typing rules of a trace's fields, written once for both engines.

Each field of ``jobs``, ``attempts`` and ``spans`` has a kind (:data:`KINDS`): ``str`` (its text), ``int`` (a finite
whole number below 9e15), ``num`` (a finite number) or ``ts`` (integer milliseconds since the Unix epoch: from a
timestamp column, zone-less = UTC, its microseconds rounded half up; from seconds since the epoch, a number or text
that reads as one, rounded to the millisecond; or from an ISO-8601 text; NULL outside 1990..2100, see
:mod:`ettcore.trace.instants`).  A NULL typed value marks a missing or unparsable one; beside it the loader keeps the
field's raw text.

How a field is typed depends on its kind and on the class of the column it comes from (:data:`SOURCES`): text, a small
integer (every value fits in 9e15), a big integer (64 bits), another number, a timestamp (zoned or not), anything else
(parsed from its text form, so a bad type is an unparsable value), or absent.  Each engine sorts its own column types
into these classes (:func:`ettcore.trace.load.duckdb_source`, :func:`ettcore.engines.spark.spark_source`); the rules
below then write the SQL, with the few functions the two SQL dialects spell differently taken from a :class:`Dialect`
(:data:`DUCKDB`, :data:`SPARK`).  SQLGlot cannot translate these expressions (it mistranslates ``isfinite`` and
``epoch_ms``), hence the two spellings.

A leaf: it imports nothing of ettcore but the plausible bounds of :mod:`ettcore.trace.instants`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from ettcore.trace.instants import TS_MAX_MS, TS_MIN_MS

KINDS = ("str", "int", "num", "ts")

# The classes of a source column.
TEXT = "text"
SMALL_INT = "small integer"  # every value is an integer below 9e15 (8 to 32 bits)
BIG_INT = "big integer"  # a signed 64-bit integer
NUMERIC = "other numeric"  # wider or unsigned 64-bit integers, floats, decimals
TIMESTAMP = "timestamp"  # a zone-less timestamp or a date
ZONED_TIMESTAMP = "zoned timestamp"  # an instant; its text ends with its zone, '+00'
OTHER = "other"  # lists, structs, booleans, times, blobs ...: parsed from their text
ABSENT = "absent"  # the column (or the table) is not there
SOURCES = (TEXT, SMALL_INT, BIG_INT, NUMERIC, TIMESTAMP, ZONED_TIMESTAMP, OTHER, ABSENT)
NUMBERS = frozenset([SMALL_INT, BIG_INT, NUMERIC])


@dataclass(frozen=True)
class Dialect:
    """What a SQL dialect spells its own way; each function takes SQL text and returns SQL text."""

    name: str
    text: Callable[[str], str]  # a value's text
    zoned_text: Callable[[str], str]  # a zoned timestamp's text, ending with its zone as DuckDB writes it ('+00')
    null_text: str  # the text of an absent field
    nulls: Mapping[str, str]  # the typed value of an absent field, by kind
    finite: Callable[[str], str]  # a DOUBLE is finite (true only when it is neither NULL, NaN nor infinite)
    whole: Callable[[str], str]  # a finite DOUBLE is a whole number
    timestamp_ms: Callable[[str], str]  # a timestamp column's value in ms, NULL outside the plausible bounds
    text_ms: Callable[[str], str]  # the ms of an ISO-8601 text (zone-less = UTC), NULL when unparsable


def plausible_ms(ms: str) -> str:
    """``ms`` where it lies within the plausible bounds (1990..2100), else NULL."""
    return f"(CASE WHEN ({ms}) BETWEEN {TS_MIN_MS} AND {TS_MAX_MS} THEN ({ms}) END)"


def _duckdb_timestamp_ms(q: str) -> str:
    # the bounds compared as instants, so the conversion to ms runs once a value (it costs as much as reading it);
    # the ms are the microseconds rounded to the nearest ms, half up, as epoch_ms rounds them (the bounds keep them
    # positive), in a third of epoch_ms's time (tests/test_formats.py holds the two equal)
    t = f"CAST({q} AS TIMESTAMPTZ)"
    lo, hi = (
        f"make_timestamp({TS_MIN_MS * 1000})::TIMESTAMPTZ",
        f"make_timestamp({(TS_MAX_MS + 1) * 1000})::TIMESTAMPTZ",
    )
    return f"(CASE WHEN {t} >= {lo} AND {t} < {hi} THEN (epoch_us({t}) + 500) // 1000 END)"


DUCKDB = Dialect(
    name="duckdb",
    text=lambda q: f"TRY_CAST({q} AS VARCHAR)",
    zoned_text=lambda q: f"TRY_CAST({q} AS VARCHAR)",  # DuckDB's own text of a TIMESTAMPTZ ends with its zone
    null_text="NULL::VARCHAR",
    nulls=dict.fromkeys(KINDS, "NULL"),
    finite=lambda d: f"isfinite({d})",
    whole=lambda d: f"{d} = trunc({d})",
    timestamp_ms=_duckdb_timestamp_ms,
    text_ms=lambda q: f"epoch_ms(TRY_CAST({q} AS TIMESTAMPTZ))",
)

SPARK = Dialect(
    name="spark",
    text=lambda q: f"CAST({q} AS STRING)",
    zoned_text=lambda q: f"concat(CAST({q} AS STRING), '+00')",
    null_text="CAST(NULL AS STRING)",
    nulls={
        "str": "CAST(NULL AS STRING)",
        "int": "CAST(NULL AS BIGINT)",
        "num": "CAST(NULL AS DOUBLE)",
        "ts": "CAST(NULL AS BIGINT)",
    },
    # Spark has no isfinite: NaN is a value of its own, and the infinities lie beyond the largest DOUBLE
    finite=lambda d: f"({d} IS NOT NULL AND NOT isnan({d}) AND abs({d}) <= CAST('1.7976931348623157E308' AS DOUBLE))",
    whole=lambda d: f"{d} = round({d})",  # Spark's trunc truncates dates only
    # the microseconds rounded to the nearest ms, half up, as DuckDB's epoch_ms (unix_millis would truncate them); the
    # plausible bounds keep the values positive, where integer division is the floor
    timestamp_ms=lambda q: plausible_ms(f"((unix_micros(CAST({q} AS TIMESTAMP)) + 500) div 1000)"),
    text_ms=lambda q: f"((unix_micros(TRY_CAST({q} AS TIMESTAMP)) + 500) div 1000)",
)

DIALECTS = {d.name: d for d in (DUCKDB, SPARK)}


def _seconds_ms(d: str, dialect: Dialect) -> str:
    """The ms of ``d`` seconds since the epoch, rounded; NULL unless finite and below 1e13 s."""
    return f"CASE WHEN {dialect.finite(d)} AND abs({d}) < 1e13 THEN CAST(round({d} * 1000) AS BIGINT) END"


# The rules: (kind, source class) -> the typed expression of the value ``q``, in a dialect.  A source of class OTHER
# reaches them as its text (class TEXT); ``str`` is the raw text (see typed_field).
Rule = Callable[[str, Dialect], str]


# int and num read a DOUBLE by TRY_CAST whatever the source (on a number it cannot fail).  From a timestamp column the
# engines differ, as before these rules were shared: DuckDB's TRY_CAST gives NULL (unparsable), Spark's gives the epoch
# seconds of a TIMESTAMP and refuses a TIMESTAMP_NTZ or DATE at analysis.
def _int_from_double(q: str, dialect: Dialect) -> str:
    d = f"TRY_CAST({q} AS DOUBLE)"
    return f"CASE WHEN {dialect.finite(d)} AND {dialect.whole(d)} AND abs({d}) < 9e15 THEN CAST({d} AS BIGINT) END"


def _num(q: str, dialect: Dialect) -> str:
    d = f"TRY_CAST({q} AS DOUBLE)"
    return f"CASE WHEN {dialect.finite(d)} THEN {d} END"


def _ts_from_number(q: str, dialect: Dialect) -> str:
    return plausible_ms(_seconds_ms(f"CAST({q} AS DOUBLE)", dialect))


def _ts_from_text(q: str, dialect: Dialect) -> str:
    # a text that reads as a number is seconds since the epoch; any other an ISO-8601 instant
    d = f"TRY_CAST({q} AS DOUBLE)"
    return plausible_ms(
        f"CASE WHEN {d} IS NOT NULL THEN ({_seconds_ms(d, dialect)}) ELSE {dialect.text_ms(f'trim({q})')} END"
    )


RULES: dict[tuple[str, str], Rule] = {
    # a small integer is whole and below 9e15: no detour through DOUBLE
    ("int", SMALL_INT): lambda q, dialect: f"CAST({q} AS BIGINT)",
    # a 64-bit integer below 9e15 in magnitude: the same values as the DOUBLE test, without the DOUBLE
    ("int", BIG_INT): lambda q, dialect: f"(CASE WHEN {q} BETWEEN -8999999999999999 AND 8999999999999999 THEN {q} END)",
    ("int", NUMERIC): _int_from_double,
    ("int", TEXT): _int_from_double,
    ("int", TIMESTAMP): _int_from_double,
    ("int", ZONED_TIMESTAMP): _int_from_double,
    **{("num", source): _num for source in (TEXT, SMALL_INT, BIG_INT, NUMERIC, TIMESTAMP, ZONED_TIMESTAMP)},
    **{("ts", source): _ts_from_number for source in NUMBERS},
    ("ts", TIMESTAMP): lambda q, dialect: dialect.timestamp_ms(q),
    ("ts", ZONED_TIMESTAMP): lambda q, dialect: dialect.timestamp_ms(q),
    ("ts", TEXT): _ts_from_text,
}


def typed_field(
    col: str, kind: str, source: str, dialect: Dialect | str, quote: Callable[[str], str]
) -> tuple[str, str]:
    """(typed expression, raw-text expression) of the field ``col`` of ``kind`` read from a column of class ``source``.

    ``quote`` quotes the column name as the engine does.  An absent field gives the dialect's NULLs.
    """
    if isinstance(dialect, str):
        dialect = DIALECTS[dialect]
    if kind not in KINDS or source not in SOURCES:
        raise ValueError(f"no typing rule for kind {kind!r} from a {source!r} column")
    if source == ABSENT:
        return dialect.nulls[kind], dialect.null_text
    q = quote(col)
    raw = dialect.zoned_text(q) if source == ZONED_TIMESTAMP else dialect.text(q)
    if source == OTHER:
        q, source = raw, TEXT
    if kind == "str":
        return raw, raw
    return RULES[(kind, source)](q, dialect), raw


def typed_name(col: str, kind: str) -> str:
    """The typed column of field ``col``: ``<col>_ms`` for a timestamp, else ``col`` (its text is ``<col>_raw``)."""
    return f"{col}_ms" if kind == "ts" else col
