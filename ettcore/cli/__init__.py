"""The ``ett`` command: one module a subcommand, each thin over the library.

Each module of :data:`COMMANDS` defines ``register(subparsers)``, which adds its subcommand; the order of the list is
the order of ``ett --help``.  :mod:`ettcore.cli.common` holds the options the measuring commands share and
:mod:`ettcore.cli.output` what they print.

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
    stalls,
    store,
    summarize,
    synth,
    trend,
    validate,
)
from ettcore.cli.output import format_table, job_json_blocks, table_blocks, write_summary_json
from ettcore.errors import InputError, Problem, summarize_problems

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
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ett", description="Effective Training Time (ETT%) of training-job traces.")
    parser.add_argument("--version", action="version", version=f"ett {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return func(args)
    except InputError as exc:
        for line in summarize_problems(exc.problems):
            print(f"ett: {line}", file=sys.stderr)
        return 2
    except duckdb.IOException as exc:
        print(
            f"ett: {Problem(str(getattr(args, 'trace', '?')), None, None, str(exc).splitlines()[0]).line()}",
            file=sys.stderr,
        )
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
