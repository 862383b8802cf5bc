"""ettcore: Effective Training Time (ETT%) for training-job traces.

The public API, importable from here (loaded on first use, so an in-job recorder does not pay for DuckDB)::

    from ettcore import load_trace, job_summary, fleet_summary, trend, InputError

The packages, one concern each, data flowing down the list (a package imports only from those below it):

- :mod:`ettcore.cli`           the ``ett`` command, one module a subcommand
- :mod:`ettcore.present`       charts, tables, calendar buckets, the scorecard, the notebook preamble, reports
- :mod:`ettcore.exporters`     the metric where dashboards read it (Prometheus)
- :mod:`ettcore.planning`      startup, restarts, checkpointing, expected ETT, what-if, opportunities, scheduling
- :mod:`ettcore.engines`       where the metric runs: DuckDB in process, or Spark (:mod:`ettcore.engines.spark`)
- :mod:`ettcore.metric`        ETT%, L1 and L2 per job, group, fleet and over time; stalls, intervals, the reference
- :mod:`ettcore.synthetic`     scenarios and the generator (synthetic data, always labelled so)
- :mod:`ettcore.importers`     other tools' logs in (MLPerf, goodput, Slurm, the recorder's run folders)
- :mod:`ettcore.integrations`  inside a running job: the recorder, process attempts, Lightning, Hugging Face, torchrun
- :mod:`ettcore.trace`         finding, reading, typing and checking a trace; windows; the span store
- :mod:`ettcore.phases`, :mod:`ettcore.errors`, :mod:`ettcore.config`, :mod:`ettcore.atomic`: the vocabulary, the
  input-error type, paths and atomic writes, used by every layer
"""

from __future__ import annotations

import importlib
from typing import Any

from ettcore import _moved

__version__ = "0.2.0"  # the project's one version (pyproject.toml reads it); CHANGELOG.md

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
