"""Import paths from before the package layout keep working, each with a DeprecationWarning naming the new path."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from ettcore._moved import MOVED_MODULES


@pytest.mark.parametrize("old, new", sorted(MOVED_MODULES.items()))
def test_old_module_path_warns_and_gives_the_new_module(old, new):
    """In a fresh interpreter (a module imported once is not imported again): the warning names the new path, and
    every public name of the new module is reachable through the old one."""
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        f"try:\n    importlib.import_module({old!r})\nexcept DeprecationWarning as w:\n    print(w)\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        f"old = importlib.import_module({old!r}); new = importlib.import_module({new!r})\n"
        "names = [n for n in dir(new) if not n.startswith('_')]\n"
        "print(all(getattr(old, n) is getattr(new, n) for n in names), len(names))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    warning, same = out.stdout.splitlines()
    assert warning == f"{old} moved to {new}; import it from there"
    assert same.split()[0] == "True" and int(same.split()[1]) > 0


def test_names_that_left_a_module_are_served_from_where_they_went():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from ettcore.integrations.timeline import Timeline
        from ettcore.recorder import Recorder, convert
    from ettcore.importers.recorder import convert as new_convert
    from ettcore.integrations.phase_clock import PhaseClock
    from ettcore.integrations.recorder import Recorder as NewRecorder

    assert convert is new_convert and Recorder is NewRecorder and Timeline is PhaseClock
    said = {str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)}
    assert "ettcore.recorder.convert moved to ettcore.importers.recorder.convert; import it from there" in said
    assert (
        "ettcore.integrations.timeline.Timeline moved to ettcore.integrations.phase_clock.PhaseClock; "
        "import it from there" in said
    )


def test_the_public_api_is_at_the_top_and_the_old_error_name_is_the_new_type():
    import ettcore
    from ettcore.errors import InputError, TraceError
    from ettcore.metric import fleet_summary, job_summary, trend
    from ettcore.trace import Trace, load_trace

    assert TraceError is InputError and ettcore.InputError is InputError and ettcore.TraceError is InputError
    assert (ettcore.load_trace, ettcore.Trace) == (load_trace, Trace)
    assert (ettcore.job_summary, ettcore.fleet_summary, ettcore.trend) == (job_summary, fleet_summary, trend)
    with pytest.raises(AttributeError):
        _ = ettcore.no_such_name


def test_importing_ettcore_loads_no_data_library():
    """The in-job recorder imports ettcore: the package itself must not pull DuckDB or Polars into a training job."""
    code = "import sys, ettcore.integrations.recorder; print(sorted({'duckdb', 'polars'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_unknown_old_looking_path_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ettcore.no_such_module")
