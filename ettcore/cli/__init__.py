"""The ``ett`` command: one module a subcommand, each thin over the library.

Each module of :data:`COMMANDS` defines ``register(subparsers)``, which adds its subcommand; the order of the list is
the order of ``ett --help``.  :mod:`ettcore.cli.measure_options` defines the options every measuring command takes
(and refuses, with why) and opens what they measure; :mod:`ettcore.cli.output` is what they print, in one form
(the ``--json`` envelope and its schemas, :mod:`ettcore.cli.schemas`; CSV; text tables).

Exit status: 0 success, 2 bad input (one line per problem on stderr, naming file, row and field; never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

import duckdb

from ettcore import __version__
from ettcore.cli import (
    export,
    from_recorder,
    imports,
    ingest,
    live_job,
    nodes,
    opportunities,
    report,
    schema,
    stalls,
    store,
    summarize,
    synth,
    trend,
    validate,
)
from ettcore.cli.measure_options import check_refusals
from ettcore.cli.output import format_table, job_json_blocks, table_blocks, write_summary_json
from ettcore.errors import InputError, Problem, io_cause, summarize_problems
from ettcore.store.db import damaged

__all__ = ["COMMANDS", "build_parser", "format_table", "job_json_blocks", "main", "table_blocks", "write_summary_json"]

# The subcommands, in the order ``ett --help`` lists them.
COMMANDS = (
    summarize,
    trend,
    validate,
    opportunities,
    imports,
    ingest,
    store,
    synth,
    from_recorder,
    live_job,
    report,
    stalls,
    nodes,
    export,
    schema,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ett", description="Effective Training Time (ETT%) of training-job traces.")
    parser.add_argument("--version", action="version", version=f"ett {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def _input_of(args: argparse.Namespace) -> str:
    """The file or folder a command read or wrote, as its one line names it."""
    return next((str(v) for k in ("store", "trace", "input") if (v := getattr(args, k, None))), "input")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        check_refusals(args)
        return func(args)
    except InputError as exc:
        for line in summarize_problems(exc.problems):
            print(f"ett: {line}", file=sys.stderr)
        return 2
    except duckdb.OutOfMemoryException as exc:
        why = str(exc).splitlines()[0]
        limit = getattr(args, "memory_limit", None)
        print(
            f"ett: DuckDB ran out of memory ({why}): raise --memory-limit"
            + (f" (now {limit})" if limit else " or $ETT_MEMORY_LIMIT")
            + ", or give --temp-directory a folder with room to spill",
            file=sys.stderr,
        )
        return 2
    except duckdb.Error as exc:  # a file damaged, or one that cannot be read or written, where no nearer code says so
        where = _input_of(args)
        refusal = damaged(where, exc)
        if refusal is None and isinstance(exc, duckdb.IOException):
            refusal = InputError(Problem(where, None, None, f"cannot read or write it: {io_cause(exc)}"))
        if refusal is None:
            raise  # not the file's fault: a bug, with its traceback
        print(f"ett: {refusal.problems[0].line()}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a Spark job that failed on the cluster (a worker lost beyond its retries): one line
        from ettcore.engines.spark import job_failure

        refusal = job_failure(exc, _input_of(args))
        if refusal is None:
            raise  # not the cluster's: a bug, with its traceback
        print(f"ett: {refusal.problems[0].line()}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
