"""Crash-safe output: write to a temporary name beside the target, then rename.

An interrupted run leaves at most a ``.tmp-*`` file or folder that no reader
takes for a finished output; the rename itself is atomic on one filesystem.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def atomic_path(target: str | Path, *, directory: bool = False) -> Iterator[Path]:
    """Yield a temporary path; on success it replaces ``target``, on error it is removed."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if directory:
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{target.name}-", dir=target.parent))
    else:
        fd, name = tempfile.mkstemp(prefix=f".tmp-{target.name}-", dir=target.parent)
        os.close(fd)
        tmp = Path(name)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
        raise
    if directory:
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; a finished output is as readable as any other folder
        if target.exists():
            old = target.with_name(f".old-{target.name}-{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    else:
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)


def write_text(target: str | Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
