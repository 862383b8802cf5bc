"""How a trace or a fleet store is opened and which part of its time is measured: one definition.

:class:`TraceOptions` holds what every measuring ``ett`` command takes (``--mapping``, ``--causes-file``,
``--as-of``, ``--since``, ``--until``, ``--exclude``, ``--skip-invalid``, ``--memory-limit``, ``--temp-directory``)
and what every opener reads (:func:`ettcore.trace.load.load_trace`, :func:`ettcore.engines.open_trace`,
:func:`ettcore.store.open_store`), by the same names.  An opener that cannot honour one says so (an
:class:`~ettcore.errors.InputError` naming the flag); none ignores one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TraceOptions:
    """The options that open and cut a trace or a store (all optional)."""

    mapping: str | Path | None = None  # phase/owner mapping file extending the defaults (ettcore.phases)
    causes_file: str | Path | None = None  # a user's causes file extending the vocabulary's (ettcore.vocabulary)
    as_of: Any = None  # analysis time for running jobs (ISO-8601 or epoch seconds); default: the trace's latest
    since: Any = None  # measure from this instant on (the window is [since, until))
    until: Any = None  # measure before this instant
    exclude: Any = None  # exclusion windows: a CSV/JSON file or a sequence of ettcore.trace.window.Exclusion
    skip_invalid: bool = False  # leave out jobs with problems (and say which) instead of refusing the trace
    memory_limit: str | None = None  # DuckDB's memory cap (e.g. "8GB"; ettcore.trace.memory)
    temp_directory: str | Path | None = None  # where DuckDB spills beyond the cap

    @classmethod
    def of(cls, options: "TraceOptions | None" = None, **given: Any) -> "TraceOptions":
        """``options`` with ``given`` on top; a name that is not an option is a ``TypeError`` (never ignored)."""
        base = asdict(options) if options is not None else {}
        return cls(**{**base, **given})

    def as_kwargs(self) -> dict[str, Any]:
        """The options as the loader's keyword arguments."""
        return asdict(self)

    def given(self) -> dict[str, Any]:
        """The options set to other than their defaults."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}
