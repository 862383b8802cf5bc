"""Each rank's work and wait per window (:mod:`ettcore.integrations.rank_timing`), on a fake clock.

The hook is given real ``torch.futures.Future`` objects completed by the test at known instants, as gloo's work
completes DDP's all-reduce futures; the windows the writer appends must hold those instants' differences.
Needs the ``torch`` extra.
"""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.torch]
torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]' (package torch)")

from ettcore.integrations.rank_timing import RANK_TIMING_DIR, RankTiming, rank_timing_name  # noqa: E402


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _windows(run) -> list[dict]:
    path = run / RANK_TIMING_DIR / rank_timing_name("j", 1)
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_wait_is_first_bucket_to_last_completion_and_work_the_rest(tmp_path):
    clock = Clock(100.0)
    rt = RankTiming(tmp_path, "j", 0, 1, node="host-b", clock=clock, start_thread=False)
    pending: list = []

    def inner(state, bucket):  # the job's own hook: its future completes later
        fut = torch.futures.Future()
        pending.append(fut)
        return fut

    hook = rt.comm_hook(inner)
    rt.begin()
    # step 1: 0.3 s of compute, buckets ready at 100.3 and 100.35, their all-reduce done at 100.5 and 100.6, end 100.7
    clock.t = 100.3
    f1 = hook(None, None)
    clock.t = 100.35
    f2 = hook(None, None)
    clock.t = 100.5
    pending[0].set_result([torch.zeros(1)])
    clock.t = 100.6
    pending[1].set_result([torch.zeros(1)])
    assert f1.done() and f2.done() and f1.value()[0].shape == (1,)  # the inner hook's value passes through
    clock.t = 100.7
    rt.step()
    # step 2: no all-reduce (e.g. gradient accumulation): all work
    clock.t = 101.0
    rt.step()
    rt.flush()
    # step 3, in a second window
    clock.t = 101.2
    hook(None, None)
    pending[2].set_result([torch.zeros(1)])  # done at once: the other ranks were there first
    clock.t = 101.5
    rt.step()
    rt.close()
    (w1, w2) = _windows(tmp_path)
    assert w1["node"] == "host-b" and w1["rank"] == 1 and w1["attempt"] == 0
    assert (w1["start"], w1["end"], w1["steps"]) == (100.0, 101.0, 2)
    assert w1["wait_s"] == pytest.approx(0.3)  # 100.3 -> 100.6
    assert w1["work_s"] == pytest.approx(0.7)  # 1.0 s of steps less the wait
    assert (w2["start"], w2["end"], w2["steps"]) == (101.0, 101.5, 1)
    assert w2["wait_s"] == pytest.approx(0.0) and w2["work_s"] == pytest.approx(0.5)


def test_an_empty_window_writes_nothing_and_a_write_error_is_counted(tmp_path):
    rt = RankTiming(tmp_path, "j", 0, 1, clock=Clock(5.0), start_thread=False)
    rt.flush()
    assert not (tmp_path / RANK_TIMING_DIR).exists()
    (tmp_path / RANK_TIMING_DIR).write_text("a file where the folder goes")
    rt.begin()
    rt.step()
    rt.flush()
    assert rt.errors == 1
