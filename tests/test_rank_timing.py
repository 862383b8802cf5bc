"""Each rank's work and wait per window (:mod:`ettcore.integrations.rank_timing`), on a fake clock.

The hook is given real ``torch.futures.Future`` objects completed by the test at known instants, as gloo's work
completes DDP's all-reduce futures; the windows the writer appends must hold those instants' differences.
:func:`~ettcore.integrations.rank_timing.attach` (how the framework callbacks put the hook on a model) is tested on
real ``DistributedDataParallel`` models in a one-process gloo group.  Needs the ``torch`` extra.
"""

from __future__ import annotations

import json
import warnings

import pytest
from conftest import needs  # tests/conftest.py
from ddp_timing import one_process_group

from ettcore.integrations.rank_timing import RANK_TIMING_DIR, RankTiming, attach, rank_timing_name
from ettcore.integrations.recorder import RecorderWarning

pytestmark = [pytest.mark.torch, needs("torch", extra="torch")]


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _windows(run) -> list[dict]:
    path = run / RANK_TIMING_DIR / rank_timing_name("j", 1)
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_wait_is_first_bucket_to_last_completion_and_work_the_rest(tmp_path):
    import torch

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


@pytest.fixture
def one_group(tmp_path):
    with one_process_group(tmp_path):
        yield


def _ddp_step(ddp) -> None:
    import torch

    ddp(torch.ones(2, 4)).sum().backward()


def test_attach_wraps_ddps_default_all_reduce_or_the_hook_the_framework_registered(tmp_path, one_group):
    import torch
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    from torch.nn.parallel import DistributedDataParallel as DDP

    calls = []

    def own(state, bucket):  # the job's own hook
        calls.append(1)
        return allreduce_hook(state, bucket)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning on either path
        # no hook on the model: the timing hook goes on it, around DDP's default all-reduce
        rt = RankTiming(tmp_path / "a", "j", 0, 1, start_thread=False)
        plain = DDP(torch.nn.Linear(4, 1))
        assert attach(plain, rt)
        rt.begin()
        _ddp_step(plain)
        rt.step()
        rt.close()
        assert len(plain._comm_hooks) == 1
        (w,) = _windows(tmp_path / "a")
        assert w["steps"] == 1 and w["wait_s"] > 0  # the all-reduce was timed
        # the framework registered the timing hook it was given (around the job's own): on, nothing registered twice
        rt = RankTiming(tmp_path / "b", "j", 0, 1, start_thread=False)
        given = rt.comm_hook(own)
        model = DDP(torch.nn.Linear(4, 1))
        model.register_comm_hook(None, given)
        assert attach(model, rt, given)
        _ddp_step(model)
        assert calls == [1] and len(model._comm_hooks) == 1


def test_attach_never_replaces_a_hook_the_model_already_has(tmp_path, one_group):
    import torch
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    from torch.nn.parallel import DistributedDataParallel as DDP

    calls = []

    def own(state, bucket):
        calls.append(1)
        return allreduce_hook(state, bucket)

    rt = RankTiming(tmp_path, "j", 0, 1, start_thread=False)
    model = DDP(torch.nn.Linear(4, 1))
    model.register_comm_hook(None, own)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not attach(model, rt, rt.comm_hook(own))  # handed to a framework that did not register it
    (w,) = [c for c in caught if issubclass(c.category, RecorderWarning)]
    assert "rank timing off" in str(w.message) and "own" in str(w.message)  # one line that names the hook
    _ddp_step(model)
    assert calls == [1] and model._comm_hooks == [(own, None)]  # the job's hook still runs, alone
