"""Scenario traces generated on demand, cached in ``data/generated/`` (git-ignored).

The notebooks' default data are synthetic traces generated from the bundled
scenario files (``data/scenarios/<name>.yaml``) by :mod:`ettcore.synthetic.generator`.
A trace is identified by scenario, job count and seed and stored at
``data/generated/<scenario>-n<jobs>-s<seed>`` (the path ``ett synth`` uses), so
the same request returns the same bytes.  A file lock serialises generation
when several notebooks ask for the same trace at once (parallel reports,
parallel tests); generation itself writes under a temporary name and renames.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

from ettcore.config import GENERATED_DIR, PROJECT_ROOT


def trace_path(scenario: str, jobs: int, seed: int = 0) -> Path:
    """Where the trace of ``scenario`` with ``jobs`` jobs and ``seed`` lives (generated or not)."""
    return GENERATED_DIR / f"{scenario}-n{int(jobs)}-s{int(seed)}"


def scenario_trace(scenario: str, jobs: int, seed: int = 0) -> Path:
    """Path of the generated trace, generating it first if it is not there yet."""
    from ettcore.synthetic import generator  # imported lazily: generation is only needed on a cache miss

    out = trace_path(scenario, jobs, seed)
    if (out / "trace.json").exists():
        return out
    GENERATED_DIR.mkdir(parents=True, exist_ok=True)
    with open(GENERATED_DIR / f".lock-{out.name}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (out / "trace.json").exists():
                generator.generate(scenario, out, n_jobs=int(jobs), seed=int(seed))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out


def display_path(path: str | Path) -> str:
    """A path as shown in notebook outputs: relative to the project root when inside it (stable across clones)."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(PROJECT_ROOT))
    except ValueError:
        return str(p)


def change_exclusion(scenario: str, change: str):
    """The period of a scenario's dated change (``changes[].from`` .. ``until``) as an exclusion window.

    For the notebooks: a known incident of a SYNTHETIC fleet (the ``fleet`` scenario's ``preemption_episode``) left
    out of the measurement, to show ETT% with and without it.  The dates come from the scenario file.
    """
    from ettcore.errors import InputError, Problem
    from ettcore.synthetic.scenario import load_scenario
    from ettcore.trace.window import Exclusion

    sc = load_scenario(scenario)
    found = next((c for c in sc.changes if c.name == change), None)
    if found is None or found.until is None:
        names = ", ".join(c.name for c in sc.changes if c.until is not None)
        raise InputError(
            Problem(str(sc.path), None, "changes", f"no dated change {change!r} with an end; changes with one: {names}")
        )
    start = min(found.starts.values())
    return Exclusion(
        int(start.timestamp() * 1000),
        int(found.until.timestamp() * 1000),
        f"known incident: {change} ({sc.name} scenario)",
        file=str(sc.path),
    )
