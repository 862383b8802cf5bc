"""A small real multi-node campaign: several ``slurmd -N nodeK`` on this machine, 2-node jobs, one node failing.

Run (needs the project's Slurm cluster with three nodes, ``ETT_SLURM_NODES=3 tools/slurm/start.sh``;
``make slurm-multinode`` starts a fresh one of its own, runs this and stops it)::

    SLURM_CONF=... .venv/bin/python -m tools.campaigns.slurm_multinode          # about two minutes
    .venv/bin/python -m tools.campaigns.slurm_multinode --rebuild   # re-import the bundled sacct export only

What it does (:func:`plan` lists the jobs, :func:`run_campaign` submits them and
injects the failure):

- submits seven ``sleep`` jobs (no training: the campaign is about nodes), each
  placed with ``--nodelist`` so the failure hits known jobs: 2-node jobs on
  ``node[1-2]``, ``node[2-3]`` and ``node[1,3]``, 1-node jobs on each node; every
  job but one is ``--requeue``;
- :data:`FAIL_AT_S` after the first submission, ``node3`` crashes: its slurmd and
  every process it ran (slurmstepd, the jobs' tasks: :func:`node_processes`) are
  killed (``kill -9``), and the node is set ``DOWN`` (``scontrol update``): its running jobs
  end ``NODE_FAIL``; the requeueable ones are requeued, the other one stays failed;
- :data:`DOWN_FOR_S` later its slurmd is started again and the node resumed
  (``State=RESUME``): the requeued jobs run again (their ``--nodelist`` holds
  ``node3``) and complete;
- exports the accounting with the documented ``sacct`` command, imports it
  (``ettcore.importers.slurm``, no recorder: the jobs do not train) and writes
  ``campaign.json`` (plan, events with times, Slurm version, configuration) into
  ``data/slurm-multinode``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ettcore.atomic import atomic_path
from ettcore.bundled import SLURM_MULTINODE
from ettcore.importers.slurm import export_commands
from tools.campaigns.slurm_fleet import _machine, _run, _slurm_config, _squeue, export

COMMAND = "make slurm-multinode"
NODES = 3  # ETT_SLURM_NODES of the campaign's cluster
FAILED_NODE = "node3"
FAIL_AT_S = 25.0  # node3's slurmd is killed this long after the first submission ...
DOWN_FOR_S = 15.0  # ... and started again, the node resumed, this long after


@dataclass(frozen=True)
class JobPlan:
    """One ``sbatch``: a name, the nodes it must run on, how long it sleeps, whether Slurm may requeue it."""

    name: str
    nodelist: str
    nodes: int
    sleep_s: int = 60
    requeue: bool = True


def plan() -> list[JobPlan]:
    """Seven jobs on three nodes; four run on node3 when it fails (two of them 2-node jobs, one not requeueable)."""
    return [
        JobPlan("pair-12", "node[1-2]", 2),
        JobPlan("pair-23", "node[2-3]", 2),
        JobPlan("pair-13", "node[1,3]", 2),
        JobPlan("solo-1", "node1", 1),
        JobPlan("solo-2", "node2", 1),
        JobPlan("solo-3", "node3", 1),
        JobPlan("solo-3-norequeue", "node3", 1, requeue=False),
    ]


def _script(p: JobPlan, work: Path) -> str:
    return (
        "\n".join(
            [
                "#!/bin/bash",
                f"#SBATCH --job-name={p.name}",
                "#SBATCH --partition=low",
                f"#SBATCH --nodes={p.nodes}",
                f"#SBATCH --nodelist={p.nodelist}",
                "#SBATCH --ntasks-per-node=1",
                "#SBATCH --cpus-per-task=1",
                "#SBATCH --gres=gpu:1",
                "#SBATCH --time=5",
                "#SBATCH --account=research",
                "#SBATCH --requeue" if p.requeue else "#SBATCH --no-requeue",
                f"#SBATCH --output={work}/logs/{p.name}-%j.out",
                "#SBATCH --open-mode=append",
                'echo "run ${SLURM_RESTART_COUNT:-0} of $SLURM_JOB_ID on $SLURM_JOB_NODELIST at $(date +%s.%N)"',
                f"srun sleep {p.sleep_s}",
            ]
        )
        + "\n"
    )


def _state_dir(conf: Path) -> Path:
    return conf.parent.parent  # tools/slurm/start.sh: $ETT_SLURM_DIR/etc/slurm.conf


def _node_state(node: str) -> str:
    return _run(["sinfo", "-h", "-n", node, "-o", "%T"]).strip().splitlines()[0]


def _environ(pid: str) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)


def node_processes(conf: Path, node: str) -> list[int]:
    """The processes of one emulated node of this cluster (not its slurmd): its slurmstepd daemons and the jobs' tasks.

    Every process of the cluster has ``SLURM_CONF`` naming its slurm.conf in its environment (start.sh exports it
    before slurmd starts; other clusters on the machine name theirs). A task of the node has ``SLURMD_NODENAME``;
    a slurmstepd of the node holds a socket in the node's spool folder (``/proc/net/unix``).
    """
    spool = str(_state_dir(conf) / "spool" / node) + "/"
    inodes = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        f = line.split()
        if len(f) >= 8 and f[7].startswith(spool):
            inodes.add(f"socket:[{f[6]}]")
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        env = _environ(d.name)
        if env.get("SLURM_CONF") != str(conf):
            continue
        if env.get("SLURMD_NODENAME") == node:
            out.append(int(d.name))
            continue
        try:
            fds = {os.readlink(fd) for fd in (d / "fd").iterdir()}
        except OSError:
            continue
        if fds & inodes:
            out.append(int(d.name))
    return sorted(out)


def _wait(what: str, cond, timeout_s: float = 120.0) -> None:
    t0 = time.time()
    while not cond():
        if time.time() - t0 > timeout_s:
            raise SystemExit(f"{what} not reached within {timeout_s:.0f} s")
        time.sleep(0.5)


class Session:
    """One campaign on the running multi-node cluster (``SLURM_CONF``): its work folder, event log, clock, jobs.

    Checks that the cluster has nodes ``node1..node{NODES}``; :meth:`event` prints an event and keeps it with its
    time; :meth:`submit` writes a job's batch script and ``sbatch``-es it."""

    def __init__(self, name: str, work: Path | None, subfolders: tuple[str, ...] = ("logs", "scripts")) -> None:
        self.name = name
        self.conf = Path(os.environ.get("SLURM_CONF", ""))
        if not self.conf.is_file():
            raise SystemExit("SLURM_CONF must name the running cluster's slurm.conf (tools/slurm/start.sh prints it)")
        names = _run(["sinfo", "-h", "-N", "-o", "%N"]).split()
        if sorted(set(names)) != [f"node{k}" for k in range(1, NODES + 1)]:
            raise SystemExit(f"the cluster must have nodes node1..node{NODES} (ETT_SLURM_NODES={NODES}), not {names}")
        self.work = Path(work) if work else Path(tempfile.mkdtemp(prefix=f"ett-{name}-"))
        for sub in subfolders:
            (self.work / sub).mkdir(parents=True, exist_ok=True)
        self.events: list[dict[str, Any]] = []
        self.submitted: dict[str, str] = {}
        self.started = datetime.now(timezone.utc).replace(microsecond=0)
        self.t0 = time.time()
        self.export_start = datetime.fromtimestamp(self.t0 - 60).replace(microsecond=0).isoformat()  # sacct -S: local

    def event(self, kind: str, **kw: Any) -> None:
        e = {"t": time.time(), "utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "event": kind, **kw}
        self.events.append(e)
        print(f"[{self.name}] {e['utc']} {kind} {json.dumps(kw)}", flush=True)

    def submit(self, job: str, script: str, **kw: Any) -> str:
        """``sbatch`` the batch script ``script`` of plan job ``job``; its Slurm job id."""
        path = self.work / "scripts" / f"{job}.sh"
        path.write_text(script)
        self.submitted[job] = _run(["sbatch", "--parsable", str(path)]).strip().split(";")[0]
        self.event("submit", plan_job=job, job_id=self.submitted[job], **kw)
        return self.submitted[job]

    def finish(self, command: str, **rest: Any) -> dict[str, Any]:
        """Export the accounting into ``work/raw`` once it settled; the campaign's record (:func:`campaign_record`)."""
        raw = self.work / "raw"
        raw.mkdir(exist_ok=True)
        export(raw, self.export_start)
        rest.update(submitted=self.submitted, events=self.events)
        return campaign_record(command, self.started, self.t0, self.export_start, self.conf, **rest)


def run_campaign(out_dir: Path = SLURM_MULTINODE, work: Path | None = None) -> dict[str, Any]:
    """Submit :func:`plan`, fail and resume node3, wait, export, bundle into ``out_dir`` (replaced)."""
    session = Session("slurm-multinode", work)
    conf, event, t0 = session.conf, session.event, session.t0
    state = _state_dir(conf)
    jobs = plan()
    for p in jobs:
        session.submit(p.name, _script(p, session.work), nodelist=p.nodelist, requeue=p.requeue)

    def all_running() -> bool:
        states = [s for s, _ in _squeue().values()]
        return len(states) == len(jobs) and all(s == "RUNNING" for s in states)

    _wait("every job running", all_running)
    event("all_running", squeue=_run(["squeue", "-h", "-o", "%i %j %T %N"]).splitlines())
    time.sleep(max(0.0, FAIL_AT_S - (time.time() - t0)))

    pidfile = state / "run" / f"slurmd-{FAILED_NODE}.pid"
    pid = int(pidfile.read_text().split()[0])
    on_node = _run(["squeue", "-h", "-w", FAILED_NODE, "-t", "RUNNING", "-o", "%i"]).split()
    os.kill(pid, signal.SIGKILL)  # the node crashes: its slurmd first (no word to slurmctld), then all it ran
    procs = [q for q in node_processes(conf, FAILED_NODE) if q != pid]
    for q in procs:
        try:
            os.kill(q, signal.SIGKILL)
        except ProcessLookupError:
            pass
    event("node_crashed", node=FAILED_NODE, slurmd_pid=pid, killed=procs, signal="SIGKILL", running_jobs=on_node)
    reason = "injected node failure: slurmd and its jobs killed"
    _run(["scontrol", "update", f"NodeName={FAILED_NODE}", "State=DOWN", f"Reason={reason}"])
    event("node_down", node=FAILED_NODE, reason=reason)
    time.sleep(DOWN_FOR_S)

    log = open(state / "log" / f"slurmd-{FAILED_NODE}.out", "ab")  # noqa: SIM115 - the daemon keeps it
    proc = subprocess.Popen(
        ["slurmd", "-D", "-N", FAILED_NODE], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    pidfile.write_text(f"{proc.pid}\n")  # tools/slurm/stop.sh stops it by this file, as the others
    event("slurmd_started", node=FAILED_NODE, pid=proc.pid)
    _wait(f"{FAILED_NODE}'s slurmd registered", lambda: "*" not in _node_state(FAILED_NODE))
    _run(["scontrol", "update", f"NodeName={FAILED_NODE}", "State=RESUME"])
    event("node_resume", node=FAILED_NODE)
    _wait("every job done", lambda: not _squeue(), timeout_s=300.0)
    event("all_jobs_done", elapsed_s=time.time() - t0)

    campaign = session.finish(
        COMMAND,
        node_failure={"node": FAILED_NODE, "at_s": FAIL_AT_S, "down_for_s": DOWN_FOR_S},
        plan=[asdict(p) for p in jobs],
    )
    bundle(out_dir, session.work / "raw", campaign)
    rebuild(out_dir)
    return campaign


def campaign_record(
    command: str, started: datetime, t0: float, export_start: str, conf: Path, **rest: Any
) -> dict[str, Any]:
    """``campaign.json`` of a Slurm campaign on this machine: what made it, when, the Slurm version, the export
    commands, the machine and the cluster's configuration, and the campaign's own entries (``rest``)."""
    return {
        "generated_by": command,
        "started_utc": started.isoformat(),
        "elapsed_s": time.time() - t0,
        "slurm_version": _run(["sinfo", "-V"]).strip(),
        "sacct_commands": {
            k: ("SLURM_TIME_FORMAT=%s " if k == "sacct.txt" else "") + " ".join(v)
            for k, v in export_commands(export_start).items()
        },
        "machine": _machine(),
        "slurm_config": _slurm_config(conf),
        **rest,
    }


def bundle(out_dir: Path, raw: Path, campaign: dict[str, Any], recorder: Path | None = None) -> None:
    """Replace ``out_dir`` (its README kept) with both exports of ``raw``, ``campaign.json`` and a copy of the
    recorder's run folder when there is one."""
    with atomic_path(Path(out_dir), directory=True) as tmp:
        if (Path(out_dir) / "README.md").is_file():
            (tmp / "README.md").write_bytes((Path(out_dir) / "README.md").read_bytes())
        for name in ("sacct.txt", "sacct.json"):
            (tmp / name).write_bytes((raw / name).read_bytes())
        if recorder is not None:
            shutil.copytree(recorder, tmp / "recorder")
        (tmp / "campaign.json").write_text(json.dumps(campaign, indent=2, sort_keys=True) + "\n")


def reimport(out_dir: Path, training_data: str, command: str, recorder: bool = False) -> Path:
    """Re-import a bundled campaign's ``sacct.txt`` (with its ``recorder/`` folder) into ``trace/`` (no Slurm)."""
    from ettcore.importers.frames import write_import
    from ettcore.importers.slurm import import_sacct

    out_dir = Path(out_dir)
    campaign = json.loads((out_dir / "campaign.json").read_text(encoding="utf-8"))
    frames, report = import_sacct(
        [out_dir / "sacct.txt"], recorder_dir=out_dir / "recorder" if recorder else None, relative_to=out_dir
    )
    frames.metadata.update(
        {
            "synthetic": False,
            "measured": True,
            "training_data": training_data,
            "source": f"a real Slurm cluster of {NODES} node daemons ({campaign['slurm_version']}), {command}",
            "machine": campaign["machine"],
            "started_utc": campaign["started_utc"],
        }
    )
    return write_import(out_dir / "trace", frames, report)


def rebuild(out_dir: Path = SLURM_MULTINODE) -> Path:
    """Re-import ``sacct.txt`` into ``trace/`` (no Slurm)."""
    return reimport(out_dir, "none (the jobs sleep)", COMMAND)


def cli(argv: list[str] | None, doc: str, default_out: Path, run: Any, rebuild_: Any) -> int:
    """The command line of a multi-node campaign: ``--out``, ``--work``, ``--rebuild``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=default_out, help=f"results folder (default: data/{default_out.name})")
    ap.add_argument("--work", type=Path, default=None, help="work folder (job scripts, logs; default: a temporary one)")
    ap.add_argument("--rebuild", action="store_true", help="only re-import the bundled export (no Slurm)")
    args = ap.parse_args(argv)
    if args.rebuild:
        print(f"re-imported {args.out / 'sacct.txt'} into {rebuild_(args.out)}")
        return 0
    c = run(args.out, args.work)
    print(f"wrote {args.out} ({len(c['submitted'])} submissions) in {c['elapsed_s']:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    return cli(argv, __doc__, SLURM_MULTINODE, run_campaign, rebuild)


if __name__ == "__main__":
    raise SystemExit(main())
