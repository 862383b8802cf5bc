"""``ett from-recorder RUN_DIR OUT_DIR``: a recorder run folder (JSON lines) converted into a trace folder."""

from __future__ import annotations

from typing import Any

from ettcore.cli.common import add_cause_mapping_arg
from ettcore.errors import InputError
from ettcore.importers.recorder import convert


def run(args: Any) -> int:
    try:
        conv = convert(
            args.run_dir, args.out_dir, open_last_attempt=args.open_last_attempt, cause_mapping=args.cause_mapping
        )
    except InputError as exc:
        for p in exc.problems:
            print(p.line())
        return 2
    for line in conv.note_lines():
        print(f"note: {line}")
    print(f"wrote {conv.out_dir}: {conv.attempts.height} attempts, {conv.spans.height} spans, {conv.jobs.height} jobs")
    return 0


def register(subparsers: Any) -> None:
    """``ett from-recorder RUN_DIR OUT_DIR``: turn recorder JSONL into a Parquet trace folder."""
    p = subparsers.add_parser(
        "from-recorder", help="convert a recorder run folder (JSONL) into a trace folder (Parquet)"
    )
    p.add_argument("run_dir", help="folder of recorder *.jsonl files")
    p.add_argument("out_dir", help="trace folder to write (replaced atomically)")
    p.add_argument(
        "--open-last-attempt",
        choices=("running", "failure"),
        default="running",
        help="how to treat a job's last attempt that has no end record (default: running)",
    )
    add_cause_mapping_arg(p)
    p.set_defaults(func=run)
