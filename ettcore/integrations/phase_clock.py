"""The phases of one attempt as a framework's hooks report them, written through the recorder.

A framework calls hooks at phase boundaries (set-up done, validation starts,
a checkpoint is saved ...).  :class:`PhaseClock` turns those calls into trace
spans with one rule: **one phase runs at a time**.  Phases nest as a stack: a
phase that starts while another runs (a checkpoint save during training, a
compilation during validation) pauses the one below, which resumes, as a new
span, when it ends.  So every instant of the attempt belongs to exactly the
phase that held the training process up, and no two spans overlap (the trace's
"last-ending span wins" rule never has to guess).

Training is the ``train`` phase with a data cursor (the framework's global
step).  :meth:`PhaseClock.step` is the per-step call and costs a clock read and
a compare; every ``progress_interval_s`` (at a step end) the train time so
far is written as a finished span, so a process killed outright (``SIGKILL``)
loses at most that interval and the trace's cursor is piecewise linear
between step ends.  When training stops by an exception, the train span ends
at the last completed step, and the unfinished step that follows, up to the
exception, is a train span whose cursor does not advance (replay: wasted
training).

Compilations are heard from TorchDynamo itself (``torch._dynamo.callback``:
its compile start/end callbacks, which also fire for a backward graph compiled
lazily at the first backward), so ``pt2_compile`` is measured where it
happens, inside the first step or inside validation, not guessed from step
times.

All times are epoch seconds on one clock (``time.time``).  Nothing here
raises into training: callers wrap their hooks (see
:class:`ettcore.integrations.process.Attempt`).
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ettcore.integrations.recorder import Recorder, _Span

TRAIN = "train"


@dataclass
class _Open:
    """A phase on the stack: its name and stage, and its open recorder span (not for ``train``)."""

    phase: str
    stage: str | None
    span: _Span | None = None


class PhaseClock:
    """One attempt's phases, as a stack of open phases; spans go to ``recorder``.

    ``recorder`` may be ``None`` (a rank that does not record): every call is
    then a cheap no-op.
    """

    def __init__(
        self, recorder: Recorder | None, *, progress_interval_s: float = 1.0, clock: Callable[[], float] = time.time
    ) -> None:
        self.rec = recorder
        self.interval = float(progress_interval_s)
        self.clock = clock
        self._stack: list[_Open] = []
        # train state: cursor now, time of the last step end, the train span written so far ends at _seg_t/_seg_c
        self.cursor: float | None = None
        self.t_step = 0.0
        self._seg_t = 0.0
        self._seg_c = 0.0
        self._in_train = False
        self._compile_ids: tuple[Any, Any] | None = None
        self.attempt: Any = None  # the Attempt that owns this timeline, if any
        self.ranks: Any = None  # this rank's last progress (ettcore.integrations.rank_progress), if kept

    # ------------------------------------------------------------------ state

    @property
    def top(self) -> str | None:
        """The phase running now (``None`` when nothing is open)."""
        return self._stack[-1].phase if self._stack else None

    def phases(self) -> list[str]:
        """Open phases, outermost first."""
        return [o.phase for o in self._stack]

    def is_open(self, phase: str) -> bool:
        return any(o.phase == phase for o in self._stack)

    def hand_over(self, recorder: Recorder | None) -> None:
        """Write to ``recorder`` from now on.  The spans open in the previous recorder stay open there (a conversion
        closes them at the attempt's end): the open phases let go of them."""
        self.rec = recorder
        for o in self._stack:
            o.span = None

    def drop_open(self) -> None:
        """Forget the open phases without writing anything (the process is ending; the conversion closes them)."""
        self._stack.clear()

    # ------------------------------------------------------------------ writing pieces

    def _write_train(self, end: float, cursor_end: float) -> None:
        if self.rec is not None and end > self._seg_t:
            self.rec.span(TRAIN, self._seg_t, end, cursor_start=self._seg_c, cursor_end=cursor_end)
        self._seg_t, self._seg_c = max(end, self._seg_t), cursor_end

    def _pause(self, o: _Open, t: float) -> None:
        if o.phase == TRAIN:
            self._write_train(t, self.cursor)
            self._in_train = False
        elif o.span is not None:
            o.span.close(t)
            o.span = None

    def _resume(self, o: _Open, t: float) -> None:
        if o.phase == TRAIN:
            self._seg_t, self._seg_c = t, self.cursor
            self._in_train = True
        elif self.rec is not None:
            o.span = self.rec.phase(o.phase, o.stage).open(t)

    # ------------------------------------------------------------------ phases

    def begin(self, phase: str, stage: str | None = None, t: float | None = None) -> float:
        """Start ``phase`` at ``t`` (default now), pausing the phase running until then; returns ``t``."""
        t = self.clock() if t is None else t
        if self._stack:
            self._pause(self._stack[-1], t)
        o = _Open(phase, stage)
        self._stack.append(o)
        self._resume(o, t)
        return t

    def end(self, phase: str, t: float | None = None) -> float | None:
        """End the innermost open ``phase`` at ``t`` (and any phase opened inside it); the one below resumes.

        Ending a phase that is not open does nothing (returns ``None``): hooks
        of some frameworks fire without their partner in unusual paths.
        """
        idx = next((i for i in range(len(self._stack) - 1, -1, -1) if self._stack[i].phase == phase), None)
        if idx is None:
            return None
        t = self.clock() if t is None else t
        self._pause(self._stack[-1], t)
        del self._stack[idx:]
        if self._stack:
            self._resume(self._stack[-1], t)
        return t

    def switch(self, phase: str, new_phase: str, new_stage: str | None = None, t: float | None = None) -> float:
        """End ``phase`` and start ``new_phase`` at the same instant (e.g. one init stage to the next)."""
        t = self.clock() if t is None else t
        self.end(phase, t)
        return self.begin(new_phase, new_stage, t)

    @contextmanager
    def phase(self, phase: str, stage: str | None = None) -> Iterator[None]:
        """``with timeline.phase("checkpoint_save"): ...`` (begin, and end even when the block raises)."""
        self.begin(phase, stage)
        try:
            yield
        finally:
            self.end(phase)

    def span(self, phase: str, start: float, end: float, stage: str | None = None) -> None:
        """A finished span measured elsewhere (e.g. process start to the callback's creation)."""
        if self.rec is not None and end > start:
            self.rec.span(phase, start, end, stage=stage)

    # ------------------------------------------------------------------ training

    def train_begin(self, cursor: float, t: float | None = None) -> float:
        """Training (re)starts at data cursor ``cursor`` (a restored checkpoint's step after a restart)."""
        self.cursor = cursor
        t = self.clock() if t is None else t
        self.t_step = t
        self.watch_compiles()
        return self.begin(TRAIN, None, t)

    def step(self, cursor: float) -> None:
        """A training step ended with the data cursor at ``cursor`` (the hot path)."""
        now = self.clock()
        self.cursor = cursor
        self.t_step = now
        if self.ranks is not None:
            self.ranks.step(cursor, now)
        if self._in_train and now - self._seg_t >= self.interval:
            self._write_train(now, cursor)

    def train_end(self, t: float | None = None) -> float | None:
        """Training ended normally (at ``t``, default now)."""
        return self.end(TRAIN, t)

    def last_boundary(self, t: float | None = None) -> float:
        """Where training last stood at a known point: the last step end, or its resumption after a phase."""
        t = self.clock() if t is None else t
        return min(max(self.t_step, self._seg_t), t) if self._in_train else t

    def retro(self, phase: str, stage: str | None = None, t: float | None = None) -> float:
        """A phase the framework reports only when it is over (Hugging Face's ``on_save``, ``on_evaluate``).

        It started at the last step end (or when training resumed after the
        previous phase, if later) and ended at ``t`` (now): the train span
        stops there, the phase is written, training resumes at ``t``.
        """
        t = self.clock() if t is None else t
        if not self._in_train:  # outside training its start is unknown: nothing is written
            return t
        start = self.last_boundary(t)
        self._write_train(start, self.cursor)
        self.span(phase, start, t, stage)
        self._seg_t, self._seg_c = t, self.cursor
        return t

    # ------------------------------------------------------------------ the end

    def stop(self, t: float | None = None, *, crashed: bool = False) -> float:
        """Close every open phase at ``t``.

        ``crashed``: training stopped by an exception or a signal, so the
        train span ends at the last completed step and the unfinished step up
        to ``t`` is written with a cursor that does not advance.
        """
        t = self.clock() if t is None else t
        if self._stack:  # only the innermost phase is running; the ones below were written up to their pause
            top = self._stack[-1]
            if top.phase == TRAIN and crashed and self._in_train:
                self._write_train(self.last_boundary(t), self.cursor)
                self._write_train(t, self.cursor)
            else:
                self._pause(top, t)
        self._stack.clear()
        self._in_train = False
        return t

    # ------------------------------------------------------------------ compilations

    def watch_compiles(self) -> bool:
        """Record TorchDynamo's compilations as ``pt2_compile`` spans (stage: what triggered them).

        Only once TorchDynamo is loaded (``torch.compile`` loads it; Lightning
        and Transformers load it on import), so a job that never compiles does
        not pay for importing it; :meth:`train_begin` looks again.  Returns
        whether the hooks are installed.
        """
        if self._compile_ids is not None or self.rec is None:
            return self._compile_ids is not None
        if "torch._dynamo" not in sys.modules:
            return False
        try:
            from torch._dynamo.callback import callback_handler
        except Exception:  # noqa: BLE001 - no PyTorch, or a build without Dynamo: nothing compiles
            return False

        def on_start(args: Any) -> None:
            try:
                trigger = getattr(getattr(args, "callback_trigger", None), "name", "dynamo").lower()
                self.begin("pt2_compile", trigger)
            except Exception as exc:  # noqa: BLE001
                self._hook_error(exc)

        def on_end(args: Any) -> None:
            try:
                self.end("pt2_compile")
            except Exception as exc:  # noqa: BLE001
                self._hook_error(exc)

        callback_handler.register_start_callback(on_start)
        callback_handler.register_end_callback(on_end)
        self._compile_ids = (on_start, on_end)
        return True

    def unwatch_compiles(self) -> None:
        if self._compile_ids is None:
            return
        try:
            from torch._dynamo.callback import callback_handler

            on_start, on_end = self._compile_ids
            if on_start in callback_handler.start_callbacks:
                callback_handler.remove_start_callback(on_start)
            if on_end in callback_handler.end_callbacks:
                callback_handler.remove_end_callback(on_end)
        finally:
            self._compile_ids = None

    def _hook_error(self, exc: BaseException) -> None:
        """An error inside a compile hook: counted by the recorder, never raised into the compiler."""
        if self.rec is not None:
            self.rec.fail(exc)
