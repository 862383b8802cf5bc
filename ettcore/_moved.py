"""Import paths that moved when ettcore was laid out one package a concern, kept working for now.

``import ettcore.scorecard`` (or ``from ettcore.scorecard import Scorecard``) still works: the finder below gives
the module at its new path, ``ettcore.present.scorecard``, and warns with a :class:`DeprecationWarning` naming it.
The same module object is returned, so state and monkeypatching are shared.  Names that moved inside a module
(the in-job recorder's converter) are served by :data:`MOVED_NAMES`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

# old module -> new module
MOVED_MODULES = {
    "ettcore.checks": "ettcore.trace.checks",
    "ettcore.check_cache": "ettcore.trace.check_cache",
    "ettcore.span_store": "ettcore.trace.span_store",
    "ettcore.memory": "ettcore.trace.memory",
    "ettcore.window": "ettcore.trace.window",
    "ettcore.trace_writer": "ettcore.trace.writer",
    "ettcore.queries": "ettcore.trace.queries",
    "ettcore.timeline": "ettcore.metric.intervals",
    "ettcore.stalls": "ettcore.metric.stalls",
    "ettcore.reference": "ettcore.metric.reference",
    "ettcore.engines.spark_load": "ettcore.engines.spark.load",
    "ettcore.engines.transpile": "ettcore.engines.spark.transpile",
    "ettcore.startup": "ettcore.planning.startup",
    "ettcore.restarts": "ettcore.planning.restarts",
    "ettcore.checkpointing": "ettcore.planning.checkpointing",
    "ettcore.whatif": "ettcore.planning.whatif",
    "ettcore.opportunities": "ettcore.planning.opportunities",
    "ettcore.scheduling": "ettcore.planning.scheduling",
    "ettcore.scenario": "ettcore.synthetic.scenario",
    "ettcore.generator": "ettcore.synthetic.generator",
    "ettcore.scenario_traces": "ettcore.synthetic.traces",
    "ettcore.charts": "ettcore.present.charts",
    "ettcore.tables": "ettcore.present.tables",
    "ettcore.buckets": "ettcore.present.calendar",
    "ettcore.scorecard": "ettcore.present.scorecard",
    "ettcore.report": "ettcore.present.report",
    "ettcore.recorder": "ettcore.integrations.recorder",
    "ettcore.integrations.timeline": "ettcore.integrations.phase_clock",
}
# (old module, name) -> new module, for names that left a module that still exists at its old path
MOVED_NAMES = {
    ("ettcore.recorder", name): "ettcore.importers.recorder"
    for name in ("Record", "read_records", "collect", "convert", "Conversion")
} | {("ettcore.integrations.timeline", "Timeline"): "ettcore.integrations.phase_clock"}
RENAMED = {("ettcore.integrations.timeline", "Timeline"): "PhaseClock"}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; import it from there", DeprecationWarning, stacklevel=3)


class _Alias(ModuleType):
    """The old path's module: every attribute read from the new module, moved names from where they went."""

    def __init__(self, old: str, new: ModuleType):
        super().__init__(old, new.__doc__)
        self._old, self._new = old, new

    def __getattr__(self, name: str):
        target = MOVED_NAMES.get((self._old, name))
        if target is not None:
            _warn(f"{self._old}.{name}", f"{target}.{RENAMED.get((self._old, name), name)}")
            return getattr(importlib.import_module(target), RENAMED.get((self._old, name), name))
        return getattr(self._new, name)

    def __dir__(self):
        return dir(self._new)


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        new = MOVED_MODULES[spec.name]
        _warn(spec.name, new)
        return _Alias(spec.name, importlib.import_module(new))

    def exec_module(self, module):
        return None


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old import paths of :data:`MOVED_MODULES` (installed once by ``ettcore/__init__``)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED_MODULES:
            return importlib.machinery.ModuleSpec(fullname, _Loader())
        return None


def install() -> None:
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
