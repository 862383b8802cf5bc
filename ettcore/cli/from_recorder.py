"""``ett from-recorder RUN_DIR OUT_DIR``: a recorder run folder (JSON lines) converted into a trace folder."""

from __future__ import annotations

from typing import Any

from ettcore.cli import import_options
from ettcore.errors import InputError


def run(args: Any) -> int:
    try:
        conv = import_options.convert_recorder([args.run_dir], args.out_dir, args)
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
    import_options.add_options(p, "recorder")
    p.set_defaults(func=run)
