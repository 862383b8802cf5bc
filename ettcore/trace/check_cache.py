"""Verdicts of the data checks, kept so that a trace checked before and unchanged is not checked again.

Only a clean verdict is kept: a trace whose checks found nothing, with its row counts and its latest instant (the
default as-of).  A trace with findings is always checked again, so every error message is fresh.

The key is the trace's content, never its names or dates: a BLAKE2b digest of every byte of every table file read
(each file's path and size too), of the phase map, and of the code that types and checks the rows (the check queries
and the modules that build them) and of the vocabulary (``ettcore/defaults``: the end reasons and causes the checks
accept).  A file touched without change still hits; a file rewritten with other bytes
(even of the same size and modification time), a part file replaced, added or removed, another mapping or another
version of the checks misses, and the trace is checked again.  The code's SQL is the checks' (``sql/checks``), the
loader's (``sql/load``: the default as-of and the row accounting, which a verdict keeps) and the span store's
(:data:`SPAN_STORE_SQL`), not the fleet store's statements beside it, which no check reads.  Hashing reads the files
once, in threads, at disk speed (a fraction of one DuckDB read of the same files, which also decodes them).

The verdicts live in ``$ETT_CACHE_DIR`` (default ``$XDG_CACHE_HOME/ett/checked``, else ``~/.cache/ett/checked``), one
small JSON file a key; ``ETT_CHECK_CACHE=0`` turns the cache off.  An unreadable or foreign file there is a miss.
Raw data is never written to.
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ettcore.atomic import atomic_path
from ettcore.config import PACKAGE_DIR, SQL_DIR
from ettcore.vocabulary import VOCABULARY

FORMAT = 1  # bump when the stored verdict changes meaning
# the checking code, as paths under the package folder (its SQL is added by _code_digest)
_CODE = (
    "trace/load.py",
    "trace/instants.py",
    "trace/checks.py",
    "trace/check_cache.py",
    "phases.py",
    "vocabulary.py",
    "trace/span_store.py",
)
# the span store's typed read and screen (ettcore.trace.span_store), in sql/store beside the fleet store's statements
SPAN_STORE_SQL = ("store/span_store.sql", "store/train_overlap_suspects.sql")
_CHUNK = 1 << 22


def enabled() -> bool:
    return os.environ.get("ETT_CHECK_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def folder() -> Path:
    if os.environ.get("ETT_CACHE_DIR"):
        return Path(os.environ["ETT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ett" / "checked"


def _file_digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=20)
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)  # releases the GIL: the threads hash in parallel
    return h.hexdigest()


def _code_digest() -> str:
    h = hashlib.blake2b(digest_size=20)
    for name in _CODE:
        h.update(name.encode() + b"\0" + (PACKAGE_DIR / name).read_bytes() + b"\0")
    files = [
        *(SQL_DIR / "checks").glob("*.sql"),
        *(SQL_DIR / "load").glob("*.sql"),
        *(SQL_DIR / n for n in SPAN_STORE_SQL),
    ]
    for f in sorted(files):
        h.update(str(f.relative_to(SQL_DIR)).encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(b"vocabulary\0" + VOCABULARY.digest.encode())  # the checks' lists (end reasons, causes) come from it
    return h.hexdigest()


def key(files: list[tuple[str, Path]], phase_rows: list[tuple], vocabulary: str = VOCABULARY.digest) -> str | None:
    """The content key of a trace: ``files`` are (table, file) of every file read, ``vocabulary`` the digest of the
    vocabulary it is read with (a user's causes file changes it); None when a file cannot be read."""
    try:
        ordered = sorted((t, str(Path(f).resolve())) for t, f in files)
        with ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
            digests = list(pool.map(lambda tf: _file_digest(Path(tf[1])), ordered))
        sizes = [os.stat(f).st_size for _, f in ordered]
    except OSError:
        return None
    h = hashlib.blake2b(digest_size=20)
    h.update(
        json.dumps(
            {
                "format": FORMAT,
                "code": _code_digest(),
                "phases": [list(map(str, r)) for r in phase_rows],
                "vocabulary": vocabulary,
                "files": [[t, f, n, d] for (t, f), n, d in zip(ordered, sizes, digests)],
            }
        ).encode()
    )
    return h.hexdigest()


def lookup(k: str | None) -> dict[str, Any] | None:
    """The clean verdict stored under ``k``, or None."""
    if k is None or not enabled():
        return None
    try:
        got = json.loads((folder() / f"{k}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if (
        not isinstance(got, dict)
        or got.get("key") != k
        or got.get("format") != FORMAT
        or not isinstance(got.get("accounting"), dict)
    ):
        return None
    return got


def store(k: str | None, accounting: dict, latest_ms: int | None) -> None:
    """Keep a clean verdict (no finding) under ``k``; a cache folder that cannot be written is skipped silently."""
    if k is None or not enabled():
        return
    try:
        with atomic_path(folder() / f"{k}.json") as tmp:
            tmp.write_text(
                json.dumps({"format": FORMAT, "key": k, "accounting": accounting, "latest_ms": latest_ms}),
                encoding="utf-8",
            )
    except OSError:
        pass
