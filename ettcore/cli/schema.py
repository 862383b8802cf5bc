"""``ett schema [NAME]``: the JSON Schemas of the ``--json`` answers (:mod:`ettcore.cli.schemas`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ettcore.cli import schemas
from ettcore.errors import InputError, Problem


def run(args: argparse.Namespace) -> int:
    if args.name is None:
        print("\n".join(schemas.names()))
        return 0
    known = [*schemas.names(), *schemas.SHARED]
    if args.name not in known:
        raise InputError(Problem(args.name, None, None, f"no such schema; the schemas are {', '.join(known)}"))
    print(json.dumps(schemas.load(args.name), indent=2))
    return 0


def register(sub: Any) -> None:
    """Add ``ett schema``."""
    p = sub.add_parser(
        "schema",
        help="print the JSON Schema of a command's --json answer (no NAME: list them)",
        description="Every --json answer is one object: the envelope (schema, command, ettcore_version, input, "
        "synthetic, as_of, window, mapping), then the command's own fields. NAME: an answer's schema (its 'schema' "
        "key names it), or 'envelope' or 'defs'.",
    )
    p.add_argument("name", nargs="?", metavar="NAME")
    p.set_defaults(func=run)
