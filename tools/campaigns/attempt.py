"""One attempt of the live training job, instrumented with the recorder (needs PyTorch).

Run as a process by :mod:`tools.campaigns.supervisor`::

    python -m tools.campaigns.attempt --conditions C.json --attempt N --work DIR --recorder DIR --spawn-t T

and as a Slurm batch job's program (:mod:`tools.campaigns.slurm_fleet`), where the
job id and the attempt come from Slurm's environment (the recorder picks up
``SLURM_JOB_ID`` and ``SLURM_RESTART_COUNT``)::

    python -m tools.campaigns.attempt --slurm --conditions C.json --work DIR --recorder DIR --spawn-t T

What it records (phases and stages of the trace spec):

- ``hardware_setup`` / ``process_launch``: from the supervisor's spawn time to
  this module's imports done, i.e. interpreter start and ``import torch`` (the
  nearest thing this single machine has to setting up a host);
- ``trainer_init`` stages ``device_init``, ``process_group_init`` (a real
  gloo process group of one rank), ``preproc_creation`` (dense-feature
  normalisation statistics over sample batches), ``train_module_creation``
  (model and optimizer), ``init_plugins`` (checkpoint manager, step log),
  ``pre_train``; ``data_warmup`` / ``get_first_batch_data`` (schema check,
  partition negotiation wait, first batches buffered);
- ``checkpoint_load`` (restarts; ``torch.distributed.checkpoint.load``);
- ``pt2_compile`` stages ``cache_load``, ``compile`` (first forward and
  backward through ``torch.compile``), ``cache_save``;
- ``train`` spans with the step counter as data cursor;
- ``checkpoint_save`` (stage ``sync``: ``dcp.save``; stage ``async``:
  waiting for the previous ``dcp.async_save`` and staging the next);
- ``shutdown`` / ``final_checkpoint`` and ``publish`` / ``export_model``.

Sequential init (baseline) runs the stages one after another and compiles on
the first real batch.  Overlapped init runs preprocessing and data warm-up in
one thread and plugin init in another, while the main thread builds the model,
loads the checkpoint and compiles on a synthetic fast batch.

The induced failure: after the step named in ``fail_at_steps`` for this
attempt, the process sends itself SIGKILL (no cleanup, no final records), so
the failure lands on an exact step.  Under Slurm, after a step of
``crash_at_steps`` not crashed at before, it exits with ``crash_exit`` (Slurm's
``RequeueExit`` requeues the job for that status).  Independently of the recorder the loop
writes a ground-truth step log (``steps-aNNNN.csv``: attempt, step, start,
end, one unbuffered write per step).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import tarfile
import threading
import time
from pathlib import Path

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402
from torch import nn  # noqa: E402
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict  # noqa: E402

from ettcore.integrations.recorder import Recorder  # noqa: E402
from tools.campaigns.conditions import RunConditions  # noqa: E402
from tools.campaigns.recsys import ClickData, ClickModel, ModelShape  # noqa: E402

T_IMPORTED = time.time()  # interpreter started and torch imported

CACHE_ARCHIVE = "compile-cache.tar"
MEGACACHE_MEMBER = "megacache.bin"
# Mega-Cache carries these inductor cache folders itself; the rest (compiled C++ kernels) goes into the archive.
_MEGACACHE_COVERS = {"fxgraph", "aotautograd", "locks"}


def checkpoint_dirs(root: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints (those whose ``.metadata`` was written), oldest first."""
    out = []
    for p in root.glob("step-*"):
        if (p / ".metadata").is_file():
            out.append((int(p.name.split("-")[1]), p))
    return sorted(out)


class Attempt:
    """State and stages of one attempt."""

    def __init__(self, cond: RunConditions, attempt: int, work: Path, rec: Recorder):
        self.c = cond
        self.attempt = attempt
        self.work = work
        self.rec = rec
        self.shape = ModelShape(tables=cond.tables, rows=cond.rows, dim=cond.dim, batch=cond.batch)
        self.ckpt_root = work / "checkpoints"
        self.ckpt_root.mkdir(parents=True, exist_ok=True)
        found = checkpoint_dirs(self.ckpt_root)
        self.resume = found[-1] if found else None
        self.start_step = self.resume[0] if self.resume else 0
        self.fail_at = cond.fail_at_steps[attempt] if attempt < len(cond.fail_at_steps) else None
        self.crash_at = {s for s in cond.crash_at_steps if not (work / f"crashed-at-{s}").exists()}
        self.pending = None  # async save future
        self.buffer: dict[int, tuple] = {}
        self.losses: list[float] = []

    # ---- trainer init stages
    def device_init(self) -> None:
        torch.set_num_threads(self.c.threads)
        torch.manual_seed(self.c.seed)

    def process_group_init(self) -> None:
        store = self.work / f"pg-store-a{self.attempt}"
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)

    def preproc_creation(self) -> None:
        self.data = ClickData(self.shape, seed=self.c.seed)
        sample = torch.cat([self.data.batch(-1 - i)[0] for i in range(32)])
        self.mean, self.std = sample.mean(0), sample.std(0) + 1e-6

    def train_module_creation(self) -> None:
        torch.manual_seed(self.c.seed)
        self.model = ClickModel(self.shape)
        self.opt = torch.optim.Adagrad(self.model.parameters(), lr=0.05)
        self.lossf = nn.BCEWithLogitsLoss()

    def init_plugins(self) -> None:
        self.steplog = os.open(
            self.work / f"steps-a{self.attempt:04d}.csv", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
        )

    def data_warmup(self) -> None:
        schema = self.data.schema()
        dense, idx, _, label = self.data.batch(self.start_step)
        if dense.shape[1] != schema["dense"][1] or idx.shape[0] != schema["sparse"][1] or label.dtype != torch.float32:
            raise RuntimeError("batch does not match the feature schema")
        time.sleep(self.c.negotiation_s)  # partition negotiation: a stand-in for a remote service's latency
        for i in range(self.start_step, self.start_step + self.c.warmup_batches):
            self.buffer[i] = self.data.batch(i)

    def pre_train(self) -> None:
        self.model.train()
        self.opt.zero_grad(set_to_none=True)

    # ---- checkpoints
    def state(self, step: int) -> dict:
        model_sd, optim_sd = get_state_dict(self.model, self.opt)
        return {"model": model_sd, "optim": optim_sd, "step": step}

    def checkpoint_load(self) -> None:
        step, path = self.resume
        sd = self.state(0)
        dcp.load(sd, checkpoint_id=str(path))
        set_state_dict(self.model, self.opt, model_state_dict=sd["model"], optim_state_dict=sd["optim"])
        if sd["step"] != step:
            raise RuntimeError(f"checkpoint {path} holds step {sd['step']}, expected {step}")

    def _prune(self) -> None:
        for _, path in checkpoint_dirs(self.ckpt_root)[:-2]:
            shutil.rmtree(path, ignore_errors=True)

    def save(self, step: int, *, asynchronous: bool) -> None:
        path = self.ckpt_root / f"step-{step:07d}"
        if self.pending is not None:
            self.pending.result()
            self.pending = None
        self._prune()
        if asynchronous:
            self.pending = dcp.async_save(self.state(step), checkpoint_id=str(path))
        else:
            dcp.save(self.state(step), checkpoint_id=str(path))

    # ---- compile
    def compile(self, batch: tuple, mean: torch.Tensor, std: torch.Tensor) -> None:
        cache_dir = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
        archive = Path(self.c.compile_cache_path) if self.c.compile_cache_path else self.work / CACHE_ARCHIVE
        use_cache = self.c.compile_cache == "megacache"
        warm = use_cache and archive.is_file()
        if warm:
            with self.rec.phase("pt2_compile", stage="cache_load"):
                with tarfile.open(archive) as tar:
                    mega = tar.extractfile(MEGACACHE_MEMBER).read()
                    members = [m for m in tar.getmembers() if m.name != MEGACACHE_MEMBER]
                    tar.extractall(cache_dir, members=members, filter="data")
                torch.compiler.load_cache_artifacts(mega)
        with self.rec.phase("pt2_compile", stage="compile"):
            self.cmodel = torch.compile(self.model)
            dense, idx, off, label = batch
            loss = self.lossf(self.cmodel((dense - mean) / std, idx, off), label)
            loss.backward()
            self.opt.zero_grad(set_to_none=True)
        if use_cache and not warm:
            with self.rec.phase("pt2_compile", stage="cache_save"):
                art = torch.compiler.save_cache_artifacts()
                if art is None:
                    raise RuntimeError("torch.compiler.save_cache_artifacts returned nothing")
                tmp = archive.with_name(archive.name + f".tmp{os.getpid()}")
                with tarfile.open(tmp, "w") as tar:
                    info = tarfile.TarInfo(MEGACACHE_MEMBER)
                    info.size = len(art[0])
                    tar.addfile(info, io.BytesIO(art[0]))
                    for p in sorted(cache_dir.iterdir()):
                        if p.name not in _MEGACACHE_COVERS:
                            tar.add(p, arcname=p.name)
                os.replace(tmp, archive)

    # ---- training
    def batch(self, i: int) -> tuple:
        b = self.buffer.pop(i, None)
        return b if b is not None else self.data.batch(i)

    def train(self) -> None:
        c, rec = self.c, self.rec
        step = self.start_step
        span = rec.train_span(step).__enter__()
        while step < c.steps:
            t0 = time.time()
            dense, idx, off, label = self.batch(step)
            self.opt.zero_grad(set_to_none=True)
            loss = self.lossf(self.cmodel((dense - self.mean) / self.std, idx, off), label)
            loss.backward()
            self.opt.step()
            step += 1
            t1 = time.time()
            os.write(self.steplog, f"{self.attempt},{step},{t0:.6f},{t1:.6f}\n".encode())
            span.advance(step)
            self.losses.append(float(loss.detach()))
            if step == self.fail_at:
                os.kill(os.getpid(), signal.SIGKILL)  # the induced failure
            if step in self.crash_at:
                os.close(os.open(self.work / f"crashed-at-{step}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                os._exit(c.crash_exit)  # the induced crash, requeued by the scheduler
            if step % c.checkpoint_every == 0 and step < c.steps:
                span.close()
                with rec.phase("checkpoint_save", stage="async" if c.async_checkpoint else "sync"):
                    self.save(step, asynchronous=c.async_checkpoint)
                span = rec.train_span(step).__enter__()
        span.close()
        self.final_step = step

    def shutdown(self) -> None:
        with self.rec.phase("shutdown", stage="final_checkpoint"):
            self.save(self.final_step, asynchronous=False)
        with self.rec.phase("publish", stage="export_model"):
            torch.save(self.model.state_dict(), self.work / "published-model.pt")
        dist.destroy_process_group()


def run(cond: RunConditions, attempt: int | None, work: Path, recorder_dir: Path, spawn_t: float) -> int:
    """Run one attempt; ``attempt=None``: inside a Slurm job, whose environment gives the job id and attempt."""
    under_slurm = attempt is None
    rec = Recorder(
        recorder_dir,
        None if under_slurm else cond.job_id,
        attempt,
        writer="trainer",
        progress_interval_s=cond.progress_interval_s,
    )
    attempt = rec.attempt
    if under_slurm:  # no supervisor here to describe the job
        from tools.campaigns.supervisor import MODEL_NAME

        rec.job(model=MODEL_NAME, gpus=1, variant=cond.variant, device="cpu", plan_job=cond.job_id)
    rec.span("hardware_setup", spawn_t, max(T_IMPORTED, spawn_t), stage="process_launch")
    a = Attempt(cond, attempt, work, rec)
    init = "trainer_init"
    with rec.phase(init, stage="device_init"):
        a.device_init()
    with rec.phase(init, stage="process_group_init"):
        a.process_group_init()
    errors: list[BaseException] = []

    def branch(fn):
        def go() -> None:
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
                errors.append(exc)

        return go

    def data_branch() -> None:
        with rec.phase(init, stage="preproc_creation"):
            a.preproc_creation()
        with rec.phase("data_warmup", stage="get_first_batch_data"):
            a.data_warmup()

    def plugins() -> None:
        with rec.phase(init, stage="init_plugins"):
            a.init_plugins()

    if cond.overlapped_init:
        threads = [threading.Thread(target=branch(data_branch)), threading.Thread(target=branch(plugins))]
        for t in threads:
            t.start()
        with rec.phase(init, stage="train_module_creation"):
            a.train_module_creation()
        if a.resume:
            with rec.phase("checkpoint_load"):
                a.checkpoint_load()
        # the synthetic fast batch needs only the model, not the data branch
        a.compile(ClickData.fast_batch_of(a.shape), torch.zeros(a.shape.n_dense), torch.ones(a.shape.n_dense))
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    else:
        data_branch()
        with rec.phase(init, stage="train_module_creation"):
            a.train_module_creation()
        plugins()
        if a.resume:
            with rec.phase("checkpoint_load"):
                a.checkpoint_load()
        a.compile(a.buffer.get(a.start_step) or a.data.batch(a.start_step), a.mean, a.std)
    with rec.phase(init, stage="pre_train"):
        a.pre_train()
    a.train()
    a.shutdown()
    k = min(100, len(a.losses))
    result = {
        "attempt": attempt,
        "start_step": a.start_step,
        "final_step": a.final_step,
        "loss_first": sum(a.losses[:k]) / max(k, 1),
        "loss_last": sum(a.losses[-k:]) / max(k, 1),
        "recorder_errors": rec.errors,
    }
    (work / f"result-a{attempt:04d}.json").write_text(json.dumps(result) + "\n")
    rec.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conditions", required=True, type=Path)
    ap.add_argument("--attempt", type=int, default=None, help="attempt number (not with --slurm)")
    ap.add_argument(
        "--slurm", action="store_true", help="inside a Slurm batch job: job id and attempt from its environment"
    )
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--recorder", required=True, type=Path)
    ap.add_argument("--spawn-t", required=True, type=float)
    args = ap.parse_args(argv)
    if args.slurm == (args.attempt is not None):
        ap.error("give exactly one of --attempt N and --slurm")
    cond = RunConditions.from_dict(json.loads(args.conditions.read_text()))
    return run(cond, args.attempt, args.work, args.recorder, args.spawn_t)


if __name__ == "__main__":
    raise SystemExit(main())
