"""``ett nodes TRACE``: interruptions per node per GPU-hour, and the nodes whose count is improbable (lemons); with
``--slow``, slow GPU-hours per node and the nodes whose share is improbable (:mod:`ettcore.metric.slow_nodes`)."""

from __future__ import annotations

import argparse

from ettcore.cli.measure_options import (
    add_measure_options,
    open_measured,
    refusals_duckdb_only,
    refusals_no_money,
)
from ettcore.cli.output import (
    envelope,
    format_table,
    jsonable,
    print_head,
    records,
    write_answer,
    write_csv,
)
from ettcore.cli.plan_options import add_plan_options
from ettcore.errors import InputError, Problem
from ettcore.metric.nodes import DEFAULT_ALPHA, NODE_CAUSES, node_report
from ettcore.metric.slow import check_tolerance
from ettcore.metric.slow_nodes import SlowNodeReport, slow_node_report
from ettcore.planning.reliability import fit_trace, project
from ettcore.vocabulary import VOCABULARY


def _causes(text: str | None) -> tuple[str, ...] | None:
    """The causes ``--causes`` names; None (not given): the node causes of the trace's vocabulary."""
    return None if text is None else tuple(c.strip() for c in text.split(",") if c.strip())


def run(args: argparse.Namespace) -> int:
    trace = open_measured(args)
    rep = node_report(trace, causes=_causes(args.causes), alpha=args.alpha)
    head = {
        "causes": list(rep.causes),
        "alpha": rep.alpha,
        "threshold": rep.threshold,
        "fleet_rate_per_1k_gpu_h": rep.fleet_rate_per_1k_gpu_h,
        "counted": rep.counted,
        "gpu_h": rep.gpu_h,
        "attempts_without_nodes": rep.attempts_without_nodes,
        "flagged": rep.flagged,
        "concentration": {
            "worst": args.worst,
            "share": rep.concentration(args.worst),
            "lorenz": records(rep.lorenz()),
        },
    }
    mttf = None
    if args.mttf_at is not None:
        fit = fit_trace(trace, confidence=args.confidence)
        proj = project(
            fit,
            args.mttf_at,
            work_h=args.work_h,
            interval_s=args.interval_s,
            blocking_s=args.blocking_s,
            ttr_s=args.ttr_s,
        )
        mttf = {
            "fit": {k: jsonable(v) for k, v in vars(fit).items()},
            "projection": {k: jsonable(v) for k, v in vars(proj).items()},
        }
        head["mttf"] = mttf
    if args.slow_tolerance is not None and not args.slow:
        raise InputError(Problem("--slow-tolerance", None, None, "applies with --slow only"))
    tolerance = check_tolerance(args.slow_tolerance)
    slow = slow_node_report(trace, tolerance=tolerance, alpha=args.alpha) if args.slow else None
    if slow is not None:
        head["slow"] = _slow_json(slow, tolerance)
    if args.json:
        doc = {**envelope("nodes", "nodes", trace, args), **head}
        doc["nodes"] = records(rep.nodes)
        write_answer(doc)
    elif args.csv:
        write_csv(rep.nodes if slow is None else slow.nodes, trace)
    else:
        print_head(trace)
        print(
            f"Interruptions counted against nodes (causes {', '.join(rep.causes)}): {rep.counted} over "
            f"{rep.gpu_h:.2f} GPU-hours on listed nodes: {rep.fleet_rate_per_1k_gpu_h:.3g} per 1000 GPU-hours."
        )
        print("A multi-node run's interruption counts 1/k on each of its k nodes; exposure = GPU-hours held (gpus/k).")
        print(
            f"Flagged: P(Poisson(expected) >= involved) < alpha / nodes with exposure = {rep.alpha:g} / "
            f"{round(rep.alpha / rep.threshold)} = {rep.threshold:.3g} (Bonferroni; docs/metric.md)."
        )
        if rep.attempts_without_nodes:
            print(f"{rep.attempts_without_nodes} attempt(s) without a node list are not in the table.")
        print()
        print(format_table(rep.nodes, rep.nodes.columns, digits=3))
        print()
        print(f"{len(rep.flagged)} flagged node(s){': ' + ', '.join(rep.flagged) if rep.flagged else ''}")
        share = rep.concentration(args.worst)
        print(
            f"Concentration: the {args.worst} node(s) with the most hold "
            + ("no interruption (none counted)." if share is None else f"{100 * share:.1f}% of the interruptions.")
        )
        if mttf is not None:
            _print_mttf(fit, proj, args)
        if slow is not None:
            _print_slow(slow, tolerance)
    return 0


def _slow_json(slow: SlowNodeReport, tolerance: float) -> dict:
    """The ``slow`` key of ``nodes --slow --json``: slow GPU-hours per node and the rank test (docs/metric.md)."""
    return {
        "tolerance": tolerance,
        "alpha": slow.alpha,
        "threshold": slow.threshold,
        "slow_gpu_h": slow.slow_gpu_h,
        "attributed": slow.attributed,
        "flagged": slow.flagged,
        "nodes": records(slow.nodes),
    }


def _print_slow(slow: SlowNodeReport, tolerance: float) -> None:
    print()
    print(
        f"Slow time (spans over {1 + tolerance:g} x the job's ideal pace; docs/metric.md): "
        f"{slow.slow_gpu_h:.3f} slow GPU-hours on listed nodes, each slow span's "
        + ("put on the node that held it back." if slow.attributed == "holder" else "shared 1/k across its nodes.")
    )
    print(
        f"Flagged: one-sided Mann-Whitney p-value of the node's slow fractions against the other nodes' < "
        f"{slow.alpha:g} / nodes with exposure = {slow.threshold:.3g} (Bonferroni)."
    )
    print()
    print(format_table(slow.nodes, slow.nodes.columns, digits=3))
    print()
    print(f"{len(slow.flagged)} flagged slow node(s){': ' + ', '.join(slow.flagged) if slow.flagged else ''}")


def _print_mttf(fit, proj, args) -> None:
    c = int(round(fit.confidence * 100))
    print()
    print(
        f"System and hardware failures ({', '.join(fit.causes)}): {fit.failures} over {fit.gpu_h:.2f} GPU-hours: "
        f"{fit.rate_per_gpu_h * 1000:.3g} per 1000 GPU-hours, {c}% interval (Garwood) "
        f"[{fit.low_per_gpu_h * 1000:.3g}, {fit.high_per_gpu_h * 1000:.3g}]."
    )
    print(
        f"At {proj.gpus} GPUs: MTTF {proj.mttf_h:.3g} h "
        f"({c}% interval [{proj.mttf_low_h:.3g}, {proj.mttf_high_h:.3g}] h)."
    )
    print(
        f"Expected ETT% of {args.work_h:g} h of work, checkpoint every {args.interval_s:g} s "
        f"(blocking {args.blocking_s:g} s), restart {args.ttr_s:g} s: {proj.ett_pct:.2f} % "
        f"[{proj.ett_low_pct:.2f}, {proj.ett_high_pct:.2f}] (closed form); "
        + (
            f"Monte Carlo {proj.mc_ett_pct:.2f} +- {proj.mc_ett_se_pct:.2f} %."
            if proj.mc_ett_pct is not None
            else f"no Monte Carlo: {proj.nof:.3g} expected failures a job are past what a simulation runs through."
        )
    )


def register(sub) -> None:
    p = sub.add_parser(
        "nodes",
        help="interruptions per node per GPU-hour of exposure, and nodes whose count is improbable (lemon nodes)",
    )
    add_measure_options(p, "nodes", refuse={**refusals_duckdb_only("ett nodes"), **refusals_no_money()})
    p.add_argument(
        "--causes",
        help=f"interruption causes counted against a node, comma-separated (default: {','.join(NODE_CAUSES)}, and a "
        f"--causes-file's causes of their groups; known: {','.join(VOCABULARY.cause_names)}, and a --causes-file's)",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help=f"family-wise false-alarm rate of the flag (default {DEFAULT_ALPHA}; Bonferroni over the nodes)",
    )
    p.add_argument(
        "--slow",
        action="store_true",
        help="also slow GPU-hours per node (time lost to train spans slower than the job's ideal pace) and the nodes "
        "whose share is improbable (one-sided Mann-Whitney test, Bonferroni at --alpha; docs/metric.md), spans judged "
        "with --slow-tolerance; with --csv, one row a node of these instead",
    )
    p.add_argument(
        "--worst",
        type=int,
        default=3,
        metavar="K",
        help="concentration: the share of the counted interruptions on the K nodes with the most (default 3)",
    )
    m = p.add_argument_group("MTTF against size (ettcore.planning.reliability)")
    m.add_argument(
        "--mttf-at",
        type=int,
        metavar="GPUS",
        help="fit system and hardware failures per GPU-hour (exact interval) and project the MTTF and expected "
        "ETT%% of a job of GPUS GPUs",
    )
    m.add_argument("--confidence", type=float, default=0.95, help="of the rate's interval (default 0.95)")
    add_plan_options(m)  # --work-h, --ttr-s
    m.add_argument("--interval-s", type=float, default=1800.0, help="checkpoint interval, s (default 1800)")
    m.add_argument("--blocking-s", type=float, default=30.0, help="training blocked per save, s (default 30)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="the fleet rate, the test and every node as JSON")
    fmt.add_argument("--csv", action="store_true", help="one row a node as CSV")
    p.set_defaults(func=run)
