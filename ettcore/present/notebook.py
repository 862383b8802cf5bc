"""The one-call preamble of a notebook: the chart renderer, the trace (a user's, or the notebook's default), the
loaded and checked trace and the notebook's scorecard.

Every notebook that reads a trace starts with::

    nb = open_notebook("02-time-breakdown", "II-A: time breakdown and restart bound", renderer, trace,
                       scenario="representative", jobs=jobs, seed=seed)
    t, card, synthetic = nb.trace, nb.card, nb.synthetic
    print(nb.heading)

``trace`` is the notebook's ``trace`` parameter: empty means the notebook's default, a cached synthetic scenario
trace (:func:`ettcore.synthetic.traces.scenario_trace`) or a bundled folder (``default=``).  A fleet notebook also
takes a ``store`` parameter: a fleet store (``ett ingest STORE SOURCE``, :mod:`ettcore.store`), read through
:func:`ettcore.store.open_store` (its stored per-job results) instead of a trace; a ``trace`` that is a store is read
the same way, as every ``ett`` command does.  Keyword arguments the loader takes (``mapping``, ``as_of``,
``skip_invalid``, ``since``, ``until``, ``exclude``) are passed on, with empty notebook parameters (``""``) meaning
"not given" (``skip_invalid`` does not apply to a store: it holds checked rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ettcore import store as fleet_store
from ettcore.errors import InputError, Problem
from ettcore.present import charts
from ettcore.present.scorecard import Scorecard
from ettcore.synthetic.traces import display_path, scenario_trace
from ettcore.trace.load import Trace, load_trace


@dataclass(frozen=True)
class NotebookTrace:
    """What a notebook's preamble gives: the trace as given and as shown, the loaded trace and the scorecard."""

    path: str
    shown: str
    trace: Trace
    card: Scorecard

    @property
    def synthetic(self) -> bool:
        return self.trace.synthetic

    @property
    def is_store(self) -> bool:
        """True when the notebook reads a fleet store (its stored per-job results), not a trace."""
        return isinstance(self.trace, fleet_store.StoreTrace)

    @property
    def heading(self) -> str:
        """``trace: <path relative to the project>`` (``store: ...`` for a fleet store), ``(SYNTHETIC)`` for synthetic
        data, and, for a store whose stored results do not answer a parameter, why it attributes again."""
        text = f"{'store' if self.is_store else 'trace'}: {self.shown}" + ("  (SYNTHETIC)" if self.synthetic else "")
        recomputed = getattr(self.trace, "recomputed", None)
        return text + (f"\n({recomputed}: attributed again from the store's rows)" if recomputed else "")

    def reopen(self, **load: Any) -> Trace:
        """The notebook's trace or store again, with other loader arguments (``exclude=...``)."""
        return open_trace(self.path, **load)


def default_trace(trace: str, scenario: str | None = None, jobs: int = 0, seed: int = 0, default: Any = None) -> str:
    """The trace a notebook reads: ``trace`` when given, else the cached ``scenario`` trace, else ``default``."""
    if trace:
        return str(trace)
    if scenario is not None:
        return str(scenario_trace(scenario, jobs, seed))
    if default is None:
        raise ValueError("a notebook needs a trace parameter, a scenario or a default trace")
    return str(default)


def open_trace(path: str, **load: Any) -> Trace:
    """A trace through the loader, or a fleet store through :func:`ettcore.store.open_store`; empty arguments
    (``""``) are "not given"."""
    args = {k: (v if v != "" else None) for k, v in load.items()}
    if fleet_store.is_store(path):
        args.pop("skip_invalid", None)  # a store holds checked rows; what an ingest left out is in its ett_skipped
        return fleet_store.open_store(path, **args)
    return load_trace(path, **args)


def open_notebook(
    name: str,
    title: str,
    renderer: str,
    trace: str = "",
    *,
    scenario: str | None = None,
    jobs: int = 0,
    seed: int = 0,
    default: Any = None,
    store: str = "",
    **load: Any,
) -> NotebookTrace:
    """Select the renderer, load and check the notebook's trace (or open its ``store``), and start its scorecard (see
    the module's doc)."""
    charts.use_renderer(renderer)
    if store:
        if trace:
            raise InputError(Problem("store", None, "store", "give a trace or a store, not both"))
        if not fleet_store.is_store(store):
            raise InputError(
                Problem(str(store), None, "store", "not a fleet store (`ett ingest STORE SOURCE` builds one)")
            )
    path = str(store) if store else default_trace(trace, scenario, jobs, seed, default)
    t = open_trace(path, **load)
    shown = display_path(path)
    return NotebookTrace(path, shown, t, Scorecard(name, title, synthetic=t.synthetic, trace=shown))


__all__ = ["NotebookTrace", "default_trace", "open_notebook", "open_trace"]
