"""Import paths that moved when ettcore was laid out one package a concern, kept working for now.

``import ettcore.scorecard`` (or ``from ettcore.scorecard import Scorecard``) still works: the finder below gives
the module at its new path, ``ettcore.present.scorecard``, and warns with a :class:`DeprecationWarning` naming it.
The old path gives the very module object, so state and monkeypatching are shared.  Names that left a module (the
in-job recorder's converter, the integrations' ``Timeline``) are served, with a warning, by :data:`MOVED_NAMES`.
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
    "ettcore.metric.lemon_check": "ettcore.planning.lemon_check",
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


def _moved_name_getter(old: str, module: ModuleType):
    """A module ``__getattr__`` (PEP 562) that serves the names which left ``old`` from where they went, warning."""

    def __getattr__(name: str):
        target = MOVED_NAMES.get((old, name))
        if target is None:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        new_name = RENAMED.get((old, name), name)
        _warn(f"{old}.{name}", f"{target}.{new_name}")
        return getattr(importlib.import_module(target), new_name)

    return __getattr__


class _Loader(importlib.abc.Loader):
    """Gives the module at its new path itself (so setting an attribute through the old path patches the real
    module), keeping the module's own ``__spec__``."""

    def create_module(self, spec):
        _warn(spec.name, MOVED_MODULES[spec.name])
        module = importlib.import_module(MOVED_MODULES[spec.name])
        self._own_spec = module.__spec__
        if any(old == spec.name for old, _ in MOVED_NAMES) and "__getattr__" not in module.__dict__:
            module.__getattr__ = _moved_name_getter(spec.name, module)
        return module

    def exec_module(self, module):
        module.__spec__ = self._own_spec  # the import system set the old path's spec: put the module's own back


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old import paths of :data:`MOVED_MODULES` (installed once by ``ettcore/__init__``)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED_MODULES:
            return importlib.machinery.ModuleSpec(fullname, _Loader())
        return None


def install() -> None:
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
