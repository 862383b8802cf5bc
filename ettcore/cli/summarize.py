"""``ett summarize TRACE``: ETT%, Level 1 and Level 2 per job, per group and for the fleet, and slow time beside them
(:mod:`ettcore.cli.slow_fields`)."""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from ettcore import metric
from ettcore.cli import slow_fields
from ettcore.cli.measure_options import add_measure_options, open_measured, prices_of
from ettcore.cli.output import (
    CAUSE_KEYS,
    FLEET_KEYS,
    cause_record,
    envelope,
    format_table,
    group_records,
    print_head,
    records,
    text_job_keys,
    with_cause_structs,
    write_csv,
    write_summary_json,
    write_table,
)
from ettcore.cli.storm_options import add_storm_options, storm_thresholds
from ettcore.metric import money, restarts
from ettcore.phases import components_in


def _money_json(tables: dict[str, pl.DataFrame], prices: money.Prices) -> dict[str, Any]:
    """The ``money`` key of ``summarize --json``: the price, the fleet's money and every breakdown of lost money."""
    fleet = money.records(tables["fleet"])[0]
    return {
        **prices.as_dict(),
        "fleet": fleet,
        "by_model": money.records(tables["model"]),
        **{f"lost_by_{k}": money.records(tables[k]) for k in tables if k not in ("jobs", "fleet", "model")},
    }


def _print_money(tables: dict[str, pl.DataFrame], prices: money.Prices) -> None:
    cur = prices.currency
    print()
    print(
        f"Money ({prices.describe()}; {', '.join(money.UNBILLED)} is waiting with no GPU held: not billed, "
        "shown as waiting_gpu_h):"
    )
    per_job = tables["jobs"]
    write_table(
        per_job, ["job_id", "model", "price_per_gpu_h", "held_gpu_h", "cost", "lost_cost", "waiting_gpu_h"], digits=2
    )
    for k in tables:
        if k in ("jobs", "fleet", "model"):
            continue
        print()
        print(f"Lost {cur} by {k}:")
        print(format_table(tables[k], list(tables[k].columns), digits=2))
    print()
    print(f"{cur} by model:")
    print(
        format_table(tables["model"], ["model", "jobs", "held_gpu_h", "cost", "lost_cost", "waiting_gpu_h"], digits=2)
    )
    print()
    print(f"Fleet {cur}:")
    print(format_table(tables["fleet"], ["jobs", "held_gpu_h", "cost", "lost_cost", "waiting_gpu_h"], digits=2))


CHAIN_KEYS = ("attempts", "interruptions", "restarts", "outcome", "restart_wait_s", "median_restart_wait_s")
LOOP_KEYS = ("crash_loops", "crash_loop_restarts", "crash_loop_gpu_h")


def _restarts(trace: Any, args: argparse.Namespace, n: int, window_ms: int) -> dict[str, Any]:
    """Crash loops, retry chains and restart storms (:mod:`ettcore.metric.restarts`): ``jobs`` (one row a job),
    ``fleet`` (the fleet's retry chains), ``loops`` (one row a crash loop) and ``storms``."""
    loops = restarts.crash_loops(trace)
    return {
        "jobs": restarts.job_restarts(trace, loops),
        "fleet": restarts.fleet_retry_chains(trace),
        "loops": loops,
        "storms": restarts.restart_storms(trace, args.storm_by, n, f"{window_ms}ms"),
    }


def _restarts_json(got: dict[str, Any], args: argparse.Namespace, n: int, window_ms: int) -> dict[str, Any]:
    """The ``restarts`` key of ``summarize --json``."""
    return {
        "retry_chains": got["fleet"],
        "crash_loops": records(got["loops"]),
        "storm_interruptions": n,
        "storm_window_s": window_ms / 1000,
        "storm_by": args.storm_by,
        "storms": [{"group": r.pop(args.storm_by, None), **r} for r in records(got["storms"])],
    }


def _with_restart_structs(jobs: pl.DataFrame, got: dict[str, Any]) -> pl.DataFrame:
    """``jobs`` with each job's ``retry_chain`` and ``crash_loop`` objects."""
    per_job = got["jobs"].select(
        "job_id",
        pl.struct(CHAIN_KEYS).alias("retry_chain"),
        pl.struct(
            pl.col("crash_loops").alias("loops"),
            pl.col("crash_loop_restarts").alias("restarts"),
            pl.col("crash_loop_gpu_h").alias("gpu_h"),
        ).alias("crash_loop"),
    )
    return jobs.join(per_job, on="job_id", how="left", maintain_order="left")


def _print_restarts(got: dict[str, Any], args: argparse.Namespace, n: int, window_ms: int) -> None:
    print()
    print("Retry chains (jobs with an interruption; completion share of those that ended; wait before each restart):")
    print(format_table(pl.DataFrame([got["fleet"]]), list(got["fleet"]), digits=1))
    print()
    print("Crash loops (consecutive crashes resuming from the same point; GPU-hours held by their restarts):")
    loops = got["loops"]
    if loops.height:
        # four decimals: a loop of a few small restarts holds hundredths of a GPU-hour
        print(format_table(loops, [c for c in loops.columns if c != "model"], digits=4))
    else:
        print("none")
    print()
    by = f" per {args.storm_by}" if args.storm_by else " fleet-wide"
    print(f"Restart storms (at least {n} interruptions within {window_ms / 1000:g} s{by}):")
    storms = got["storms"]
    print(format_table(storms, list(storms.columns), digits=2) if storms.height else "none")


def run(args: argparse.Namespace) -> int:
    prices = prices_of(args)
    n, window_ms = storm_thresholds(args)
    trace = open_measured(args)
    jobs = metric.job_summary(trace)
    tables = None
    if prices is not None:
        owners = {c: trace.phase_map.owner(c) for c in metric.components(trace)}
        tables = money.money_tables(jobs, prices, metric.components(trace), owners)
    fleet = metric.fleet_summary(trace)
    groups = metric.fleet_summary(trace, by=args.by) if args.by else None
    extra = ("excluded_s",) if trace.window.exclusions else ()
    fleet_causes = metric.cause_summary(trace)
    vocabulary = metric.vocabulary_of(trace)  # the package's, with a --causes-file's causes added
    group_causes = metric.cause_summary(trace, by=args.by) if args.by else None
    got = _restarts(trace, args, n, window_ms)
    slowed = slow_fields.measure(trace, args.slow_tolerance, args.by)
    slow_keys = slow_fields.JOB_KEYS if slowed is not None else ()
    slow_answer = None
    if slowed is not None:
        jobs = slow_fields.with_job_columns(jobs, slowed)
        if tables is not None:
            tables["jobs"] = slow_fields.with_job_cost(tables["jobs"], slowed)
        slow_answer = slow_fields.answer(slowed, *((tables["jobs"], prices.currency) if tables is not None else ()))
    if args.json:
        jobs = _with_restart_structs(with_cause_structs(jobs, metric.job_causes(trace), vocabulary), got)
        head = envelope("summarize", "summarize", trace, args)
        fleet_rec = group_records(fleet, None, extra)[0] if fleet.height else None
        if fleet_rec is not None:
            fleet_rec.update(cause_record(fleet_causes, vocabulary))
            if slowed is not None:
                fleet_rec.update(slow_fields.group_fields(slowed, None))
        tail: dict[str, Any] = {
            "fleet": fleet_rec,
            "accounting": trace.accounting,
            "not_started_by_as_of": trace.not_started,
            "restarts": _restarts_json(got, args, n, window_ms),
        }
        if groups is not None:
            recs = group_records(groups, args.by, extra)
            for rec in recs:
                mine = group_causes.filter(pl.col(args.by).cast(pl.Utf8) == str(rec[args.by]))
                rec.update(cause_record(mine, vocabulary))
                if slowed is not None:
                    rec.update(slow_fields.group_fields(slowed, args.by, rec[args.by]))
            tail["groups"] = recs
        if slow_answer is not None:
            tail["slow"] = slow_answer
        money_cols: list[str] = []
        if tables is not None:
            tail["money"] = _money_json(tables, prices)
            m = tables["jobs"].drop("model", "gpus")
            money_cols = [c for c in m.columns if c != "job_id"]
            jobs = jobs.join(m, on="job_id", how="left", maintain_order="left")
        labels = [c for c in trace.labels if c in jobs.columns]
        write_summary_json(
            head,
            jobs,
            tail,
            labels=labels,
            extra=(*extra, *CAUSE_KEYS, "retry_chain", "crash_loop", *slow_keys),
            money=money_cols,
        )
    elif args.csv:
        write_csv(jobs, trace)
    else:
        print_head(trace)
        cols = text_job_keys(jobs)
        write_table(jobs, cols)  # a row a job: streamed, not built as one string
        print()
        print("Level 2 components (seconds, non-productive time):")
        write_table(jobs, ["job_id", *[f"{c}_s" for c in components_in(jobs.columns)]])
        print()
        labels = [c for c in trace.labels if c in jobs.columns]
        if labels:  # the jobs table's own columns (for an imported MLPerf run: time_to_train_s, MLPerf's score, ...)
            print("Job labels (from the jobs table):")
            write_table(jobs, ["job_id", *labels], digits=3)
            print()
        if groups is not None:
            print(f"By {args.by}:")
            print(format_table(groups, [args.by, *FLEET_KEYS], digits=2))
            print()
        print("Fleet (GPU-time weighted):")
        print(format_table(fleet, list(FLEET_KEYS) + ["excluded_gpu_h"] * bool(extra), digits=2))
        print()
        print("Interruptions by cause (NoF; lost time: each interruption's recovery and replayed work):")
        every = metric.every_cause(fleet_causes, vocabulary)
        print(format_table(every, ["cause", "category", "nof", "lost_s", "lost_gpu_h"], digits=2))
        print()
        print("Interruptions by category (a causes file's categories, else the cause groups):")
        print(format_table(metric.by_category(every), ["category", "nof", "lost_s", "lost_gpu_h"], digits=2))
        if group_causes is not None:
            print()
            print(f"Interruptions by cause, by {args.by}:")
            table = group_causes.filter(pl.col("nof") > 0).vstack(group_causes.filter(pl.col("nof") == 0))
            print(
                format_table(
                    table.sort(args.by, maintain_order=True),
                    [args.by, "cause", "nof", "lost_s", "lost_gpu_h"],
                    digits=2,
                )
            )
        _print_restarts(got, args, n, window_ms)
        if slowed is not None:
            print()
            slow_fields.print_tables(slowed, args.by, slow_answer)
        if tables is not None:
            _print_money(tables, prices)
    return 0


def register(sub: Any) -> None:
    """Add ``ett summarize``."""
    p = sub.add_parser("summarize", help="ETT%%, L1 and L2 per job, per group and for the fleet")
    add_measure_options(p, "summarize")
    p.add_argument("--by", metavar="KEY", help="group by 'model', 'gpus' or any column of the jobs table")
    add_storm_options(p)
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object: jobs, fleet (and groups with --by)")
    fmt.add_argument("--csv", action="store_true", help="per-job rows as CSV")
    p.set_defaults(func=run)
