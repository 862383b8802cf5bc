"""A real mini-fleet on a real Slurm cluster: the demo model's jobs queued, preempted, crashed, requeued.

Run (needs the ``torch`` extra and the project's Slurm cluster, ``tools/slurm/start.sh``;
``make slurm-fleet`` does both, on a fresh cluster of its own)::

    SLURM_CONF=... .venv/bin/python -m tools.campaigns.slurm_fleet          # about an hour on 2 cores
    .venv/bin/python -m tools.campaigns.slurm_fleet --rebuild   # re-import the bundled sacct + recorder files only

What it does (:func:`plan` lists the jobs, :func:`run_campaign` submits them and
injects the events):

- submits every low-priority job at once (partition ``low``, one CPU and one
  ``gres/gpu`` each), so they queue for the node's slots; baseline and optimized
  jobs alternate in the queue, so both see the same queue, preemptions and load;
- a share crash at a chosen step with the exit status listed in the cluster's
  ``RequeueExit``: Slurm requeues them (state ``REQUEUED``) and they resume from
  their last checkpoint; two exit with status 1 (``FAILED``, not requeued);
- high-priority jobs (partition ``high``) arrive later and preempt running
  low-priority ones (``PreemptMode=REQUEUE``: ``PREEMPTED``, then requeued);
- the node is set ``DOWN`` once (``scontrol update``), its jobs get
  ``NODE_FAIL`` and are requeued, and it is set back with ``State=RESUME``;
- one job is cancelled while it runs, one runs into its time limit (``TIMEOUT``),
  and a job array of four tasks runs beside the rest;
- exports the accounting with the README's two ``sacct`` commands, copies the
  recorder files, imports both into one trace (``ett import slurm --recorder``)
  and writes ``campaign.json`` (plan, injected events with times, machine, Slurm
  version, configuration) into ``data/slurm-fleet``.

Every training job is :mod:`tools.campaigns.attempt` (``--slurm``), the live job's
instrumented PyTorch loop, with one intra-op thread.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ettcore.atomic import atomic_path
from ettcore.bundled import SLURM_FLEET
from ettcore.importers.slurm import export_commands
from tools.campaigns import CHECKOUT
from tools.campaigns.conditions import BASELINE, OPTIMIZED, RunConditions

COMMAND = "make slurm-fleet"
REQUEUE_EXIT = 42  # tools/slurm/start.sh's default RequeueExit


@dataclass(frozen=True)
class JobPlan:
    """One submission: what runs, where, and what happens to it."""

    name: str  # the plan's name for the job (the recorder's plan_job label)
    variant: str  # baseline | optimized
    partition: str = "low"
    steps: int = 600
    crash_at_steps: tuple[int, ...] = ()
    crash_exit: int = REQUEUE_EXIT
    time_limit_min: int = 15
    submit_at_s: float = 0.0  # seconds after the campaign starts
    cancel_after_running_s: float | None = None
    array_tasks: int = 0  # > 0: a job array; task i runs plan name-i
    task_variants: tuple[str, ...] = ()  # an array's variant per task (default: ``variant`` for all)
    role: str = "training"  # training | urgent | sweep | doomed | cancelled | timeout

    def variant_of(self, task: int | None) -> str:
        return self.task_variants[task] if task is not None and self.task_variants else self.variant

    def conditions(self, work: Path, task: int | None = None) -> RunConditions:
        """The live job's baseline or optimized conditions with this plan's steps and crashes.

        Optimized jobs share one compile-cache archive (the first to compile saves it, later
        ones load it), as a fleet's compile cache serves every job of a model.
        """
        variant = self.variant_of(task)
        base = BASELINE if variant == "baseline" else OPTIMIZED
        name = self.name if task is None else f"{self.name}-{task}"
        return replace(
            base,
            job_id=name,
            steps=self.steps,
            checkpoint_every=100,
            fail_at_steps=(),
            crash_at_steps=self.crash_at_steps,
            crash_exit=self.crash_exit,
            progress_interval_s=1.0,
            compile_cache_path=str(work / "compile-cache" / "click-dlrm-small.tar") if variant == "optimized" else None,
        )


def plan() -> list[JobPlan]:
    """The campaign: 46 training jobs (baseline and optimized in equal numbers, alternating in the queue)."""
    jobs: list[JobPlan] = []
    for i in range(16):  # the bulk: low priority, submitted at once; five pairs crash once at step 350
        crash = (350,) if i % 3 == 1 else ()
        for v in ("baseline", "optimized"):
            jobs.append(JobPlan(f"train-{i:02d}-{v[0]}", v, crash_at_steps=crash))
    for i, v in enumerate(("baseline", "optimized")):
        jobs.append(JobPlan(f"doomed-{v[0]}", v, steps=500, crash_at_steps=(200,), crash_exit=1, role="doomed"))
    jobs.append(JobPlan("cancel-b", "baseline", cancel_after_running_s=60.0, role="cancelled"))
    jobs.append(JobPlan("timeout-o", "optimized", steps=20_000, time_limit_min=2, role="timeout"))
    jobs.append(
        JobPlan(
            "sweep",
            "mixed",
            steps=400,
            array_tasks=4,
            role="sweep",
            task_variants=("baseline", "baseline", "optimized", "optimized"),
        )
    )
    for i, at in enumerate((150, 330, 540, 780, 1020, 1260)):  # urgent work arriving later: preempts low jobs
        v = ("baseline", "optimized")[i % 2]
        jobs.append(JobPlan(f"urgent-{i}-{v[0]}", v, partition="high", steps=300, submit_at_s=at, role="urgent"))
    return jobs


NODE_FAILURE_AT_S = 420.0  # the node goes DOWN this long after the start ...
NODE_DOWN_FOR_S = 30.0  # ... and comes back with State=RESUME after this


def _script(p: JobPlan, work: Path, recorder: Path, python: str) -> str:
    name = f"{p.name}-$SLURM_ARRAY_TASK_ID" if p.array_tasks else p.name
    cond = work / "plans" / (f"{p.name}-${{SLURM_ARRAY_TASK_ID}}.json" if p.array_tasks else f"{p.name}.json")
    job_work = work / "jobs" / name
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name=click-{'sweep' if p.array_tasks else p.variant}",
        f"#SBATCH --partition={p.partition}",
        "#SBATCH --cpus-per-task=1",
        "#SBATCH --gres=gpu:1",
        f"#SBATCH --time={p.time_limit_min}",
        f"#SBATCH --output={work}/logs/{p.name}-%A_%a-%j.out"
        if p.array_tasks
        else f"#SBATCH --output={work}/logs/{p.name}-%j.out",
        "#SBATCH --open-mode=append",
        f"#SBATCH --account={'production' if p.partition == 'high' else 'research'}",
    ]
    if p.array_tasks:
        lines.append(f"#SBATCH --array=0-{p.array_tasks - 1}")
    lines += [
        "SPAWN_T=$(date +%s.%N)",
        "export OMP_NUM_THREADS=1",
        f'export PYTHONPATH="{CHECKOUT}${{PYTHONPATH:+:$PYTHONPATH}}"',
        f'export TORCHINDUCTOR_CACHE_DIR="{job_work}/inductor-$SLURM_JOB_ID-${{SLURM_RESTART_COUNT:-0}}"',
        'mkdir -p "$TORCHINDUCTOR_CACHE_DIR"',
        f'echo "run ${{SLURM_RESTART_COUNT:-0}} of $SLURM_JOB_ID ({name}) on $SLURMD_NODENAME at $SPAWN_T"',
        f'exec {python} -m tools.campaigns.attempt --slurm --conditions "{cond}" --work "{job_work}" '
        f'--recorder "{recorder}" --spawn-t "$SPAWN_T"',
    ]
    return "\n".join(lines) + "\n"


def _run(cmd: list[str], **kw) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def _squeue() -> dict[str, tuple[str, float]]:
    """Every job the controller still lists (the campaign's cluster is its own): JobID -> (state, seconds run)."""
    out = _run(["squeue", "-h", "-o", "%i|%T|%M"])
    jobs = {}
    for line in out.splitlines():
        jid, state, elapsed = line.split("|")
        secs = 0
        for x in re.split(r"[-:]", elapsed):
            secs = secs * 60 + int(x) if x.isdigit() else secs
        jobs[jid] = (state, float(secs))
    return jobs


ACTIVE_STATES = ("RUNNING", "PENDING", "COMPLETING", "CONFIGURING", "SUSPENDED", "REQUEUE_HOLD", "RESIZING")


def _all_ended(parsable: str) -> bool:
    """True when no row of a ``--parsable2`` export is still active (accounting has caught up)."""
    lines = parsable.splitlines()
    if not lines:
        return False
    head = lines[0].split("|")
    i_state, i_end = head.index("State"), head.index("End")
    for line in lines[1:]:
        f = line.split("|")
        if f[i_state].split(" ")[0] in ACTIVE_STATES or f[i_end] in ("Unknown", ""):
            return False
    return True


def _machine() -> dict[str, Any]:
    """The live job's machine description, with the CPU model."""
    from tools.campaigns.live_job import _machine as live_job_machine

    m = live_job_machine()
    try:
        m["cpu"] = next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            None,
        )
    except OSError:
        m["cpu"] = None
    return m


def _slurm_config(conf: Path) -> dict[str, str]:
    """The cluster's slurm.conf and gres.conf with the state folder written as $ETT_SLURM_DIR."""
    state = conf.parent.parent
    out = {}
    for name in ("slurm.conf", "gres.conf"):
        p = conf.parent / name
        if p.is_file():
            out[name] = p.read_text().replace(str(state), "$ETT_SLURM_DIR")
    return out


def run_campaign(
    out_dir: Path = SLURM_FLEET,
    work: Path | None = None,
    *,
    python: str = sys.executable,
    deadline_s: float = 4 * 3600.0,
) -> dict[str, Any]:
    """Submit :func:`plan`, inject the events, wait, export, bundle into ``out_dir`` (replaced)."""
    conf = Path(os.environ.get("SLURM_CONF", ""))
    if not conf.is_file():
        raise SystemExit("SLURM_CONF must name the running cluster's slurm.conf (tools/slurm/start.sh prints it)")
    work = Path(work) if work else Path(tempfile.mkdtemp(prefix="ett-slurm-fleet-"))
    for sub in ("plans", "jobs", "logs", "recorder", "scripts", "compile-cache"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    recorder = work / "recorder"
    jobs = plan()
    for p in jobs:
        for t in range(p.array_tasks) if p.array_tasks else [None]:
            c = p.conditions(work, t)
            name = f"{p.name}-{t}.json" if t is not None else f"{p.name}.json"
            (work / "plans" / name).write_text(json.dumps(c.as_dict(), indent=2) + "\n")
        (work / "scripts" / f"{p.name}.sh").write_text(_script(p, work, recorder, python))

    events: list[dict[str, Any]] = []

    def event(kind: str, **kw: Any) -> None:
        e = {
            "t": time.time(),
            "utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "event": kind,
            "load_1min": os.getloadavg()[0],
            **kw,
        }
        events.append(e)
        print(f"[slurm-fleet] {e['utc']} {kind} {json.dumps(kw)}", flush=True)

    started = datetime.now(timezone.utc).replace(microsecond=0)
    t0 = time.time()
    export_start = datetime.fromtimestamp(t0 - 60).replace(microsecond=0).isoformat()  # sacct -S is in local time
    submitted: dict[str, str] = {}  # plan name -> Slurm job id (array: the array's id)
    pending = sorted(jobs, key=lambda p: p.submit_at_s)
    node = _run(["sinfo", "-h", "-o", "%N"]).strip().splitlines()[0]
    node_down = node_up = False
    cancelled: set[str] = set()
    while True:
        now = time.time() - t0
        while pending and pending[0].submit_at_s <= now:
            p = pending.pop(0)
            jid = _run(["sbatch", "--parsable", str(work / "scripts" / f"{p.name}.sh")]).strip().split(";")[0]
            submitted[p.name] = jid
            event("submit", plan_job=p.name, job_id=jid, partition=p.partition, variant=p.variant, role=p.role)
        if not node_down and now >= NODE_FAILURE_AT_S:
            running = [j for j, (s, _) in _squeue().items() if s == "RUNNING"]
            _run(["scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=injected node failure"])
            node_down = True
            event("node_down", node=node, running_jobs=running)
        if node_down and not node_up and now >= NODE_FAILURE_AT_S + NODE_DOWN_FOR_S:
            _run(["scontrol", "update", f"NodeName={node}", "State=RESUME"])
            node_up = True
            event("node_resume", node=node)
        queue = _squeue()
        for p in jobs:
            if p.cancel_after_running_s is not None and p.name in submitted and p.name not in cancelled:
                state, secs = queue.get(submitted[p.name], ("", 0.0))
                if state == "RUNNING" and secs >= p.cancel_after_running_s:
                    _run(["scancel", submitted[p.name]])
                    cancelled.add(p.name)
                    event("cancel", plan_job=p.name, job_id=submitted[p.name], running_s=secs)
        if not pending and node_up and not queue:
            break
        if now > deadline_s:
            raise SystemExit(f"campaign still running after {deadline_s:.0f} s; work folder kept: {work}")
        time.sleep(2.0)
    event("all_jobs_done", elapsed_s=time.time() - t0)

    raw = work / "raw"
    raw.mkdir(exist_ok=True)
    export(raw, export_start)
    version = _run(["sinfo", "-V"]).strip()

    campaign = {
        "generated_by": COMMAND,
        "started_utc": started.isoformat(),
        "elapsed_s": time.time() - t0,
        "slurm_version": version,
        "sacct_commands": {
            k: ("SLURM_TIME_FORMAT=%s " if k == "sacct.txt" else "") + " ".join(v)
            for k, v in export_commands(export_start).items()
        },
        "machine": _machine(),
        "slurm_config": _slurm_config(conf),
        "node_failure": {"at_s": NODE_FAILURE_AT_S, "down_for_s": NODE_DOWN_FOR_S},
        "plan": [asdict(p) for p in jobs],
        "submitted": submitted,
        "events": events,
        "ground_truth": ground_truth(work),
    }
    bundle(work, out_dir, campaign)
    return campaign


def export(raw: Path, start: str, *, settle_s: float = 10.0, timeout_s: float = 300.0) -> None:
    """Both exports into ``raw``, once the accounting has settled.

    Records reach slurmdbd a while after the controller, and a job's exit code and
    final state are completed later still (a cancelled job's ``0:0`` becomes ``0:15``):
    wait until no row is active and the text export has not changed for ``settle_s``.
    The JSON export runs without ``SLURM_TIME_FORMAT`` (sacct --json then refuses its
    own --starttime).
    """
    cmds = export_commands(start)
    text_env = dict(os.environ, SLURM_TIME_FORMAT="%s")
    t0, last, since = time.time(), None, time.time()
    while True:
        text = _run(cmds["sacct.txt"], env=text_env)
        if text != last:
            last, since = text, time.time()
        elif _all_ended(text) and time.time() - since >= settle_s:
            break
        if time.time() - t0 > timeout_s:
            raise SystemExit(f"sacct did not settle within {timeout_s:.0f} s")
        time.sleep(2.0)
    env = {k: v for k, v in os.environ.items() if k != "SLURM_TIME_FORMAT"}
    (raw / "sacct.txt").write_text(text)
    (raw / "sacct.json").write_text(_run(cmds["sacct.json"], env=env))


def ground_truth(work: Path) -> dict[str, Any]:
    """Per planned job and attempt, from the training loop's own step logs: first and last step, steps run."""
    from tools.campaigns.supervisor import read_step_log

    out: dict[str, Any] = {}
    for job_dir in sorted((work / "jobs").iterdir()):
        rows = read_step_log(job_dir)
        per: dict[int, dict[str, Any]] = {}
        for att, step, t0, t1 in rows:
            a = per.setdefault(att, {"first_step": step, "last_step": step, "steps": 0, "first_step_start": t0})
            a["last_step"], a["steps"], a["last_step_end"] = step, a["steps"] + 1, t1
        crashed = sorted(int(p.name.rsplit("-", 1)[1]) for p in job_dir.glob("crashed-at-*"))
        out[job_dir.name] = {"attempts": {str(k): v for k, v in sorted(per.items())}, "crashed_at_steps": crashed}
    return out


def bundle(work: Path, out_dir: Path, campaign: dict[str, Any]) -> None:
    """Replace ``out_dir`` with the raw exports, the recorder files, ``campaign.json`` and the imported trace."""
    out_dir = Path(out_dir)
    with atomic_path(out_dir, directory=True) as tmp:
        if (out_dir / "README.md").is_file():
            shutil.copy2(out_dir / "README.md", tmp / "README.md")
        for name in ("sacct.txt", "sacct.json"):
            shutil.copy2(work / "raw" / name, tmp / name)
        (tmp / "recorder").mkdir()
        for p in sorted((work / "recorder").glob("*.jsonl")):
            shutil.copy2(p, tmp / "recorder" / p.name)
        (tmp / "campaign.json").write_text(json.dumps(campaign, indent=2, sort_keys=True) + "\n")
    rebuild(out_dir)


def rebuild(out_dir: Path = SLURM_FLEET) -> Path:
    """Re-import ``sacct.txt`` with ``recorder/`` into ``trace/`` (no Slurm, no PyTorch)."""
    from ettcore.importers.frames import write_import
    from ettcore.importers.slurm import import_sacct

    out_dir = Path(out_dir)
    campaign = json.loads((out_dir / "campaign.json").read_text(encoding="utf-8"))
    frames, report = import_sacct([out_dir / "sacct.txt"], recorder_dir=out_dir / "recorder", relative_to=out_dir)
    frames.metadata.update(
        {
            "synthetic": False,
            "measured": True,
            "training_data": "synthetic click data (generated)",
            "source": f"a real Slurm cluster ({campaign['slurm_version']}), {COMMAND}",
            "machine": campaign["machine"],
            "started_utc": campaign["started_utc"],
        }
    )
    return write_import(out_dir / "trace", frames, report)


def _cli(args: argparse.Namespace) -> int:
    if args.rebuild:
        out = rebuild(args.out)
        print(f"re-imported {args.out / 'sacct.txt'} with {args.out / 'recorder'} into {out}")
        return 0
    try:
        import torch  # noqa: F401
    except ImportError:
        print("the campaign needs PyTorch: .venv/bin/pip install -e '.[torch]'", file=sys.stderr)
        return 2
    c = run_campaign(args.out, args.work)
    print(f"wrote {args.out} ({len(c['submitted'])} submissions) in {c['elapsed_s']:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=SLURM_FLEET, help="results folder (default: data/slurm-fleet)")
    ap.add_argument(
        "--work", type=Path, default=None, help="work folder (checkpoints, logs; default: a temporary one, kept)"
    )
    ap.add_argument("--rebuild", action="store_true", help="only re-import the bundled files (no Slurm, no PyTorch)")
    args = ap.parse_args(argv)
    return _cli(args)


if __name__ == "__main__":
    raise SystemExit(main())
