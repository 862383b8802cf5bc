"""ettcore: Effective Training Time (ETT%) for training-job traces.

The public API, importable from here (loaded on first use, so an in-job recorder does not pay for DuckDB)::

    from ettcore import load_trace, job_summary, fleet_summary, trend, InputError

The map of the package, and the only one: every subpackage and top-level module, one line each, in the order of
the import-linter layers in ``pyproject.toml`` (a module imports only from those below it; modules of one layer are
independent of each other).  ``tests/test_package_map.py`` holds this list equal to the files on disk and to the
layers.

- :mod:`ettcore.cli`           the ``ett`` command, one module a subcommand, thin over the library
- :mod:`ettcore.present`       charts, tables, calendar buckets, the scorecard, the notebook preamble, the reports
- :mod:`ettcore.exporters`     the metric where dashboards and alerts read it (Prometheus)
- :mod:`ettcore.planning`      start-up, restarts, checkpointing, expected ETT%, what-if, reliability, lemon checks
- :mod:`ettcore.store`         the fleet store: one DuckDB file refreshed incrementally, and its Parquet mirror
- :mod:`ettcore.engines`       where the metric runs: DuckDB in process, or Spark (:mod:`ettcore.engines.spark`)
- :mod:`ettcore.bundled`       the bundled data sets under ``data/`` and readers of their metadata
- :mod:`ettcore.metric`        ETT%, L1 and L2 per job, group, fleet and over time; stalls, hangs, nodes, money
- :mod:`ettcore.synthetic`     scenarios and the generator (synthetic data, always labelled so)
- :mod:`ettcore.integrations`  inside a running job: the recorder, process attempts, Lightning, Hugging Face, torchrun
- :mod:`ettcore.importers`     other tools' logs in (MLPerf, goodput, Slurm, the recorder's run folders)
- :mod:`ettcore.trace`         finding, reading, typing and checking a trace; windows; the span store
- :mod:`ettcore.phases`        the phases, the L2 components and their owners
- :mod:`ettcore.causes`        the interruption causes and the rules that decide them
- :mod:`ettcore.vocabulary`    the shared vocabulary (end reasons, L1 buckets, causes, tables) read from ``defaults/``
- :mod:`ettcore.errors`        the one input-error type (:class:`InputError` of problems: file, row, field)
- :mod:`ettcore.config`        every path of the project, in one place
- :mod:`ettcore.atomic`        crash-safe writes: a temporary name beside the target, then a rename
- :mod:`ettcore.order`         natural order of job and node ids (``2`` before ``10``)
- :mod:`ettcore._moved`        old import paths from before this layout, kept working with a warning

Data beside the code, not imported as modules:

- ``ettcore/sql/``       the metric's SQL (``sql/metric/``), the data checks (``sql/checks/``), the loader's
  default as-of and row accounting (``sql/load/``, both engines) and the store's statements and the span store's
  typed read (``sql/store/``), one query or statement a file
- ``ettcore/defaults/``  the vocabulary's YAML files (phases, causes, end reasons, tables), the one list of each
- ``ettcore/schemas/``   the JSON Schemas of every ``ett ... --json`` answer

Outside the package, in a checkout: ``tools/campaigns/`` (the runs that record the bundled data), ``tools/`` (the
project's Slurm and monitoring instances), ``data/``, ``notebooks/``, ``docs/`` and ``tests/`` (with the plain-Python
oracle of the metric, ``tests/reference.py``).
"""

from __future__ import annotations

import importlib
from typing import Any

from ettcore import _moved

__version__ = "0.4.0"  # the project's one version (pyproject.toml reads it); CHANGELOG.md

_PUBLIC = {
    "load_trace": "ettcore.trace.load",
    "Trace": "ettcore.trace.load",
    "job_summary": "ettcore.metric",
    "fleet_summary": "ettcore.metric",
    "trend": "ettcore.metric",
    "InputError": "ettcore.errors",
    "TraceError": "ettcore.errors",
    "Problem": "ettcore.errors",
}
__all__ = ["__version__", *_PUBLIC]

_moved.install()


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'ettcore' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
