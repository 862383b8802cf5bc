"""Loading a trace: finding its tables, reading and typing them, the data checks, windows and the span store.

The bottom layer of ettcore: it imports nothing from the metric, planning, presentation or the CLI.

- :mod:`ettcore.trace.load`         finding and reading the tables into DuckDB, typing them (:func:`load_trace`)
- :mod:`ettcore.trace.typing`       the typing rules of the fields, in DuckDB's and Spark's SQL (a leaf)
- :mod:`ettcore.trace.checks`       the data-check queries and their findings (file, row, field)
- :mod:`ettcore.trace.check_cache`  the clean verdict of a trace kept by a digest of its bytes
- :mod:`ettcore.trace.span_store`   spans read and typed once, shared by the checks and the attribution
- :mod:`ettcore.trace.memory`       DuckDB's memory budget
- :mod:`ettcore.trace.window`       the analysis window and exclusion windows
- :mod:`ettcore.trace.instants`     instants and durations as users write them (a leaf)
- :mod:`ettcore.trace.queries`      the SQL files, one query a file
- :mod:`ettcore.trace.writer`       writing a trace folder (what the importers produce)
"""

from ettcore.trace.load import (
    SCHEMA,
    TABLES,
    CheckedTrace,
    Trace,
    discover,
    load_trace,
    parse_as_of,
    quote_ident,
)

__all__ = ["SCHEMA", "TABLES", "CheckedTrace", "Trace", "discover", "load_trace", "parse_as_of", "quote_ident"]
