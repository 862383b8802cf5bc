"""A fleet store's Parquet mirror on the command line (:mod:`ettcore.store.parquet_mirror`): ``ett store publish``,
``ett ingest --parquet`` and the publish after each refresh, and the mirror ``--engine spark`` reads for a store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ettcore.errors import InputError, Problem
from ettcore.store import parquet_mirror


def add_parquet_arg(p: argparse.ArgumentParser) -> None:
    """``--parquet DIR`` of ``ett ingest``."""
    p.add_argument(
        "--parquet",
        metavar="DIR",
        help="publish the store's Parquet mirror into DIR after the refresh (Spark reads it); remembered by the "
        "store, so later refreshes publish there too",
    )


def publish_after_refresh(store_path: str, folder: str | None) -> None:
    """After a committed refresh: publish the store's mirror (into ``folder``, or the one it remembers; none: no
    mirror) and print what was published.  A failure says that the refresh is committed and how to publish again."""
    if not Path(store_path).exists():  # nothing was ingested into a store not made yet (a poll that found no job)
        if folder is not None:
            print(f"{store_path} holds nothing yet: no Parquet mirror published")
        return
    try:
        if folder is None and parquet_mirror.mirror_of(store_path) is None:
            return
        print(parquet_mirror.publish(store_path, folder).line())
    except InputError as exc:
        tail = f"the refresh is committed, its Parquet mirror is not: ett store publish {store_path} publishes it"
        raise InputError([*exc.problems, Problem(str(store_path), None, None, tail)]) from None


def mirror_for_spark(store_path: str) -> Path:
    """The Parquet mirror Spark reads for a store (``--engine spark`` on a store file); a lag is said on stderr."""
    folder, note = parquet_mirror.for_reading(store_path)
    if note:
        print(f"ett: {note}", file=sys.stderr)
    return folder


def run_publish(args: argparse.Namespace) -> int:
    print(parquet_mirror.publish(args.store, args.folder).line())
    return 0


def register_publish(kinds: Any) -> None:
    """Add ``ett store publish STORE [DIR]``."""
    p = kinds.add_parser(
        "publish",
        help="bring the store's Parquet mirror (read by --engine spark) up to its last refresh",
        description="Export every committed refresh the store's Parquet mirror does not hold yet (a folder of Parquet "
        "files each), then replace the mirror's CURRENT.json atomically. DIR becomes the store's mirror (remembered; "
        "later `ett ingest` runs publish there); without DIR, the one the store remembers.",
    )
    p.add_argument("store")
    p.add_argument("folder", nargs="?", metavar="DIR", help="the mirror folder (default: the store's own)")
    p.set_defaults(func=run_publish)
