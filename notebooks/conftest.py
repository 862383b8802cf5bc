"""The nbval run of the notebooks (``make test``) keeps what it executed, so they execute once in the suite.

nbval executes each committed notebook cell by cell and compares every output with the committed one (sanitised,
strict).  When ``$ETT_EXECUTED_NOTEBOOKS`` names a folder, this plugin also writes there, for each notebook whose
every code cell ran, the notebook with the outputs this run produced (``NAME.ipynb``) and its scorecard
(``NAME.scorecard.json``, saved by the notebook's own ``card`` in the same kernel before it stops).
``tests/test_notebooks.py`` then checks those, byte for byte against the committed copy after
:func:`ettcore.present.report.canonical`, and the scorecard against the paper's numbers, instead of running the
notebook again; without the folder (or for a notebook missing from it) it runs the notebook itself with papermill.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

OUT = os.environ.get("ETT_EXECUTED_NOTEBOOKS")
_incomplete: set[str] = set()  # notebooks with a cell that raised
_ran: dict[str, int] = {}  # notebook -> code cells whose outputs this run kept


def _is_nbval_cell(item) -> bool:
    return hasattr(item, "test_outputs") and hasattr(item, "cell") and hasattr(item.parent, "nb")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    yield
    if OUT and call.when == "call" and _is_nbval_cell(item):
        if item.test_outputs is None:  # the cell raised before its outputs were gathered
            _incomplete.add(str(item.parent.path))
        else:
            item.cell.outputs = item.test_outputs  # after nbval compared them with the committed outputs
            _ran[str(item.parent.path)] = _ran.get(str(item.parent.path), 0) + 1


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """After a notebook's last cell, while its kernel still runs: save its scorecard and the executed notebook."""
    if not OUT or not _is_nbval_cell(item) or (nextitem is not None and nextitem.parent is item.parent):
        return
    import nbformat

    notebook = item.parent
    path = Path(notebook.path)
    code_cells = sum(c.cell_type == "code" for c in notebook.nb.cells)
    if str(path) in _incomplete or _ran.get(str(path)) != code_cells:
        return  # not every cell ran here: tests/test_notebooks.py runs this notebook itself
    out = Path(OUT)
    out.mkdir(parents=True, exist_ok=True)
    kernel = notebook.kernel
    msg_id = kernel.execute_cell_input(f"card.save({str(out)!r})", allow_stdin=False)
    kernel.await_idle(msg_id, 120)
    nbformat.write(notebook.nb, str(out / path.name))
