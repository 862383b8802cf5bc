"""Listing and reading a trace's files where Spark reads them, for both kinds of Spark session.

A trace or a store's mirror given as a URI (``s3a://``, ``hdfs://``, ``file:///``...) is found and read where Spark
runs, never through local file calls.  Two ways, one interface (:class:`Files`):

- :class:`HadoopFiles`: a classic session (``local[...]``, ``spark://``, ``yarn``...) has the driver's JVM in this
  process; Hadoop's ``FileSystem`` API is called through it (py4j).
- :class:`ConnectFiles`: a Spark Connect session (``sc://host:port``) has no JVM here, only DataFrames run on the
  server; a folder is listed by reading it as ``binaryFile`` (its ``path`` column only: the files are not read), a
  small file (``trace.json``, a mirror's pointer) read as ``binaryFile``'s ``content`` of one file.  As Hadoop's
  listing in Spark does, names starting with ``.`` or ``_`` are skipped.

Paths are Hadoop's text of them (``file:/data/t/spans.parquet``, not percent-encoded), as Spark reads them.
:func:`files` picks the way for a session.  Errors are the session's own (py4j's or pyspark's); callers turn them into
:class:`~ettcore.errors.InputError` naming the URI (:func:`first_line` is what a user can act on).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def is_connect_session(spark: "SparkSession") -> bool:
    """True for a Spark Connect client session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def first_line(exc: Exception) -> str:
    """The first line of the error inside a py4j or Spark Connect error (what a user can act on)."""
    java = getattr(exc, "java_exception", None)
    text = str(java) if java is not None else str(exc)
    return next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)


@dataclass(frozen=True)
class Entry:
    """One name in a folder: its path (Hadoop's text) and whether it is a folder."""

    path: str
    is_dir: bool


class Files:
    """What the URI loader and the mirror reader ask of a file system (see the module docstring)."""

    def qualify(self, uri: str) -> str:
        """``uri`` as Spark names it (scheme and authority filled in), no trailing ``/``."""
        raise NotImplementedError

    def kind(self, uri: str) -> str | None:
        """``"file"``, ``"dir"``, or None when nothing is there."""
        raise NotImplementedError

    def entries(self, folder: str) -> dict[str, Entry]:
        """The names directly in ``folder``."""
        raise NotImplementedError

    def files_under(self, folder: str) -> list[str]:
        """Every file under ``folder``, recursively, sorted; hidden and ``_`` names skipped at every level."""
        raise NotImplementedError

    def read(self, uri: str) -> bytes:
        """The bytes of one (small) file."""
        raise NotImplementedError

    def hadoop_version(self) -> str:
        """The Hadoop version of Spark's classpath, for a connector to suggest (``<version>`` when unknown here)."""
        return "<version>"


def _hidden(relative: str) -> bool:
    return any(part.startswith((".", "_")) for part in relative.split("/") if part)


class HadoopFiles(Files):
    """Hadoop's FileSystem API through the driver's JVM (classic sessions)."""

    def __init__(self, spark: "SparkSession") -> None:
        self.spark = spark
        self.jvm = spark._jvm  # type: ignore[attr-defined]  # classic sessions only

    def _fs(self, uri: str) -> tuple[Any, Any]:
        path = self.jvm.org.apache.hadoop.fs.Path(uri)
        fs = path.getFileSystem(self.spark._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
        return fs, fs.makeQualified(path)

    def qualify(self, uri: str) -> str:
        return str(self._fs(uri)[1].toString()).rstrip("/")

    def kind(self, uri: str) -> str | None:
        fs, path = self._fs(uri)
        if not fs.exists(path):
            return None
        return "dir" if fs.isDirectory(path) else "file"

    def entries(self, folder: str) -> dict[str, Entry]:
        fs, path = self._fs(folder)
        statuses = fs.listStatus(path)
        return {s.getPath().getName(): Entry(str(s.getPath().toString()), bool(s.isDirectory())) for s in statuses}

    def files_under(self, folder: str) -> list[str]:
        fs, path = self._fs(folder)
        base = path.toUri().getPath().rstrip("/") + "/"
        out = []
        it = fs.listFiles(path, True)
        while it.hasNext():
            status = it.next()
            p = status.getPath()
            rel = p.toUri().getPath()[len(base) :] if p.toUri().getPath().startswith(base) else p.getName()
            if status.isFile() and not _hidden(rel):
                out.append(str(p.toString()))
        return sorted(out)

    def read(self, uri: str) -> bytes:
        fs, path = self._fs(uri)
        stream = fs.open(path)
        try:
            return bytes(self.jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def hadoop_version(self) -> str:
        return str(self.jvm.org.apache.hadoop.util.VersionInfo.getVersion())


def _comparable(path: str) -> str:
    """A path's text without the variations of ``file:`` URIs (``file:///x``, ``file:/x``) and trailing ``/``."""
    return re.sub(r"^file:/+", "/", path).rstrip("/")


class ConnectFiles(Files):
    """Listing and reading through DataFrames that the Spark Connect server runs (``binaryFile``)."""

    def __init__(self, spark: "SparkSession") -> None:
        self.spark = spark

    def _paths(self, uri: str, limit: int | None = None) -> list[str] | None:
        """The file paths Spark lists at ``uri`` (the file itself, or every file under a folder); None when nothing
        is there."""
        df = self.spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(uri).select("path")
        try:
            rows = (df.limit(limit) if limit else df).collect()
        except Exception as exc:
            if "PATH_NOT_FOUND" in str(exc) or "FileNotFoundException" in str(exc):
                return None
            raise
        return sorted(str(r[0]) for r in rows)

    def qualify(self, uri: str) -> str:
        # a Connect server names local files file:/abs/path (Hadoop's text); other URIs are given qualified
        return ("file:" + _comparable(uri)) if uri.startswith(("file:", "/")) else uri.rstrip("/")

    def kind(self, uri: str) -> str | None:
        paths = self._paths(uri, limit=2)
        if paths is None:
            return None
        return "file" if len(paths) == 1 and _comparable(paths[0]) == _comparable(self.qualify(uri)) else "dir"

    def entries(self, folder: str) -> dict[str, Entry]:
        base = _comparable(self.qualify(folder)) + "/"
        out: dict[str, Entry] = {}
        for p in self._paths(folder) or []:
            rel = _comparable(p)[len(base) :] if _comparable(p).startswith(base) else p.rsplit("/", 1)[-1]
            name, sep, _ = rel.partition("/")
            if name not in out or sep:
                out[name] = Entry(self.qualify(folder) + "/" + name, bool(sep))
        return out

    def files_under(self, folder: str) -> list[str]:
        base = _comparable(self.qualify(folder)) + "/"
        return [p for p in self._paths(folder) or [] if not _hidden(_comparable(p)[len(base) :])]

    def read(self, uri: str) -> bytes:
        rows = self.spark.read.format("binaryFile").load(uri).select("content").limit(1).collect()
        if not rows:
            raise FileNotFoundError(uri)
        return bytes(rows[0][0])


def files(spark: "SparkSession") -> Files:
    """The way to list and read files for this session (see the module docstring)."""
    return ConnectFiles(spark) if is_connect_session(spark) else HadoopFiles(spark)
