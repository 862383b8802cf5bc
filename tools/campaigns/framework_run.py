"""The bundled framework run (``data/framework-run``): a Lightning job measured by ``ETTCallback`` alone.

Regenerate (needs the ``lightning`` extra)::

    .venv/bin/python -m tools.campaigns.framework_run

It runs the tiny Lightning job the integration tests run
(``tools/campaigns/jobs/lightning_job.py``: the ETT callback is its only
instrumentation) as three processes, like a job a scheduler restarts: the
first crashes after step 25, the second resumes from the step-20 checkpoint
and is preempted (SIGTERM) after step 45, the third resumes from step 40 and
completes 60 steps.  It keeps, in ``data/framework-run``:

- ``recorder/``  the callback's recorder JSONL (what the job wrote);
- ``trace/``     the trace converted from it (``ett from-recorder``);
- ``events.csv`` the job script's own log of its steps, saves and
  evaluations, and the test's clock around each process (``runs.json``):
  the ground truth, kept apart from the callback;
- ``runs.json``  the processes, the ground truth computed from them
  (``tools/campaigns/jobs/ground_truth.py``), the trace's values and the tolerances.

:func:`ettcore.bundled.framework_run` and :func:`ettcore.bundled.framework_run_comparison` read it back without
PyTorch.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ettcore.atomic import atomic_path, write_text
from ettcore.bundled import FRAMEWORK_RUN
from ettcore.vocabulary import VOCABULARY
from tools.campaigns.jobs import JOBS_DIR
from tools.campaigns.jobs import ground_truth as gt

COMMAND = ".venv/bin/python -m tools.campaigns.framework_run"
PLAN = {0: ["--crash-at", "25"], 1: ["--sigterm-at", "45"], 2: []}
# the end reason of each try of PLAN: the crash is a failure and the SIGTERM a preemption (the vocabulary's two
# interruptions, in order), the last try completes
REASONS = [*VOCABULARY.interruptions, *VOCABULARY.role("completion")]


def run(out_dir: str | Path = FRAMEWORK_RUN) -> dict[str, Any]:
    """Run the three tries and replace ``out_dir``'s ``recorder/``, ``trace/``, ``events.csv`` and ``runs.json``."""
    from importlib import metadata

    from ettcore.importers.recorder import convert
    from tools.campaigns.live_job import _machine

    out_dir = Path(out_dir)
    started = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory(prefix="ett-framework-run-") as tmp:
        r = gt.restart_run(JOBS_DIR / "lightning_job.py", Path(tmp), PLAN, reasons=REASONS)
        if not all(row["ok"] for row in r.rows):
            raise RuntimeError("the run does not agree with its ground truth:\n" + gt.table(r.rows))
        meta = {
            "synthetic": False,
            "measured": True,
            "training_data": "generated regression data",
            "source": f"ettcore.integrations.lightning.ETTCallback on a tiny Lightning job ({COMMAND})",
            "machine": _machine(),
            "started_utc": started.isoformat(),
        }
        with atomic_path(out_dir / "recorder", directory=True) as tmpdir:
            for p in sorted((Path(tmp) / "run").glob("*.jsonl")):
                shutil.copy2(p, tmpdir / p.name)
        conv = convert(out_dir / "recorder", out_dir / "trace", metadata=meta, notes_relative_to=out_dir)
        lines = ["kind,try,step,start,end"] + [
            f"{e.kind},{e.try_no},{e.step},{e.start:.6f},{e.end:.6f}" for e in r.events
        ]
        write_text(out_dir / "events.csv", "\n".join(lines) + "\n")
    versions = {p: metadata.version(p) for p in ("torch", "lightning")}
    result = {
        "generated_by": COMMAND,
        "started_utc": started.isoformat(),
        "machine": meta["machine"],
        "versions": versions,
        "plan": {str(k): v for k, v in PLAN.items()},
        "processes": [
            {"try": p.try_no, "spawn_t": p.spawn_t, "reap_t": p.reap_t, "returncode": p.returncode} for p in r.procs
        ],
        "ground_truth": {k: v for k, v in r.truth.as_dict().items() if k != "steps_per_try"},
        "steps_per_try": {str(k): list(v) for k, v in r.truth.steps_per_try.items()},
        "comparison": [{k: (v if not isinstance(v, float) else round(v, 6)) for k, v in row.items()} for row in r.rows],
        "recorder_notes": conv.note_lines(out_dir),
    }
    write_text(out_dir / "runs.json", json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Regenerate data/framework-run (needs the lightning extra).")
    ap.add_argument("--out", type=Path, default=FRAMEWORK_RUN)
    args = ap.parse_args(argv)
    result = run(args.out)
    print(f"wrote {args.out}: " + ", ".join(f"{c['quantity']} {c['trace']}" for c in result["comparison"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
