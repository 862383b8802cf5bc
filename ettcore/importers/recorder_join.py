"""Join a recorder run folder's in-job spans into the runs of a trace imported from a scheduler.

The scheduler's accounting gives the attempts and the queue; the recorder,
running inside each job, gives the phases of each run.  They meet on
``(job_id, attempt)``: the recorder takes both from the scheduler's environment
(:func:`ettcore.integrations.slurm.job_from_environment`).

Rules (each applied with a note in the import report):

- a span inside its run is kept as recorded;
- a span sticking out of its run by at most ``clock_tolerance_s`` is clipped to
  the run (a ``train`` span's cursor prorated linearly); one left with no length
  is dropped;
- a span further out, or in a run or job the accounting does not have, is
  dropped and listed (job, attempt, phase, by how much) -- never moved;
- a span still open when its run ended is closed at the run's end in the
  accounting (a ``train`` span at its last ``progress`` record, as the recorder
  always does);
- the recorder's ``job`` record adds its labels (``variant`` ...) to the job and
  gives its ``model``; the accounting's GPUs stay;
- the recorder's own attempt records, if any, are not used.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import polars as pl

from ettcore.importers.frames import TraceFrames
from ettcore.importers.import_report import FileReport, ImportReport
from ettcore.importers.recorder import collect, rank_timing_frame, read_rank_timing


def _seconds(df: pl.DataFrame, cols: tuple[str, ...]) -> pl.DataFrame:
    return df.with_columns([(pl.col(c).dt.epoch("us").cast(pl.Float64) / 1e6).alias(c) for c in cols])


def join_recorder(
    frames: TraceFrames,
    directory: Path,
    report: ImportReport,
    *,
    runs: dict[tuple[str, int], tuple[float, float | None]],
    clock_tolerance_s: float,
    name: Callable[[Path], str] = str,
) -> TraceFrames:
    """``frames`` with the recorder's spans added inside ``runs`` ((job, attempt) -> (start, end or None), epoch s)."""
    conv = collect(directory, attempt_ends={k: e for k, (_, e) in runs.items() if e is not None})
    fr = report.add_file(name(directory) + "/")
    tol = float(clock_tolerance_s)

    skipped_attempt_notes = 0
    for p in conv.problems:
        if p.table == "attempts":
            skipped_attempt_notes += 1
            continue
        where = name(Path(p.file))
        fr.note("inferred", f"{where}: {p.message}", "as the recorder's conversion does", [p.row] if p.row else None)
    fr.note(
        "info",
        "attempts",
        "taken from the accounting (start, end, end reason); the recorder's own attempt records, "
        f"where present, are not used ({skipped_attempt_notes} recorder attempt(s) without start or end records, as "
        "expected inside a batch job)",
    )

    spans = _seconds(conv.spans, ("start", "end"))
    jobs_known = set(frames.jobs["job_id"].to_list()) if frames.jobs.height else set()
    kept: list[dict] = []
    clipped: list[str] = []
    clipped_away: list[str] = []
    dropped_outside: list[str] = []
    dropped_run: dict[tuple[str, int], int] = {}
    dropped_job: dict[str, int] = {}
    for s in spans.iter_rows(named=True):
        key = (s["job_id"], s["attempt"])
        if s["job_id"] not in jobs_known:
            dropped_job[s["job_id"]] = dropped_job.get(s["job_id"], 0) + 1
            continue
        if key not in runs:
            dropped_run[key] = dropped_run.get(key, 0) + 1
            continue
        r0, r1 = runs[key]
        hi = math.inf if r1 is None else r1
        t0, t1 = s["start"], s["end"]
        if t0 >= r0 and t1 <= hi:
            kept.append(s)
            continue
        before, after = max(0.0, r0 - t0), max(0.0, t1 - hi)
        label = f"{s['job_id']} attempt {s['attempt']} {s['phase']}{'/' + s['stage'] if s['stage'] else ''}"
        if before > tol or after > tol:
            dropped_outside.append(f"{label} ({before:.3f} s before the run's start, {after:.3f} s after its end)")
            continue
        c0, c1 = max(t0, r0), min(t1, hi)
        if c1 < c0 or (c1 == c0 and t1 > t0):
            clipped_away.append(label)
            continue
        out = dict(s, start=c0, end=c1)
        if s["phase"] == "train" and s["cursor_start"] is not None and t1 > t0:
            cs, ce = s["cursor_start"], s["cursor_end"]
            out["cursor_start"] = cs + (ce - cs) * (c0 - t0) / (t1 - t0)
            out["cursor_end"] = cs + (ce - cs) * (c1 - t0) / (t1 - t0)
        kept.append(out)
        clipped.append(label)
    if clipped:
        fr.note(
            "clipped",
            "span sticking out of its run by at most the clock tolerance",
            f"cut to the run (tolerance "
            f"{tol:g} s: the accounting's times are whole seconds): {'; '.join(clipped[:10])}"
            f"{' ...' if len(clipped) > 10 else ''}",
            count=len(clipped),
        )
    if clipped_away:
        fr.note(
            "dropped",
            "span wholly outside its run but within the clock tolerance",
            "nothing of it is left inside the run (the accounting's end is cut to whole seconds, so a run's last "
            f"moments fall after it): {'; '.join(clipped_away[:10])}{' ...' if len(clipped_away) > 10 else ''}",
            count=len(clipped_away),
        )
    if dropped_outside:
        fr.note(
            "dropped",
            "span outside its run beyond the clock tolerance",
            "not moved into the run: "
            + "; ".join(dropped_outside[:10])
            + (" ..." if len(dropped_outside) > 10 else ""),
            count=len(dropped_outside),
        )
    for (job, attempt), n in sorted(dropped_run.items()):
        fr.note(
            "dropped",
            f"{n} span(s) of job {job} attempt {attempt}",
            "the accounting has no run with this number (SLURM_RESTART_COUNT) for the job",
            count=n,
        )
    for job, n in sorted(dropped_job.items()):
        fr.note(
            "dropped",
            f"{n} span(s) of job {job}",
            "the job is not in the accounting export (outside its time window?)",
            count=n,
        )

    # jobs: the recorder's model and labels
    jobs = frames.jobs
    rec_jobs = conv.jobs.filter(pl.col("job_id").is_in(list(jobs_known))) if conv.jobs.height else conv.jobs
    if rec_jobs.height:
        label_cols = [c for c in rec_jobs.columns if c not in ("job_id", "model", "gpus") and c not in jobs.columns]
        models = rec_jobs.select("job_id", pl.col("model").alias("_rec_model"))
        jobs = (
            jobs.join(models, on="job_id", how="left")
            .with_columns(
                pl.when(pl.col("_rec_model").is_not_null() & (pl.col("_rec_model") != pl.col("job_id")))
                .then(pl.col("_rec_model"))
                .otherwise(pl.col("model"))
                .alias("model")
            )
            .drop("_rec_model")
        )
        if label_cols:
            jobs = jobs.join(rec_jobs.select("job_id", *label_cols), on="job_id", how="left")
        gpu_diff = rec_jobs.join(frames.jobs.select("job_id", pl.col("gpus").alias("_acct")), on="job_id").filter(
            pl.col("gpus") != pl.col("_acct")
        )
        fr.note(
            "info",
            "job records",
            f"{rec_jobs.height} job(s) described by the recorder: model from the recorder, labels "
            f"added ({', '.join(label_cols) or 'none new'}); GPUs from the accounting"
            + (f" ({gpu_diff.height} job(s) where the recorder says otherwise)" if gpu_diff.height else ""),
        )
    fr.facts.update(
        {
            "recorder spans": spans.height,
            "kept": len(kept),
            "clipped": len(clipped),
            "outside their run within the tolerance (dropped)": len(clipped_away),
            "outside their run beyond the tolerance (dropped)": len(dropped_outside),
            "in a run the accounting lacks (dropped)": sum(dropped_run.values()),
            "of a job the accounting lacks (dropped)": sum(dropped_job.values()),
            "jobs with spans": len({s["job_id"] for s in kept}),
        }
    )

    extra = (
        pl.DataFrame(kept, schema=frames.spans.schema, orient="row")
        if kept
        else pl.DataFrame(schema=frames.spans.schema)
    )
    merged = pl.concat([frames.spans, extra.select(frames.spans.columns)]).sort("job_id", "attempt", "start", "phase")
    meta = dict(frames.metadata)
    meta["recorder"] = fr.file
    return TraceFrames(frames.attempts, merged, jobs.sort("job_id"), meta, _rank_timing(frames, directory, fr))


def _rank_timing(frames: TraceFrames, directory: Path, fr: FileReport) -> pl.DataFrame | None:
    """The run folder's rank timing windows (``timing/``) of the accounting's attempts, as the trace's
    ``rank_timing`` table (None: the ranks kept none); the windows of another attempt are counted and dropped."""
    windows = read_rank_timing(directory)
    if not windows:
        return None
    known = set(frames.attempts.select("job_id", "attempt").iter_rows())
    kept = [w for w in windows if (w["job_id"], w["attempt"]) in known]
    fr.facts["rank timing windows"] = len(kept)
    fr.facts["rank timing windows of an attempt the accounting lacks (dropped)"] = len(windows) - len(kept)
    return rank_timing_frame(kept) if kept else None
