"""Fleet-scale benchmark of the ETT metric (``make bench``; not part of ``make test``).

For each fleet size (jobs; default 10,000 and 100,000, plus 1,000,000 with
``--full``) a **synthetic** fleet is generated from the ``fleet`` scenario
(``ettcore.synthetic.generator``, Parquet partitioned into parts) and, in one run, timed:

* the two floors, in DuckDB on the same Parquet files:
  ``count(*)`` with a sum of span durations, and a query that reads every
  column the metric uses (spans, attempts, jobs);
* ettcore in process: ``load_trace`` (typing + every data check), then
  ``summarize`` (per-job L1 + L2 and fleet totals), ``trend --every day``, and
  both from one pass (summarize, then trend on the same prepared trace);
* the same as the ``ett`` command (``ett summarize TRACE --json``,
  ``ett trend TRACE --every day --json``, and ``ett summarize TRACE`` with no
  flags, which prints the terminal tables), end to end;
* the plain-Python reference implementation (the tests' oracle, ``tests/reference.py``) on a
  subsample of jobs (every k-th job), scaled per job;
* ml-goodput-measurement's ``GoodputCalculator`` on a smaller subsample, each
  job recorded through the library's ``GoodputRecorder`` into an in-memory
  logger (train spans become steps of ``--goodput-step-s`` seconds; replayed
  progress repeats step numbers, which is how the library sees a disruption).

Every ettcore measurement runs under DuckDB's memory limit (``--memory-limit``,
default 3GB, so that the 4 GiB peak target leaves room for Python): a fleet
whose spans do not fit in half of it is attributed in batches of jobs.

Every measurement runs in its own child process: the child times its own work
(``time.perf_counter``) and the parent reads the child's peak resident memory
from ``os.wait4`` (``ru_maxrss``), so one measurement's memory never leaks into
the next.  Linux starts a child's peak RSS at its parent's, so the parent stays
small: it imports no data library and generates fleets in a child too.  The table goes to ``reports/benchmarks.md`` and
a chart to ``reports/benchmarks.png`` (``.html`` when PNG export is unavailable), the raw
measurements to ``reports/benchmarks.json``.

``--store`` runs the fleet store's benchmark instead (``benchmarks/store_fleet.py`` makes the data): a
30-day store built from a synthetic fleet, ``summarize``/``trend``/``export`` on it, one more day ingested into it and
the store rebuilt from nothing, into ``reports/benchmarks-store.md``; ``--full`` also appends it, at 1,000,000 jobs,
to ``reports/benchmarks.md``.

Ratios, not absolute times, are what the targets use, because the machine is
shared and noisy: time / floor, time per million spans at the largest size /
at 100k, and per-job time of the alternatives / per-job time of ettcore.  The
read floor is measured again before each pair of command runs (and once at the
end), so the table also gives each command's *paired* ratio (median of run /
the floor just before it) and how far the machine's speed drifted in the run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ettcore.config import GENERATED_DIR, REPORT_DIR  # noqa: E402

TABLES = ("jobs", "attempts", "spans")


# ----------------------------------------------------------------------------- helpers


def parquet_glob(trace: Path, table: str) -> str:
    """The Parquet file(s) of one table of a generated trace: a single file or a folder of parts."""
    single = trace / f"{table}.parquet"
    return str(single) if single.is_file() else str(trace / table / "*.parquet")


def fleet_path(work: Path, n_jobs: int, seed: int) -> Path:
    return work / f"bench-fleet-n{n_jobs}-s{seed}"


def make_fleet(work: Path, n_jobs: int, seed: int, timeout: float) -> Path:
    """Generate (or reuse) a synthetic fleet of ``n_jobs`` jobs, partitioned into at least 4 Parquet parts.

    Generation runs in a child process: a child's peak RSS starts from its parent's, so the parent stays small.
    """
    out = fleet_path(work, n_jobs, seed)
    meta = out / "trace.json"
    if meta.is_file():
        m = json.loads(meta.read_text())
        if m.get("jobs") == n_jobs and m.get("seed") == seed and m.get("synthetic") is True:
            return out
    res = child("generate", out, [str(n_jobs), str(seed)], timeout)
    if "error" in res:
        raise SystemExit(f"generating {out} failed: {res['error']}")
    print(f"  generated {out} (synthetic, {n_jobs} jobs) in {res['wall_s']:.1f} s", flush=True)
    return out


def _generate(out: Path, n_jobs: int, seed: int) -> dict:
    from ettcore.synthetic.generator import generate

    chunk = min(50_000, max(2_500, -(-n_jobs // 4)))
    generate("fleet", out, n_jobs=n_jobs, seed=seed, chunk_jobs=chunk)
    return {"jobs": n_jobs}


def measured(
    args: list[str], timeout: float, env: dict | None = None, keep: Path | None = None, keep_err: Path | None = None
) -> dict:
    """Run ``args`` in a child and return ``{wall_s, peak_mib, rc, result}`` (result: the child's JSON, if printed).

    ``env`` is added to this process's environment for the child; ``keep``/``keep_err``: the child's output/errors
    go to this file (the output not read back: a million jobs' JSON is most of a GB)."""
    t = time.perf_counter()
    with (
        keep.open("w+") if keep else tempfile.TemporaryFile("w+") as out,
        keep_err.open("w+") if keep_err else tempfile.TemporaryFile("w+") as err,
    ):
        proc = subprocess.Popen(
            args, stdout=out, stderr=err, cwd=str(ROOT), text=True, env={**os.environ, **(env or {})}
        )
        deadline = time.monotonic() + timeout
        status, usage = 0, None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                return {"error": f"timed out after {timeout:.0f} s"}
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t
        out.seek(0)
        err.seek(0)
        text, etext = "" if keep else out.read(), err.read()
    res: dict = {"wall_s": wall, "peak_mib": usage.ru_maxrss / 1024.0, "rc": proc.returncode}
    if proc.returncode != 0:
        res["error"] = (etext.strip().splitlines() or ["exit %d" % proc.returncode])[-1][:300]
        return res
    if keep:
        return res
    lines = [ln for ln in text.strip().splitlines() if ln.startswith("{")]
    if lines and args[1:2] == [__file__]:
        res["result"] = json.loads(lines[-1])
    return res


# in-process measurements always check the trace: the check cache (ettcore.trace.check_cache) is off for them
NO_CACHE = {"ETT_CHECK_CACHE": "0"}


def child(kind: str, trace: Path, extra: list[str], timeout: float) -> dict:
    return measured([sys.executable, __file__, "--child", kind, str(trace), *extra], timeout, NO_CACHE)


def median_of(runs: list[dict]) -> dict:
    """The run of median wall time (an error if any run failed), with every run's seconds and the largest peak."""
    bad = [r for r in runs if "error" in r]
    if bad:
        return bad[0]
    ordered = sorted(runs, key=lambda r: r["wall_s"])
    mid = dict(ordered[len(ordered) // 2])
    mid["runs_s"] = [r["wall_s"] for r in runs]
    mid["peak_mib"] = max(r["peak_mib"] for r in runs)
    return mid


# ----------------------------------------------------------------------------- child measurements


def _floor_count(trace: Path) -> dict:
    import duckdb

    con = duckdb.connect()
    t = time.perf_counter()
    n, s = con.execute(
        'SELECT count(*), sum(epoch_ms("end") - epoch_ms(start)) FROM read_parquet($f)',
        {"f": parquet_glob(trace, "spans")},
    ).fetchall()[0]
    return {"seconds": time.perf_counter() - t, "spans": n, "span_ms": s}


def _floor_read(trace: Path) -> dict:
    """Read every column the metric uses, from every table: the I/O and decoding limit."""
    import duckdb

    con = duckdb.connect()
    t = time.perf_counter()
    con.execute(
        'SELECT count(job_id), count(attempt), count(phase), max(start), max("end"), sum(cursor_start), '
        "sum(cursor_end), count(DISTINCT 1) FROM read_parquet($f)",
        {"f": parquet_glob(trace, "spans")},
    ).fetchall()
    con.execute(
        'SELECT count(job_id), count(attempt), max(start), max("end"), count(end_reason) FROM read_parquet($f)',
        {"f": parquet_glob(trace, "attempts")},
    ).fetchall()
    con.execute(
        "SELECT count(job_id), count(model), sum(gpus) FROM read_parquet($f)", {"f": parquet_glob(trace, "jobs")}
    ).fetchall()
    return {"seconds": time.perf_counter() - t}


def _ettcore(trace: Path, what: str, memory_limit: str) -> dict:
    """Load (typing + checks), then summarize, trend, or both on the same prepared trace,
    under DuckDB's memory limit."""
    from ettcore import metric
    from ettcore.trace import load_trace

    t = time.perf_counter()
    tr = load_trace(trace, memory_limit=memory_limit or None)
    load_s = time.perf_counter() - t
    out: dict = {"load_s": load_s}
    t = time.perf_counter()
    if what in ("summarize", "both"):
        jobs = metric.job_summary(tr)
        fleet = metric.fleet_summary(tr)
        out["summarize_s"] = time.perf_counter() - t
        out["jobs"] = jobs.height
        out["fleet_ett_pct"] = float(fleet["ett_pct"][0])
    t2 = time.perf_counter()
    if what in ("trend", "both"):
        tr_df = metric.trend(tr, "day")
        out["trend_s"] = time.perf_counter() - t2
        out["days"] = tr_df.height
    out["metric_s"] = time.perf_counter() - t
    out["batches"] = tr.attribution.batches if tr.attribution else None
    return out


def _sample_jobs(trace: Path, n: int) -> tuple[list[dict], list[dict], list[dict], int]:
    """Every k-th job (by job_id) of the trace, as plain dicts with integer-ms times; returns (jobs, attempts, spans,
    total jobs)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    total = con.execute("SELECT count(*) FROM read_parquet($f)", {"f": parquet_glob(trace, "jobs")}).fetchall()[0][0]
    step = max(1, total // n)
    con.execute(
        "CREATE TEMP TABLE pick AS SELECT job_id, model, gpus FROM "
        "(SELECT *, row_number() OVER (ORDER BY job_id) AS rn FROM read_parquet($f)) WHERE (rn - 1) % $k = 0 LIMIT $n",
        {"f": parquet_glob(trace, "jobs"), "k": step, "n": n},
    )

    def rows(q: str, f: str) -> list[dict]:
        cur = con.execute(q, {"f": f})
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    jobs = rows("SELECT job_id, model, gpus FROM pick WHERE $f IS NOT NULL", "x")
    atts = rows(
        "SELECT a.job_id, CAST(a.attempt AS BIGINT) AS attempt, epoch_ms(a.start) AS start, "
        'epoch_ms(a."end") AS "end", a.end_reason FROM read_parquet($f) AS a SEMI JOIN pick USING (job_id)',
        parquet_glob(trace, "attempts"),
    )
    spans = rows(
        "SELECT s.job_id, CAST(s.attempt AS BIGINT) AS attempt, s.phase, epoch_ms(s.start) AS start, "
        'epoch_ms(s."end") AS "end", s.cursor_start, s.cursor_end FROM read_parquet($f) AS s SEMI JOIN pick '
        "USING (job_id)",
        parquet_glob(trace, "spans"),
    )
    return jobs, atts, spans, total


def _reference(trace: Path, n: int) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))  # the oracle lives beside the tests, not in the package
    from reference import reference_metrics, reference_trend

    jobs, atts, spans, _ = _sample_jobs(trace, n)
    t = time.perf_counter()
    res = reference_metrics(jobs, atts, spans)
    m_s = time.perf_counter() - t
    t = time.perf_counter()
    reference_trend(jobs, atts, spans, "day")
    t_s = time.perf_counter() - t
    return {"jobs": len(res["jobs"]), "spans": len(spans), "summarize_s": m_s, "trend_s": t_s, "seconds": m_s + t_s}


def _goodput(trace: Path, n: int, step_s: float) -> dict:
    """Record each sampled job through GoodputRecorder into memory, then time GoodputCalculator.get_job_goodput."""
    import socket

    from ettcore.importers.goodput import MemoryLogger

    def refuse(*a, **k):
        raise RuntimeError("network access attempted by the goodput library during the benchmark")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse  # type: ignore[assignment]
    from ml_goodput_measurement.src import goodput

    jobs, atts, spans, _ = _sample_jobs(trace, n)
    by_job: dict[str, tuple[list, list]] = {j["job_id"]: ([], []) for j in jobs}
    for a in atts:
        by_job[a["job_id"]][0].append(a)
    for s in spans:
        by_job[s["job_id"]][1].append(s)
    step_ms = int(step_s * 1000)
    at = lambda ms: datetime.fromtimestamp(ms / 1000.0, tz=timezone.utc)  # noqa: E731
    rec_s = calc_s = 0.0
    steps = 0
    cache = tempfile.mkdtemp(prefix="ett-bench-goodput-")
    pcts = []
    for job_id, (ja, js) in by_job.items():
        log = MemoryLogger()
        t = time.perf_counter()
        rec = goodput.GoodputRecorder(job_id, "ett-bench", True, log)
        ja.sort(key=lambda a: a["attempt"])
        trains = sorted((s for s in js if s["phase"] == "train"), key=lambda s: s["start"])
        per_step = None
        for s in trains:  # cursor units per step, from the first train span with progress
            if (
                s["cursor_end"] is not None
                and s["cursor_start"] is not None
                and s["end"] > s["start"]
                and s["cursor_end"] > s["cursor_start"]
            ):
                per_step = (s["cursor_end"] - s["cursor_start"]) * step_ms / (s["end"] - s["start"])
                break
        for a in ja:
            rec.record_job_start_time(at(a["start"]))
            mine = [s for s in js if s["attempt"] == a["attempt"]]
            for phase, start_fn, end_fn in (
                ("hardware_setup", rec.record_tpu_init_start_time, rec.record_tpu_init_end_time),
                ("trainer_init", rec.record_training_preparation_start_time, rec.record_training_preparation_end_time),
                ("data_warmup", rec.record_data_loading_start_time, rec.record_data_loading_end_time),
            ):
                ph = [s for s in mine if s["phase"] == phase]
                if ph:
                    start_fn(at(min(s["start"] for s in ph)))
                    end_fn(at(max(s["end"] for s in ph)))
            for s in sorted((s for s in mine if s["phase"] == "train"), key=lambda s: s["start"]):
                first = int(round((s["cursor_start"] or 0.0) / per_step)) if per_step else 0
                k = 0
                for ts in range(s["start"], s["end"], step_ms):
                    rec.record_step_start_time(first + k, at(ts))
                    k += 1
                steps += k
        rec.record_job_end_time(at(ja[-1]["end"]))
        rec_s += time.perf_counter() - t
        t = time.perf_counter()
        calc = goodput.GoodputCalculator(job_id, "ett-bench", log, cache_dir=cache)
        pct, _b, _st = calc.get_job_goodput(include_badput_breakdown=True)
        calc_s += time.perf_counter() - t
        pcts.append(pct)
    return {
        "jobs": len(by_job),
        "spans": len(spans),
        "steps": steps,
        "record_s": rec_s,
        "seconds": calc_s,
        "mean_goodput_pct": sum(pcts) / max(1, len(pcts)),
    }


def child_main(kind: str, trace: Path, extra: list[str]) -> None:
    if kind in ("floor_count", "floor_read"):
        # the floors are cheap: the best of three runs, so a ratio to a floor is never flattered by a slow floor
        runs = [(_floor_count if kind == "floor_count" else _floor_read)(trace) for _ in range(3)]
        res = min(runs, key=lambda r: r["seconds"])
    elif kind == "generate":
        res = _generate(trace, int(extra[0]), int(extra[1]))
    elif kind == "store_fleet":
        import store_fleet

        res = store_fleet.build(trace, int(extra[0]), int(extra[1]))
    elif kind in ("summarize", "trend", "both"):
        res = _ettcore(trace, kind, extra[0])
    elif kind == "reference":
        res = _reference(trace, int(extra[0]))
    elif kind == "goodput":
        res = _goodput(trace, int(extra[0]), float(extra[1]))
    elif kind == "spark":
        from ettcore.engines import benchmark_engines

        res = benchmark_engines(
            trace,
            spark_master="local[*]",
            every="day",
            spark_conf={"spark.driver.memory": "8g"},
            memory_limit=extra[0] or None,
        )
        res["seconds"] = res["spark_summary_s"] + res["spark_trend_s"]
    else:
        raise SystemExit(f"unknown child measurement {kind!r}")
    print(json.dumps(res))


# ----------------------------------------------------------------------------- the run


def machine() -> dict:
    from importlib.metadata import version

    cpu = "unknown"
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "unknown"
    try:
        kb = int(
            next(ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal")).split()[1]
        )
        mem = f"{kb / 2**20:.1f} GiB"
    except (OSError, StopIteration):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": mem,
        "python": platform.python_version(),
        "os": platform.platform(),
        "duckdb": version("duckdb"),
        "polars": version("polars"),
        "load_average_at_start": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }


def ett_command() -> list[str]:
    """The ``ett`` command as a user runs it (the console script next to this Python)."""
    exe = Path(sys.executable).with_name("ett")
    if exe.is_file():
        return [str(exe)]
    return [sys.executable, "-c", "import sys; from ettcore.cli import main; sys.exit(main())"]


def bench_size(work: Path, n: int, args: argparse.Namespace) -> dict:
    print(f"== {n} jobs", flush=True)
    trace = make_fleet(work, n, args.seed, args.timeout)
    r: dict = {"jobs": n, "trace": str(trace), "repeat": args.repeat}
    tmo = args.timeout
    r["floor_count"] = child("floor_count", trace, [], tmo)
    r["spans"] = r["floor_count"].get("result", {}).get("spans")
    print(f"  spans: {r['spans']}", flush=True)
    r["floor_read"] = child("floor_read", trace, [], tmo)
    for kind in ("summarize", "trend", "both"):
        r[kind] = child(kind, trace, [args.memory_limit], tmo)
        print(f"  {kind}: {_brief(r[kind])}", flush=True)
    ett = ett_command()
    limit = ["--memory-limit", args.memory_limit] if args.memory_limit else []  # default: no flag, as a user runs it
    commands = {
        "summarize": [*ett, "summarize", str(trace), "--json", *limit],
        "trend": [*ett, "trend", str(trace), "--every", "day", "--json", *limit],
        "summarize_text": [*ett, "summarize", str(trace), *limit],
    }  # no flags: the terminal tables
    for name, cmd in commands.items():
        cold, cached, floors = [], [], []
        for _ in range(args.repeat):
            # the read floor again just before each pair of runs: a shared machine's speed drifts over a long run, and
            # a run over the floor measured next to it (paired) is moved much less by that drift
            floors.append(_sec(child("floor_read", trace, [], tmo)))
            with tempfile.TemporaryDirectory(prefix="ett-bench-cache-") as cache:
                env = {"ETT_CACHE_DIR": cache}  # an empty check cache: the first run checks the trace (cold)
                cold.append(measured(cmd, tmo, env))
                cached.append(measured(cmd, tmo, env))  # the same trace again: its clean verdict is kept (cached)
        r[f"cli_{name}"], r[f"cli_{name}_cached"] = median_of(cold), median_of(cached)
        r[f"cli_{name}"]["paired_x"] = paired_ratio(cold, floors)
        r[f"cli_{name}_cached"]["paired_x"] = paired_ratio(cached, floors)
        r[f"cli_{name}"]["floors_s"] = floors
        print(
            f"  ett {name}: cold {[round(x.get('wall_s', 0), 1) for x in cold]} s, "
            f"cached {[round(x.get('wall_s', 0), 1) for x in cached]} s, "
            f"read floor before each {[None if f is None else round(f, 2) for f in floors]} s",
            flush=True,
        )
    if args.reference_jobs > 0:
        r["reference"] = child("reference", trace, [str(min(n, args.reference_jobs))], tmo)
        print(f"  reference: {_brief(r['reference'])}", flush=True)
    if args.goodput_jobs > 0:
        r["goodput"] = child("goodput", trace, [str(min(n, args.goodput_jobs)), str(args.goodput_step_s)], tmo)
        print(f"  goodput: {_brief(r['goodput'])}", flush=True)
    if args.spark_max_jobs and n <= args.spark_max_jobs:
        r["spark"] = child("spark", trace, [args.memory_limit], tmo)
        print(f"  spark: {_brief(r['spark'])}", flush=True)
    r["floor_read_after"] = child("floor_read", trace, [], tmo)  # how far the machine drifted during this size's run
    return r


# ----------------------------------------------------------------------------- the fleet store


def output_digest(path: Path, named: str) -> str | None:
    """SHA-256 of a command's output with what names its input blanked (the JSON envelope's ``input`` object: its
    path, ``named``, and its kind, a trace or a store): two commands that printed the same figures for different
    inputs have the same digest."""
    import hashlib
    import re

    if not path.is_file():
        return None
    h = hashlib.sha256()
    with path.open("rb") as f:
        head = f.read(1 << 16)
        head = re.sub(rb'"input": \{[^}]*\}', b'"input": {}', head, count=1).replace(named.encode(), b"")
        h.update(head)
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def _steps(path: Path) -> dict[str, float]:
    """The store's profile (ETT_STORE_PROFILE lines on stderr): seconds per step, summed over repeats of a step."""
    out: dict[str, float] = {}
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("ett store: ") and line.endswith(" s"):
                name, _, secs = line[len("ett store: ") :].partition(" +")
                out[name] = out.get(name, 0.0) + float(secs[:-2])
    return out


def bench_store(work: Path, n: int, args: argparse.Namespace) -> dict:
    """The fleet store at ``n`` jobs (benchmarks/store_fleet.py): build, queries, one more day, rebuild; each
    command ``--repeat`` times, the read floor of the 30-day trace measured just before each run or pair."""
    import shutil

    import store_fleet

    print(f"== store: {n} jobs (30 days) + one more day", flush=True)
    tmo = args.timeout
    folder = store_fleet.store_fleet_path(work, n, args.seed)
    made = child("store_fleet", folder, [str(n), str(args.seed)], tmo)
    if "error" in made:
        raise SystemExit(f"preparing {folder} failed: {made['error']}")
    base, day, union = folder / "base", folder / "day", folder / "union"
    r: dict = {"jobs": n, "split": made["result"], "repeat": args.repeat, "folder": str(folder)}
    r["floor_read"] = child("floor_read", base, [], tmo)
    print(f"  split: {json.dumps(r['split'])}", flush=True)
    ett = ett_command()
    profile = {"ETT_STORE_PROFILE": "1"}

    def cold(cmd: list[str], keep: Path | None = None, keep_err: Path | None = None) -> dict:
        # an empty check cache: the source is checked, as on its first day
        with tempfile.TemporaryDirectory(prefix="ett-bench-cache-") as cache:
            return measured(cmd, tmo, {"ETT_CACHE_DIR": cache, **profile}, keep, keep_err)

    def floor() -> float | None:
        return _sec(child("floor_read", base, [], tmo))

    runs: dict[str, list[dict]] = {}
    floors: dict[str, list] = {}

    def add(key: str, m: dict, f: float | None) -> None:
        runs.setdefault(key, []).append(m)
        floors.setdefault(key, []).append(f)

    parts = set(args.store_parts.split(","))
    r["parts"] = sorted(parts)
    with tempfile.TemporaryDirectory(prefix="ett-bench-store-", dir=work) as tmpd:
        tmp = Path(tmpd)
        built = tmp / "built.duckdb"
        # 3. building the store from the 30-day trace, paired with a cold summarize of that trace (without the part
        # "build": built once, for the parts that read the store, and not paired)
        for i in range(args.repeat if "build" in parts else 1):
            f = floor()
            if "build" in parts:
                add("summarize_trace", cold([*ett, "summarize", str(base), "--json"], tmp / "summarize-trace.json"), f)
            target = built if i == 0 else tmp / "again.duckdb"
            target.unlink(missing_ok=True)
            add("build", cold([*ett, "ingest", str(target), str(base)], tmp / "build.out", tmp / f"build-{i}.err"), f)
            (tmp / "again.duckdb").unlink(missing_ok=True)
            print(
                f"  pair {i}: summarize {runs.get('summarize_trace', [{}])[-1].get('wall_s')} s, build "
                f"{runs['build'][-1].get('wall_s')} s, floor {f}",
                flush=True,
            )
        # 2. queries on the store, as processes
        queries = {
            "q_summarize": [*ett, "summarize", str(built), "--json"],
            "q_trend": [*ett, "trend", str(built), "--every", "day", "--json"],
            "q_export": [*ett, "export", "prometheus", str(built)],
        }
        for i in range(args.repeat if "queries" in parts else 0):
            for key, cmd in queries.items():
                add(key, measured(cmd, tmo, None, tmp / f"{key}.out"), floor())
        if "queries" in parts and "build" in parts:
            print("  queries: " + ", ".join(f"{k} {[round(m.get('wall_s', 0), 2) for m in runs[k]]}" for k in queries))
            r["same_as_trace"] = output_digest(tmp / "summarize-trace.json", str(base)) == output_digest(
                tmp / "q_summarize.out", str(built)
            )
        # 1. one more day: a refresh of a copy of the store, paired with a cold summarize of the day's data alone
        refreshed = tmp / "refreshed.duckdb"
        for i in range(args.repeat if "refresh" in parts else 0):
            shutil.copyfile(built, refreshed)
            f = floor()
            add("summarize_day", cold([*ett, "summarize", str(day), "--json"], tmp / "summarize-day.json"), f)
            add(
                "refresh",
                cold([*ett, "ingest", str(refreshed), str(day)], tmp / f"refresh-{i}.out", tmp / f"refresh-{i}.err"),
                f,
            )
            print(
                f"  pair {i}: summarize day {runs['summarize_day'][-1].get('wall_s')} s, refresh "
                f"{runs['refresh'][-1].get('wall_s')} s",
                flush=True,
            )
        out = (
            (tmp / "refresh-0.out").read_text(errors="replace").splitlines()
            if (tmp / "refresh-0.out").is_file()
            else []
        )
        r["refresh_printed"] = {"lines": len(out), "head": out[:4], "tail": out[-2:] if len(out) > 4 else []}
        if "refresh" in parts:
            measured([*ett, "summarize", str(refreshed), "--json"], tmo, None, tmp / "refreshed.json")
        # ... against rebuilding the store from nothing with the same jobs (the latest version of each)
        rebuilt = tmp / "rebuilt.duckdb"
        for i in range(args.repeat if "rebuild" in parts else 0):
            rebuilt.unlink(missing_ok=True)
            add("rebuild", cold([*ett, "ingest", str(rebuilt), str(union)], None, tmp / f"rebuild-{i}.err"), floor())
        if "rebuild" in parts and "refresh" in parts:
            print(f"  rebuild {[round(m.get('wall_s', 0), 1) for m in runs['rebuild']]} s", flush=True)
            measured([*ett, "summarize", str(rebuilt), "--json"], tmo, None, tmp / "rebuilt.json")
            r["refreshed_same_as_rebuilt"] = output_digest(tmp / "refreshed.json", str(refreshed)) == output_digest(
                tmp / "rebuilt.json", str(rebuilt)
            )
        r["store_bytes"] = built.stat().st_size if built.is_file() else None
        r["steps"] = {k: _steps(tmp / f"{k}-0.err") for k in ("build", "refresh", "rebuild")}
    for key, ms in runs.items():
        r[key] = median_of(ms)
        r[key]["paired_x"] = paired_ratio(ms, floors[key])
        r[key]["floors_s"] = floors[key]
    r["pairs"] = {
        "build_over_summarize": _pair_ratio(runs.get("build", []), runs.get("summarize_trace", [])),
        "refresh_over_summarize_day": _pair_ratio(runs.get("refresh", []), runs.get("summarize_day", [])),
    }
    r["floor_read_after"] = child("floor_read", base, [], tmo)
    return r


def _pair_ratio(a: list[dict], b: list[dict]) -> float | None:
    """The median over the pairs run back to back of a's seconds / b's."""
    if not a or len(a) != len(b) or any("error" in x for x in a + b):
        return None
    return statistics.median(x["wall_s"] / y["wall_s"] for x, y in zip(a, b))


def paired_ratio(runs: list[dict], floors: list[float | None]) -> float | None:
    """The median over runs of (a run's seconds / the read floor measured just before it); None if any is missing."""
    if len(runs) != len(floors) or not runs or any("error" in r or f is None or f <= 0 for r, f in zip(runs, floors)):
        return None
    return statistics.median(r["wall_s"] / f for r, f in zip(runs, floors))


def _brief(m: dict) -> str:
    if "error" in m:
        return "ERROR " + m["error"]
    return (
        json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in m.get("result", {}).items()})
        + f" peak {m['peak_mib']:.0f} MiB"
    )


def _sec(m: dict, key: str = "seconds") -> float | None:
    if not m or "error" in m:
        return None
    return m.get("result", {}).get(key)


def rows_for(r: dict) -> list[dict]:
    """One table row a measurement: seconds, peak MiB, s per M spans, ratios to the floors."""
    spans = r.get("spans") or 0
    fc, fr = _sec(r.get("floor_count", {})), _sec(r.get("floor_read", {}))
    out = []

    def add(name: str, secs: float | None, m: dict, note: str = "", per_spans: int | None = None):
        if secs is None:
            out.append({"what": name, "note": m.get("error", "not run") if m else "not run"})
            return
        sp = per_spans if per_spans is not None else spans
        out.append(
            {
                "what": name,
                "seconds": secs,
                "peak_mib": m.get("peak_mib"),
                "s_per_m_spans": secs / (sp / 1e6) if sp else None,
                "x_read_floor": secs / fr if fr else None,
                "x_count_floor": secs / fc if fc else None,
                "note": note,
            }
        )

    add("floor: count(*) + sum of span durations", fc, r.get("floor_count", {}))
    add("floor: read every column the metric uses", fr, r.get("floor_read", {}))
    s, t, b = r.get("summarize", {}), r.get("trend", {}), r.get("both", {})
    add("load_trace (spans read and typed once into the span store + all data checks)", _sec(s, "load_s"), s)
    add("summarize (metric only, after load)", _sec(s, "summarize_s"), s)
    add("trend --every day (metric only, after load)", _sec(t, "trend_s"), t)
    nb = (b.get("result") or {}).get("batches")
    add(
        "summarize + trend, one pass (metric only)",
        _sec(b, "metric_s"),
        b,
        f"attribution in {nb} batches of jobs" if nb and nb > 1 else "",
    )
    lb = _sec(b, "load_s")
    add("summarize + trend, one pass, incl. load+checks", None if lb is None else lb + _sec(b, "metric_s"), b)
    for key, label in (
        ("cli_summarize", "`ett summarize --json`"),
        ("cli_trend", "`ett trend --every day --json`"),
        ("cli_summarize_text", "`ett summarize` (no flags: text tables)"),
    ):
        for suffix, how in (
            ("", "cold: checks run, empty check cache"),
            ("_cached", "cached: clean verdict kept, checks skipped"),
        ):
            m = r.get(key + suffix, {})
            runs = ", ".join(f"{x:.1f}" for x in m.get("runs_s", []))
            px = m.get("paired_x")
            add(
                f"{label} (command, default settings, {how})",
                None if not m or "error" in m else m.get("wall_s"),
                m,
                (f"median of {runs} s" if runs else "")
                + ("" if px is None else f"; paired: x{px:.1f} the floor measured just before"),
            )
    ref = r.get("reference", {})
    if ref:
        res = ref.get("result", {})
        add(
            f"reference implementation, {res.get('jobs', '?')}-job subsample (summarize + trend)",
            _sec(ref),
            ref,
            note="per-span figure over the subsample's spans",
            per_spans=res.get("spans"),
        )
    gp = r.get("goodput", {})
    if gp:
        res = gp.get("result", {})
        add(
            f"ml-goodput-measurement calculator, {res.get('jobs', '?')}-job subsample",
            _sec(gp),
            gp,
            note=f"{res.get('steps', '?')} recorded steps; recording took {res.get('record_s', 0):.1f} s (not counted)",
            per_spans=res.get("spans"),
        )
    sk = r.get("spark", {})
    if sk:
        res = sk.get("result", {})
        add(
            "Spark local[*], same queries (summarize + trend, after its load)",
            _sec(sk),
            sk,
            note=(
                f"with its read + fingerprint ({res.get('spark_open_s', 0):.1f} s, not in the seconds column): "
                f"x{res.get('spark_over_duckdb', float('nan')):.1f} DuckDB's summarize + trend on this fleet; "
                f"largest relative difference {res.get('max_rel_diff', float('nan')):.1e}; "
                f"session start {res.get('spark_session_s', 0):.1f} s not counted"
            )
            if "error" not in sk
            else sk.get("error", ""),
        )
    return out


def fmt(v, digits=2) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.{digits}f}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def targets(results: list[dict]) -> list[str]:
    """The metric's speed targets at the largest size run, as a table: the measured ratio, the target,
    met or the gap and its limit."""
    done = [r for r in results if _sec(r.get("floor_read", {})) is not None]
    if not done:
        return ["no size finished"]
    big = max(done, key=lambda r: r["jobs"])
    fr = _sec(big["floor_read"])
    n = big["jobs"]
    rows = []

    def row(
        what: str, value: float | None, target: float, unit: str, at_most: bool, limit: str, paired: float | None = None
    ) -> None:
        pair = "" if paired is None else f"{paired:,.2f}{unit} ({'met' if paired <= target else 'not met'})"
        if value is None:
            rows.append(f"| {what} | not measured | {'<=' if at_most else '>='} {target:g}{unit} | | {pair} | |")
            return
        ok = value <= target if at_most else value >= target
        gap = (
            "met"
            if ok
            else f"NOT MET: {value / target:.2f}x the target"
            if at_most
            else f"NOT MET: {target / value:.2f}x short"
        )
        rows.append(
            f"| {what} | {value:,.2f}{unit} | {'<=' if at_most else '>='} {target:g}{unit} | {gap} | {pair} | "
            f"{'' if ok else limit} |"
        )

    nb = (big.get("both", {}).get("result") or {}).get("batches") or 1
    limit1 = (
        "the attribution: one window over every event of a job (a span start, mostly), sorted per job, with a lead, "
        f"two last values and a running maximum, about half of the command ({nb} batch(es) of jobs); "
        "then the one typed read and write of the spans at load (the span store), the checks (cold), "
        "the output of a million jobs and the interpreter"
    )
    said = False  # the limit is written out on the first row of target 1 not met, then referred to
    for key, label in (
        ("cli_summarize", "`ett summarize --json`"),
        ("cli_trend", "`ett trend --every day --json`"),
        ("cli_summarize_text", "`ett summarize` (no flags)"),
    ):
        for suffix, how in (("", "cold (checks run)"), ("_cached", "cached (checks skipped)")):
            m = big.get(key + suffix, {})
            sec = None if not m or "error" in m else m.get("wall_s")
            x = None if sec is None else sec / fr
            row(
                f"1. {label}, default settings, {how}, x read floor",
                x,
                15,
                "x",
                True,
                "as above" if said else limit1,
                paired=None if sec is None else m.get("paired_x"),
            )
            said = said or (x is not None and x > 15)
    peaks = [
        big.get(k, {}).get("peak_mib")
        for k in (
            "cli_summarize",
            "cli_trend",
            "cli_summarize_text",
            "cli_summarize_cached",
            "cli_trend_cached",
            "cli_summarize_text_cached",
        )
    ]
    peaks = [p for p in peaks if p is not None]
    row(
        "2. peak RSS of the commands, default settings (MiB)",
        max(peaks) if peaks else None,
        4096,
        " MiB",
        True,
        "DuckDB's buffers beyond the budget",
    )
    b = _sec(big.get("both", {}), "metric_s")
    row(
        "3. metric alone (summarize + trend, one pass, in process), x read floor",
        None if b is None else b / fr,
        10,
        "x",
        True,
        "the attribution's window (see 1.)",
    )
    by_n = {r["jobs"]: r for r in done}
    if 100_000 in by_n and n > 100_000 and b is not None and _sec(by_n[100_000].get("both", {}), "metric_s"):

        def per_m(r):
            return _sec(r.get("both", {}), "metric_s") / (r["spans"] / 1e6)

        row(
            f"3. metric time per span at {n:,} / at 100,000 jobs",
            per_m(big) / per_m(by_n[100_000]),
            1.2,
            "",
            True,
            "more batches at 1M than at 100k under the same budget (each batch reads its own part of the span store)",
        )
    else:
        rows.append("| 3. time per span, largest / 100k | not evaluated (run with --full) | <= 1.2 | | | |")
    gp_c = [r for r in done if _sec(r.get("goodput", {})) is not None]
    if gp_c:
        r = max(gp_c, key=lambda r: r["jobs"])
        res = r["goodput"]["result"]
        alt = _sec(r["goodput"]) / res["jobs"]
        ett = (_sec(r["both"], "metric_s") + _sec(r["both"], "load_s")) / r["jobs"]
        row(
            f"4. per job, goodput calculator / ettcore (load + checks + metric), at {r['jobs']:,} jobs",
            alt / ett,
            100,
            "x",
            False,
            "",
        )
    else:
        rows.append("| 4. per job vs the goodput calculator | not measured | >= 100x | | | |")
    floors = [
        f
        for key in ("cli_summarize", "cli_trend", "cli_summarize_text")
        for f in big.get(key, {}).get("floors_s", [])
        if f
    ]
    after = _sec(big.get("floor_read_after", {}))
    drift = ""
    if floors:
        every = [fr, *floors, *([after] if after else [])]
        drift = (
            f"The read floor (best of 3 each time) was {fr:.2f} s at the start of this size, "
            f"{min(floors):.2f} to {max(floors):.2f} s when measured again before each pair of command runs, and "
            + ("not measured" if after is None else f"{after:.2f} s")
            + " at the end: the machine's speed drifted by "
            f"{100 * (max(every) / min(every) - 1):.0f} % within the run."
        )
    return [
        f"Targets at {n:,} jobs (ratios within this one run; the commands: median of {big.get('repeat', '?')} runs "
        "each). The ratios depend on the CPU, not only on the code: the floor is a columnar scan and the metric mostly "
        "sorts, so compare runs made on one machine. *Measured* divides by the floor at the start of the size; "
        "*paired* is the median over the runs of each run over the floor "
        "measured just before it, which a slow drift of the machine's speed during the run moves much less.",
        "",
        drift,
        "",
        "| target | measured | target | met / gap | paired | what limits it |",
        "|---|---:|---:|---|---|---|",
        *rows,
    ]


def write_report(results: list[dict], mach: dict, args: argparse.Namespace, out: Path) -> None:
    L = [
        "# Benchmarks: the ETT metric at fleet scale",
        "",
        "Generated by `make bench` (`benchmarks/run.py`); do not edit by hand. "
        "**All fleets are synthetic** (scenario `fleet`, `ettcore.synthetic.generator`, seed "
        f"{args.seed}; Parquet in parts). Each measurement ran in its own process; times are that process's own "
        "`perf_counter` around the work (the `ett` commands: the whole command, interpreter start included); "
        "peak memory is the process's peak resident set (`ru_maxrss` from `wait4`). Every ettcore measurement (in "
        "process and the `ett` commands) ran with DuckDB's memory limit at "
        f"{args.memory_limit or 'its default budget (3 GB)'}: above it DuckDB spills, and a "
        "trace whose spans do not fit in half of it is attributed in batches of jobs "
        "(`ettcore.metric.attribution_batches`).",
        "",
        "## Machine",
        "",
    ]
    L += [f"- {k}: {v}" for k, v in mach.items()]
    L += [
        f"- load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (shared machine: "
        "other work ran at the same time)",
        f"- run at {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        "",
    ]
    for r in results:
        L += [
            f"## {r['jobs']:,} jobs, {r.get('spans') or 0:,} spans",
            "",
            "| measurement | seconds | peak MiB | s per M spans | x read floor | x count floor | note |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for row in rows_for(r):
            L.append(
                f"| {row['what']} | {fmt(row.get('seconds'))} | {fmt(row.get('peak_mib'), 0)} | "
                f"{fmt(row.get('s_per_m_spans'))} | {fmt(row.get('x_read_floor'), 1)} | "
                f"{fmt(row.get('x_count_floor'), 1)} | {row.get('note', '')} |"
            )
        L.append("")
    L += [
        "## Targets",
        "",
        *targets(results),
        "",
        "The reference and goodput rows time a subsample (every k-th job); their per-job time is compared with "
        "ettcore's per-job time over the whole fleet, load and checks included (in process, "
        f"check cache off). The goodput calculator sees each train span as one step every {args.goodput_step_s:g} s: "
        "the library's users record every step, and a recommendation model's steps take about a second (faster steps "
        "would mean more records and a slower calculator); "
        "only `GoodputCalculator.get_job_goodput` is timed, not the recording.",
        "",
        "The `ett` commands run as a user runs them: no flag, so DuckDB's memory budget is the default (3 GB, "
        "`ettcore.trace.memory`). *Cold* runs start with an empty check cache (`ETT_CACHE_DIR` a new folder): "
        "the data checks run; *cached* runs follow a cold run on the same, unchanged files, so the checks are skipped "
        "(`ettcore.trace.check_cache`). Every other measurement runs with the cache off (`ETT_CHECK_CACHE=0`).",
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(L) + "\n", encoding="utf-8")


STORE_ROWS = (  # key, what it is
    ("summarize_trace", "`ett summarize TRACE --json`, 30-day trace, cold (checks run)"),
    ("build", "`ett ingest STORE TRACE`: building the store from the 30-day trace, cold"),
    ("q_summarize", "`ett summarize STORE --json`"),
    ("q_trend", "`ett trend STORE --every day --json`"),
    ("q_export", "`ett export prometheus STORE`"),
    ("summarize_day", "`ett summarize DAY --json`: the day's data alone, cold"),
    ("refresh", "`ett ingest STORE DAY`: one more day into a copy of the store, cold"),
    ("rebuild", "`ett ingest NEW UNION`: rebuilding the store with the same jobs, cold"),
)


def _said(r: dict, key: str) -> str:
    """An exactness check of one size: yes, NO, or not measured (``--store-parts`` left out a side of it)."""
    return "not measured (a part left out)" if key not in r else "yes" if r[key] else "NO"


def store_section(results: list[dict]) -> list[str]:
    """The fleet store's measurements and its speed targets, as Markdown lines."""
    L: list[str] = []
    for r in results:
        sp = r["split"]
        fr = _sec(r.get("floor_read", {}))
        L += [
            f"## Fleet store: {sp['base']['jobs']:,} jobs over 30 days ({sp['base']['spans']:,} spans), then one day",
            "",
            f"The day: {sp['day']['new_jobs']:,} new jobs and {sp['day']['changed_jobs']:,} older jobs with a "
            f"corrected row ({sp['day']['jobs']:,} jobs, {sp['day']['spans']:,} spans). Store file after the build: "
            f"{(r.get('store_bytes') or 0) / 2**20:,.0f} MiB. Each command ran {r['repeat']} times (median shown); "
            "*x floor* is the median over the runs of each run over the read floor of the 30-day trace measured just "
            "before it.",
            "",
            "| measurement | seconds (median) | runs (s) | peak MiB | x floor (paired) |",
            "|---|---:|---|---:|---:|",
            f"| read floor: every column the metric uses, 30-day trace | {fmt(fr)} | | | 1.0 |",
        ]
        for key, label in STORE_ROWS:
            m = r.get(key, {})
            if not m or "error" in m:
                L.append(f"| {label} | {m.get('error', 'not run') if m else 'not run'} | | | |")
                continue
            L.append(
                f"| {label} | {fmt(m['wall_s'])} | {', '.join(f'{x:.1f}' for x in m.get('runs_s', []))} | "
                f"{fmt(m.get('peak_mib'), 0)} | {fmt(m.get('paired_x'), 2)} |"
            )
        L += ["", *store_targets(r), ""]
        steps = r.get("steps") or {}
        if any(steps.values()):
            L += [
                "Where a build, a refresh and a rebuild spent their time (the first run of each; seconds from one "
                "step of `ettcore.store` to the next, `ETT_STORE_PROFILE=1`; load and checks come before "
                "`attached`):",
                "",
                "| step | " + " | ".join(k for k in steps) + " |",
                "|---|" + "---:|" * len(steps),
            ]
            names = list(dict.fromkeys(n for v in steps.values() for n in v))
            for name in names:
                L.append(f"| {name} | " + " | ".join(fmt(steps[k].get(name)) for k in steps) + " |")
            L.append("")
        pr = r.get("refresh_printed") or {}
        if pr.get("head"):
            L += [
                f"What the refresh printed (first run; {pr['lines']:,} lines: the summary, then a note a replaced "
                "job):",
                "",
                "```",
                *pr["head"],
                *(["..."] + pr["tail"] if pr.get("tail") else []),
                "```",
                "",
            ]
        L += [
            "Exactness at this size: `ett summarize STORE --json` printed the same figures as `ett summarize TRACE "
            f"--json` (every byte but the input's name): **{_said(r, 'same_as_trace')}**; the refreshed store and "
            f"the rebuilt one printed the same figures: **{_said(r, 'refreshed_same_as_rebuilt')}**.",
            "",
        ]
    return L


def store_targets(r: dict) -> list[str]:
    """The fleet store's speed targets for one size: measured, paired, met or the gap."""
    rows = []

    def sec(key: str) -> float | None:
        m = r.get(key, {})
        return None if not m or "error" in m else m.get("wall_s")

    def px(key: str) -> float | None:
        m = r.get(key, {})
        return None if not m or "error" in m else m.get("paired_x")

    def ratio(a: float | None, b: float | None) -> float | None:
        return None if a is None or not b else a / b

    def row(what: str, value: float | None, paired: float | None, target: float, how: str) -> None:
        def judge(v: float | None) -> str:
            return "" if v is None else ("met" if v <= target else f"NOT MET ({v / target:.2f}x the target)")

        rows.append(
            f"| {what} | {fmt(value, 3) if value is not None else 'not measured'} | {judge(value)} | "
            f"{fmt(paired, 3) if paired is not None else ''} | {judge(paired)} | <= {target:g} | {how} |"
        )

    pairs = r.get("pairs") or {}
    row(
        "1. refresh / cold `summarize` of the day alone",
        ratio(sec("refresh"), sec("summarize_day")),
        pairs.get("refresh_over_summarize_day"),
        2,
        "paired: median over the pairs run back to back",
    )
    row(
        "1. refresh / rebuilding the store",
        ratio(sec("refresh"), sec("rebuild")),
        ratio(px("refresh"), px("rebuild")),
        0.10,
        "paired: each over the floor just before it",
    )
    for key, label, target in (
        ("q_summarize", "2. `summarize --json` on the store / cold `summarize` of the trace", 0.2),
        ("q_trend", "2. `trend --every day --json` on the store / cold `summarize` of the trace", 0.1),
        ("q_export", "2. `export prometheus` on the store / cold `summarize` of the trace", 0.1),
    ):
        row(
            label,
            ratio(sec(key), sec("summarize_trace")),
            ratio(px(key), px("summarize_trace")),
            target,
            "paired: each over the floor just before it",
        )
    row(
        "3. building the store / cold `summarize` of the trace",
        ratio(sec("build"), sec("summarize_trace")),
        pairs.get("build_over_summarize"),
        1,
        "paired: median over the pairs run back to back",
    )
    peaks = [r[k]["peak_mib"] for k, _ in STORE_ROWS if r.get(k) and "peak_mib" in r[k]]
    row("4. peak RSS of every command above, default settings (MiB)", max(peaks) if peaks else None, None, 4096, "")
    fl = [f for k, _ in STORE_ROWS for f in (r.get(k, {}).get("floors_s") or []) if f]
    after = _sec(r.get("floor_read_after", {}))
    every = [x for x in [_sec(r.get("floor_read", {})), *fl, after] if x]
    noise = (
        f"The read floor was measured {len(every)} times in this run: {min(every):.2f} to {max(every):.2f} s, a "
        f"spread of {100 * (max(every) / min(every) - 1):.0f} % (the machine is shared; the paired ratios move less "
        "with it)."
        if every
        else ""
    )
    return [
        f"Targets at {r['jobs']:,} jobs (ratios within this run, on this machine):",
        "",
        "| target | ratio of medians | | paired | | target | paired how |",
        "|---|---:|---|---:|---|---:|---|",
        *rows,
        "",
        noise,
    ]


def write_store_report(results: list[dict], mach: dict, args: argparse.Namespace, out: Path) -> None:
    L = [
        "# Benchmarks: the fleet store",
        "",
        'Generated by `make bench ARGS="--store"` (`benchmarks/run.py`, data from `benchmarks/store_fleet.py`); do '
        "not edit by hand. **All fleets are synthetic**: the `fleet` scenario (`ettcore.synthetic.generator`, seed "
        f"{args.seed}) with its arrivals compressed into 31 days, n x 31 / 30 jobs. The *store* holds the jobs that "
        "start in the first 30 days (all their rows); *one more day* is every job that starts on day 31 plus 1 % "
        "of the older jobs (job number 7 modulo 100) with one row corrected (the end of the job's last span 1 s "
        "earlier), each job whole, as a daily export brings them; the *union* is the latest version of every job. "
        "Every command ran as a user runs it (no flag: DuckDB's default memory budget, 3 GB), in its own process; "
        "seconds are the process's wall time, start-up included; peak memory is its peak resident set "
        "(`ru_maxrss`). *Cold*: an empty check cache (`ETT_CACHE_DIR` a new folder), so the source is checked.",
        "",
        "## Machine",
        "",
        *[f"- {k}: {v}" for k, v in mach.items()],
        f"- load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (shared machine: other work ran "
        "at the same time)",
        f"- run at {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        "",
        *store_section(results),
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(L) + "\n", encoding="utf-8")


def write_chart(results: list[dict], out_base: Path) -> Path | None:
    try:
        import altair as alt
    except ImportError:
        return None
    recs = []
    for r in results:
        for row in rows_for(r):
            if row.get("seconds") is not None and row.get("s_per_m_spans") is not None:
                recs.append(
                    {
                        "fleet": f"{r['jobs']:,} jobs (synthetic)",
                        "measurement": row["what"],
                        "s_per_m_spans": row["s_per_m_spans"],
                    }
                )
    if not recs:
        return None
    data = alt.Data(values=recs)
    chart = (
        alt.Chart(data, title="Seconds per million spans (log scale), synthetic fleets")
        .mark_point(filled=True, size=90)
        .encode(
            y=alt.Y("measurement:N", sort=None, title=None, axis=alt.Axis(labelLimit=460)),
            x=alt.X("s_per_m_spans:Q", scale=alt.Scale(type="log"), title="seconds per million spans (log)"),
            color=alt.Color("fleet:N", title="fleet"),
            shape=alt.Shape("fleet:N", title="fleet"),
        )
        .properties(width=520)
    )
    png = out_base.with_suffix(".png")
    try:
        chart.save(str(png), scale_factor=1.5)
        return png
    except Exception:  # PNG export needs vl-convert; fall back to HTML
        html = out_base.with_suffix(".html")
        chart.save(str(html))
        return html


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sizes", nargs="*", type=int, help="fleet sizes in jobs (default 10000 100000)")
    p.add_argument("--full", action="store_true", help="also run 1,000,000 jobs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--work", type=Path, default=GENERATED_DIR, help="where generated fleets are kept (reused when present)"
    )
    p.add_argument("--report", type=Path, default=REPORT_DIR / "benchmarks.md")
    p.add_argument("--reference-jobs", type=int, default=1000, help="jobs in the reference subsample (0: skip)")
    p.add_argument("--goodput-jobs", type=int, default=10, help="jobs in the goodput-calculator subsample (0: skip)")
    p.add_argument(
        "--goodput-step-s",
        type=float,
        default=1.0,
        help="seconds of training per recorded step for the goodput library (default 1: one step a second, "
        "as its users log)",
    )
    p.add_argument(
        "--repeat", type=int, default=3, help="runs of each `ett` command, cold and cached (the table gives the median)"
    )
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed per measurement")
    p.add_argument(
        "--spark-max-jobs",
        type=int,
        default=100_000,
        help="run the Spark engine beside DuckDB on fleets up to this many jobs (0: never; needs Java and pyspark)",
    )
    p.add_argument(
        "--memory-limit",
        default="",
        help="DuckDB memory limit for every ettcore measurement (default: none given, so ettcore's default budget, "
        "3 GB; see ettcore.trace.memory)",
    )
    p.add_argument(
        "--store",
        action="store_true",
        help="the fleet store's benchmark only (build, queries, one more day, rebuild; default 100,000 "
        "jobs, 1,000,000 with --full), into reports/benchmarks-store.md",
    )
    p.add_argument(
        "--store-parts",
        default="build,queries,refresh,rebuild",
        help="with --store: the parts to measure, of build (paired with a cold summarize of the trace), queries, "
        "refresh (paired with a cold summarize of the day) and rebuild; the store is built once regardless",
    )
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child_main(args.child[0], Path(args.child[1]), args.child[2:])
        return 0
    mach = machine()
    print("machine:", json.dumps(mach), flush=True)
    store_report = args.report.with_name("benchmarks-store.md")
    if args.store:
        sizes = args.sizes or [100_000]
        if args.full and 1_000_000 not in sizes:
            sizes.append(1_000_000)
        stored = [bench_store(args.work, n, args) for n in sizes]
        write_store_report(stored, mach, args, store_report)
        store_report.with_suffix(".json").write_text(
            json.dumps({"machine": mach, "results": stored}, indent=1, default=str) + "\n"
        )
        print(store_report.read_text(encoding="utf-8"))
        print(f"wrote {store_report}")
        return 0
    sizes = args.sizes or [10_000, 100_000]
    if args.full and 1_000_000 not in sizes:
        sizes.append(1_000_000)
    results = [bench_size(args.work, n, args) for n in sizes]
    stored = [bench_store(args.work, 1_000_000, args)] if args.full else []  # the store at the largest size too
    write_report(results, mach, args, args.report)
    if stored:
        with args.report.open("a", encoding="utf-8") as f:
            f.write("\n".join(["", *store_section(stored)]) + "\n")
    args.report.with_suffix(".json").write_text(
        json.dumps({"machine": mach, "results": results, "store": stored}, indent=1, default=str) + "\n"
    )
    chart = write_chart(results, args.report.with_name("benchmarks"))
    print(args.report.read_text(encoding="utf-8"))
    print(f"wrote {args.report}" + (f" and {chart}" if chart else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
