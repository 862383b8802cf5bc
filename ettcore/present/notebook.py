"""The one-call preamble of a notebook: the chart renderer, the trace (a user's, or the notebook's default), the
loaded and checked trace and the notebook's scorecard.

Every notebook that reads a trace starts with::

    nb = open_notebook("02-time-breakdown", "II-A: time breakdown and restart bound", renderer, trace,
                       scenario="representative", jobs=jobs, seed=seed)
    t, card, synthetic = nb.trace, nb.card, nb.synthetic
    print(nb.heading)

``trace`` is the notebook's ``trace`` parameter: empty means the notebook's default, a cached synthetic scenario
trace (:func:`ettcore.synthetic.traces.scenario_trace`) or a bundled folder (``default=``).  Keyword arguments the
loader takes (``mapping``, ``as_of``, ``skip_invalid``, ``since``, ``until``, ``exclude``) are passed on, with empty
notebook parameters (``""``) meaning "not given".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    def heading(self) -> str:
        """``trace: <path relative to the project>``, and ``(SYNTHETIC)`` for a synthetic trace."""
        return f"trace: {self.shown}" + ("  (SYNTHETIC)" if self.synthetic else "")


def default_trace(trace: str, scenario: str | None = None, jobs: int = 0, seed: int = 0, default: Any = None) -> str:
    """The trace a notebook reads: ``trace`` when given, else the cached ``scenario`` trace, else ``default``."""
    if trace:
        return str(trace)
    if scenario is not None:
        return str(scenario_trace(scenario, jobs, seed))
    if default is None:
        raise ValueError("a notebook needs a trace parameter, a scenario or a default trace")
    return str(default)


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
    **load: Any,
) -> NotebookTrace:
    """Select the renderer, load and check the notebook's trace, and start its scorecard (see the module's doc)."""
    charts.use_renderer(renderer)
    path = default_trace(trace, scenario, jobs, seed, default)
    t = load_trace(path, **{k: (v if v != "" else None) for k, v in load.items()})
    shown = display_path(path)
    return NotebookTrace(path, shown, t, Scorecard(name, title, synthetic=t.synthetic, trace=shown))


__all__ = ["NotebookTrace", "default_trace", "open_notebook"]
