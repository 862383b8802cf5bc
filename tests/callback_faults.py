"""Faults injected into the framework callbacks by the integration tests: a failing disk and a buggy per-step call."""

from __future__ import annotations

from typing import Any


def break_the_callback(monkeypatch: Any) -> None:
    """The disk fails after a few records, and the timeline's per-step call has a bug."""
    from ettcore.integrations.phase_clock import PhaseClock
    from ettcore.integrations.recorder import Recorder

    calls = {"n": 0}
    real_emit = Recorder._emit

    def flaky_emit(self, record):
        calls["n"] += 1
        if calls["n"] > 6:
            raise OSError(28, "No space left on device")
        return real_emit(self, record)

    def broken_step(self, cursor):
        raise RuntimeError("a bug in the callback")

    monkeypatch.setattr(Recorder, "_emit", flaky_emit)
    monkeypatch.setattr(PhaseClock, "step", broken_step)


def recorder_warnings(caught: list) -> list:
    from ettcore.integrations.recorder import RecorderWarning

    return [w for w in caught if issubclass(w.category, RecorderWarning)]
