"""Polling Slurm's accounting: the partial ``sacct`` export ``ett ingest STORE --slurm`` imports.

A poll runs ``sacct`` itself, in the documented text form (:data:`ettcore.importers.slurm.SACCT_FORMAT`,
``SLURM_TIME_FORMAT=%s``, ``--allusers --duplicates --allocations --parsable2``), in two steps:

1. **which jobs**: every job in any state from ``since`` on (``--starttime since --endtime 2100-01-01``, job ids
   only), narrowed by the selection options given (``--accounts``, ``--partition``); plus the ``open`` jobs the
   caller names (those a store still holds as pending or running, until they end);
2. **their whole history**: those jobs by id (``--jobs``, :data:`ID_CHUNK` ids a call, no time window), every run.

Step 2 is needed because sacct's time window selects *runs*, not jobs: a requeued job whose first run ended before
``since`` comes back from step 1 with its later runs only (tried on Slurm 22.05), and an import of that would be
another job (its first attempt starting at a requeue).  Asking by id returns every run of each job.  Rows of one
run (same ``DBIndex``) seen by two calls keep the later call's version.

The snapshot time of a poll (:attr:`Poll.taken_s`) is when its last ``sacct`` call returned: every time in the
export is at or before it.  ``sacct`` missing, failing (a non-zero exit), giving no answer within the timeout
(``--sacct-timeout``, default :data:`TIMEOUT_S_DEFAULT` seconds) or printing a table cut short (a row with fewer
fields than its header) is one :class:`~ettcore.errors.InputError` line naming ``sacct``, before the store is touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from ettcore.errors import InputError, Problem
from ettcore.importers.slurm import FAR_END, SACCT_FORMAT

ID_CHUNK = 500  # job ids a `sacct --jobs` call (sacct's own advice: as few calls as it takes)
BASE = ("--allusers", "--duplicates", "--allocations", "--parsable2")
TIMEOUT_S_DEFAULT = 600.0  # seconds a sacct call may take (--sacct-timeout)


@dataclass
class Poll:
    """One poll: the export (text, header first), what it holds, and when it was taken."""

    since_s: float
    open_asked: int
    window_jobs: int
    text: str
    taken_s: float
    calls: int
    states: Counter = field(default_factory=Counter)  # the State of every run (row) in the export
    jobs: int = 0

    @property
    def rows(self) -> int:
        return sum(self.states.values())


def sacct(argv: Sequence[str], env: dict | None = None, timeout_s: float = TIMEOUT_S_DEFAULT) -> str:
    """Run ``sacct`` with ``argv`` (``SLURM_TIME_FORMAT=%s``); its standard output, or one clear error."""
    exe = shutil.which("sacct", path=(env or os.environ).get("PATH"))
    if exe is None:
        raise InputError(
            Problem(
                "sacct",
                None,
                None,
                "not found on PATH: --slurm runs Slurm's sacct (install slurm-client, or put sacct on PATH)",
            )
        )
    run_env = dict(env if env is not None else os.environ, SLURM_TIME_FORMAT="%s")
    try:
        out = subprocess.run([exe, *argv], env=run_env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise InputError(
            Problem("sacct", None, None, f"gave no answer within {timeout_s:g} s (--sacct-timeout sets the limit)")
        ) from None
    except OSError as exc:
        raise InputError(Problem("sacct", None, None, f"cannot run {exe}: {exc}")) from None
    if out.returncode != 0:
        first = next((x.strip() for x in out.stderr.splitlines() if x.strip()), "no message")
        raise InputError(Problem("sacct", None, None, f"failed (exit {out.returncode}): {first}"))
    return out.stdout


def check_whole(text: str) -> None:
    """Refuse a text export cut short: every row has as many ``|``-separated fields as the header (sacct killed
    mid-write, a pipe closed early, a full disk on its side)."""
    lines = [x for x in text.splitlines() if x.strip()]
    if not lines:
        return
    width = len(lines[0].split("|"))
    for n, row in enumerate(lines[1:], start=1):
        got = len(row.split("|"))
        if got != width:
            raise InputError(
                Problem(
                    "sacct",
                    n,
                    None,
                    f"printed a table cut short or malformed ({got} of the header's {width} fields); "
                    "nothing ingested (the next poll reads these jobs again)",
                )
            )


def sacct_time(t_s: float) -> str:
    """An instant as sacct reads ``--starttime``: local time, whole seconds (rounded down)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(int(t_s)))


def merge(texts: Sequence[str]) -> tuple[str, Counter, int]:
    """One export of the runs in ``texts`` (sacct text exports, header first, in the order taken): a run (its
    ``DBIndex``) seen twice keeps the later version.  With the count of each ``State`` and of jobs (``JobIDRaw``)."""
    header = "|".join(SACCT_FORMAT.split(","))
    runs: dict[str, str] = {}
    for text in texts:
        lines = [x for x in text.splitlines() if x.strip()]
        if not lines:
            continue
        header = lines[0]
        cols = header.split("|")
        db = cols.index("DBIndex") if "DBIndex" in cols else None
        for row in lines[1:]:
            f = row.split("|")
            runs[f[db] if db is not None and len(f) == len(cols) else row] = row
    cols = header.split("|")
    states: Counter = Counter()
    jobs = set()
    for row in runs.values():
        f = row.split("|")
        if len(f) == len(cols):  # (a row of another shape is the importer's to name: file, row, field)
            states[f[cols.index("State")].split(" ")[0]] += 1
            jobs.add(f[cols.index("JobIDRaw")])
    return "\n".join([header, *runs.values()]) + "\n", states, len(jobs)


def poll(
    since_s: float,
    open_ids: Sequence[str] = (),
    *,
    accounts: str | None = None,
    partition: str | None = None,
    env: dict | None = None,
    timeout_s: float = TIMEOUT_S_DEFAULT,
) -> Poll:
    """The jobs with a run in any state from ``since_s`` on, and the ``open_ids`` jobs, with every run of each;
    each ``sacct`` call may take up to ``timeout_s`` seconds."""
    select = [f"--{k}={v}" for k, v in (("accounts", accounts), ("partition", partition)) if v]
    found = sacct(
        [*BASE, "--noheader", "--format=JobIDRaw", "--starttime", sacct_time(since_s), "--endtime", FAR_END, *select],
        env,
        timeout_s,
    )
    window = list(dict.fromkeys(x.strip() for x in found.splitlines() if x.strip()))
    ids = list(dict.fromkeys([*window, *open_ids]))
    texts = [
        sacct(
            [*BASE, f"--format={SACCT_FORMAT}", "--jobs", ",".join(ids[k : k + ID_CHUNK]), "--endtime", FAR_END],
            env,
            timeout_s,
        )
        for k in range(0, len(ids), ID_CHUNK)
    ]
    for text in texts:
        check_whole(text)
    taken = time.time()
    text, states, jobs = merge(texts)
    return Poll(
        since_s=since_s,
        open_asked=len(set(open_ids) - set(window)),
        window_jobs=len(window),
        text=text,
        taken_s=taken,
        calls=1 + len(texts),
        states=states,
        jobs=jobs,
    )
