"""What the ``ett`` commands print, in one form whatever the command: JSON answers, CSV and text tables.

- ``--json``: one object, the envelope (:func:`envelope`: ``schema``, ``command``, ``ettcore_version``, ``input``,
  ``synthetic``, ``as_of``, ``window``, ``mapping``) then the command's own fields (:func:`write_answer`; the schemas
  are in ``ettcore/schemas``, :mod:`ettcore.cli.schemas`).  Rows become objects one way (:func:`records`).
- ``--csv``: :func:`write_csv`: instants as ISO-8601 in UTC with ``Z`` and milliseconds
  (``2026-01-05T09:00:00.000Z``), calendar days as ``YYYY-MM-DD``; a SYNTHETIC input's rows carry a last column
  ``synthetic`` = ``true``.
- text: :func:`print_head` (the one SYNTHETIC banner, then the measured window and exclusions), then fixed-width
  tables (:func:`write_table`, :func:`format_table`).

Jobs are listed in natural order of their ids everywhere (``2`` before ``10``; :mod:`ettcore.order`): the metric
returns them so.  A million jobs' output is streamed: per-job JSON is encoded by Polars a chunk at a time, tables are
formatted a column at a time and written a block of rows at a time; neither builds a Python value per job.
"""

from __future__ import annotations

import json
import math
import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime, timezone
from typing import Any, Sequence

import duckdb
import polars as pl

from ettcore import __version__, engines, metric
from ettcore.cli import schemas
from ettcore.cli.measure_options import input_kind
from ettcore.phases import components_in
from ettcore.trace.instants import iso
from ettcore.trace.load import quote_ident
from ettcore.vocabulary import VOCABULARY, Vocabulary

NOT_SHOWN = ("attempts", "t0", "t1")  # per-job columns JSON leaves out (t0 and t1 come last, as instants)


def job_keys(jobs: pl.DataFrame) -> list[str]:
    """The per-job figures of ``summarize --json``, in the metric's order: every column of
    :func:`ettcore.metric.job_summary` before its components (the L1 buckets' ``<stem>_s``, NoF and its split by
    interrupting end reason, ``nof_<end reason>``, from the vocabulary), but :data:`NOT_SHOWN`."""
    first = components_in(jobs.columns)[0]
    cols = jobs.columns[: jobs.columns.index(f"{first}_s")]
    return [c for c in cols if c not in NOT_SHOWN]


def text_job_keys(jobs: pl.DataFrame) -> list[str]:
    """The per-job columns of ``summarize``'s text table: :func:`job_keys` without the split of NoF, the cancels and
    the mean TTR (in ``--json`` and ``--csv``)."""
    return [c for c in job_keys(jobs) if c not in (*VOCABULARY.nof_columns, "cancelled", "ttr_mean_s")]


FLEET_KEYS = ("jobs", "ett_pct", "ett_mean_pct", "wall_gpu_h", "productive_gpu_h", "nof", "cancelled")
CAUSE_KEYS = ("nof_by_cause", "lost_s_by_cause")  # per job in summarize --json (every cause of the vocabulary)


def with_cause_structs(jobs: pl.DataFrame, long: pl.DataFrame, vocabulary: Vocabulary = VOCABULARY) -> pl.DataFrame:
    """``jobs`` with ``nof_by_cause`` and ``lost_s_by_cause``: one field a cause of ``vocabulary`` (the trace's:
    :func:`ettcore.metric.vocabulary_of`; its order, 0 where none), from :func:`ettcore.metric.job_causes`'s long
    rows."""
    causes = vocabulary.cause_names
    nof = [pl.lit(0, pl.Int64).alias(c) for c in causes]
    lost = [pl.lit(0.0, pl.Float64).alias(c) for c in causes]
    if long.height:
        wide_n = long.pivot(on="cause", index="job_id", values="nof")
        wide_l = long.pivot(on="cause", index="job_id", values="lost_s")
        nof = [
            pl.col(c).fill_null(0).cast(pl.Int64).alias(c) if c in wide_n.columns else e for c, e in zip(causes, nof)
        ]
        lost = [
            pl.col(c).fill_null(0.0).cast(pl.Float64).alias(c) if c in wide_l.columns else e
            for c, e in zip(causes, lost)
        ]
        n = (
            jobs.select("job_id")
            .join(wide_n, on="job_id", how="left", maintain_order="left")
            .select(pl.struct(nof).alias("nof_by_cause"))
        )
        s = (
            jobs.select("job_id")
            .join(wide_l, on="job_id", how="left", maintain_order="left")
            .select(pl.struct(lost).alias("lost_s_by_cause"))
        )
        return jobs.with_columns(n.to_series(), s.to_series())
    return jobs.with_columns(pl.struct(nof).alias("nof_by_cause"), pl.struct(lost).alias("lost_s_by_cause"))


def cause_record(long: pl.DataFrame, vocabulary: Vocabulary = VOCABULARY) -> dict:
    """``nof_by_cause``, ``lost_s_by_cause`` and ``lost_gpu_h_by_cause`` of a fleet or group (every cause of
    ``vocabulary``, the trace's), and ``nof_by_category`` (NoF by display category: a user's causes file's, else the
    cause group's label; :func:`ettcore.metric.by_category`)."""
    t = metric.every_cause(long, vocabulary)
    c = metric.by_category(t)
    return {
        "nof_by_cause": dict(zip(t["cause"], t["nof"])),
        "lost_s_by_cause": dict(zip(t["cause"], t["lost_s"])),
        "lost_gpu_h_by_cause": dict(zip(t["cause"], t["lost_gpu_h"])),
        "nof_by_category": dict(zip(c["category"], c["nof"])),
    }


def jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, datetime):
        return (v if v.tzinfo else v.replace(tzinfo=timezone.utc)).isoformat().replace("+00:00", "Z")
    if isinstance(v, date):
        return v.isoformat()
    return v


def _finite(name: str, dtype: pl.DataType) -> pl.Expr:
    """A column as JSON shows it: NaN and infinities as null (like :func:`jsonable`)."""
    c = pl.col(name)
    return pl.when(c.is_finite()).then(c).otherwise(None).alias(name) if dtype.is_float() else c


def _iso(name: str) -> pl.Expr:
    """A zone-less UTC timestamp as :func:`jsonable` writes it (``...T12:00:00Z``, fractions only when present)."""
    c = pl.col(name)
    return (
        pl.when(c.dt.microsecond() == 0)
        .then(c.dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
        .otherwise(c.dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ"))
        .alias(name)
    )


def _job_json_fields(
    jobs: pl.DataFrame, labels: Sequence[str], extra: Sequence[str], money: Sequence[str] = ()
) -> list[pl.Expr]:
    fields = [_finite(k, jobs.schema[k]) for k in (*job_keys(jobs), *extra)]
    fields.append(
        pl.struct([_finite(f"{c}_s", jobs.schema[f"{c}_s"]).alias(c) for c in components_in(jobs.columns)]).alias(
            "components"
        )
    )
    if labels:  # e.g. an imported MLPerf run's time_to_train_s (MLPerf's score) and submission
        fields.append(
            pl.struct([_iso(c) if jobs.schema[c] == pl.Datetime else _finite(c, jobs.schema[c]) for c in labels]).alias(
                "labels"
            )
        )
    if money:  # --gpu-hour-price: the job's price, held GPU-hours, cost, lost cost by component, waiting
        fields.append(pl.struct([_finite(c, jobs.schema[c]) for c in money]).alias("money"))
    return fields + [_iso("t0"), _iso("t1")]


def job_json_blocks(
    jobs: pl.DataFrame,
    chunk: int = 50_000,
    labels: Sequence[str] = (),
    extra: Sequence[str] = (),
    as_bytes: bool = False,
    workers: int = 2,
    money: Sequence[str] = (),
):
    """Per-job objects of ``ett summarize --json`` (components and the jobs table's labels nested; ``extra``: more
    top-level keys), one JSON text a job, joined with ``,`` + newline + indent.

    Encoded and joined by Polars a chunk at a time, one string a chunk (UTF-8 ``bytes`` with ``as_bytes``), so a
    million jobs never become a million Python dicts or strings.  ``workers`` chunks are encoded at once (Polars
    releases the interpreter while it encodes), and at most ``workers`` more wait for the reader, so memory holds a
    few chunks, never the whole text; blocks come in job order.
    """
    fields = _job_json_fields(jobs, labels, extra, money)

    def encode(part: pl.DataFrame):
        block = part.select(pl.struct(fields).struct.json_encode().str.join(",\n    "))
        return block.to_series().cast(pl.Binary).item() if as_bytes else block.item()

    if workers <= 1:
        yield from map(encode, jobs.iter_slices(chunk))
        return
    with ThreadPoolExecutor(workers) as pool:
        pending: deque = deque()
        for part in jobs.iter_slices(chunk):
            pending.append(pool.submit(encode, part))
            if len(pending) > workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _utf8_buffer(out):
    """``out``'s binary buffer where it has one and writes UTF-8 (a file or standard output), else None: a text
    stream's ``write`` of a long string costs ten times as much as writing its bytes (2.4 s against 0.2 s for the
    680 MB of a million jobs' JSON)."""
    return (
        getattr(out, "buffer", None) if str(getattr(out, "encoding", "")).lower().replace("-", "") == "utf8" else None
    )


def write_summary_json(
    head: dict,
    jobs: pl.DataFrame,
    tail: dict,
    out=None,
    labels: Sequence[str] = (),
    extra: Sequence[str] = (),
    money: Sequence[str] = (),
) -> None:
    """One JSON object: ``head``'s keys, then ``jobs`` (streamed, one job a line, ``labels`` nested),
    then ``tail``'s keys.  ``money``: columns of ``jobs`` nested as each job's ``money`` object.

    The jobs go to ``out``'s binary buffer where it has one and writes UTF-8 (:func:`_utf8_buffer`)."""
    out = out or sys.stdout
    out.write("{\n")
    for k, v in head.items():
        out.write(f"  {json.dumps(k)}: {json.dumps(v)},\n")
    out.write('  "jobs": [')
    raw = _utf8_buffer(out)
    out.flush()
    stream, lead, sep = (raw, b"\n    ", b",\n    ") if raw is not None else (out, "\n    ", ",\n    ")
    first = True
    for block in job_json_blocks(jobs, labels=labels, extra=extra, as_bytes=raw is not None, money=money):
        stream.write((lead if first else sep) + block)
        first = False
    stream.flush()
    out.write("]" if first else "\n  ]")
    for k, v in tail.items():
        body = json.dumps(v, indent=2).replace("\n", "\n  ")
        out.write(f",\n  {json.dumps(k)}: {body}")
    out.write("\n}\n")


def group_records(groups: pl.DataFrame, key: str | None, extra: Sequence[str] = ()) -> list[dict]:
    """Fleet or group rows as ``summarize --json`` writes them (``extra``:
    ``("excluded_s",)`` adds ``excluded_gpu_h``)."""
    out = []
    for r in groups.iter_rows(named=True):
        rec = {key: jsonable(r[key])} if key else {}
        rec.update({k: jsonable(r[k]) for k in FLEET_KEYS})
        rec.update({f"{k[:-2]}_gpu_h": jsonable(r[f"{k[:-2]}_gpu_h"]) for k in extra})
        rec["components_gpu_h"] = {c: r[f"{c}_gpu_h"] for c in components_in(groups.columns, "_gpu_h")}
        rec["l1_gpu_h"] = {b.stem: r[f"{b.stem}_gpu_h"] for b in VOCABULARY.loss_buckets}
        out.append(rec)
    return out


def _cell(v: Any, digits: int) -> str:
    """One value as a table cell: ``-`` for missing, floats with thousands separators and ``digits`` decimals."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(jsonable(v))


def _cells(df: pl.DataFrame, columns: Sequence[str], digits: int) -> pl.DataFrame:
    """Each of ``columns`` as the text of its cells (:func:`_cell`), computed a column at a time, not a value at a time.

    Floats are formatted by DuckDB's ``format`` (the same digits as Python's ``format``, thousands separators
    included; ``tests/test_cli.py`` holds the two equal), integers and strings by Polars; any other type (dates,
    zoned times, lists) one value at a time by :func:`_cell`."""
    floats = [c for c in columns if df.schema[c].is_float()]
    out: dict[str, pl.Series] = {}
    if floats:
        con = duckdb.connect()
        try:
            con.register("table_cells", df.select(pl.col(floats).cast(pl.Float64)))
            body = ", ".join(f"format($f, {quote_ident(c)}) AS {quote_ident(c)}" for c in floats)
            got = con.sql(f"SELECT {body} FROM table_cells", params={"f": "{:,.%df}" % int(digits)}).pl()
        finally:
            con.close()
        out.update({c: got[c] for c in floats})
    for c in columns:
        if c in out:
            continue
        dtype, col = df.schema[c], df[c]
        if dtype.is_integer() or dtype == pl.String:
            out[c] = col.cast(pl.String)
        elif dtype == pl.Boolean:
            out[c] = pl.select(pl.when(col).then(pl.lit("True")).when(col.not_()).then(pl.lit("False"))).to_series()
        else:
            out[c] = col.map_elements(lambda v: _cell(v, digits), return_dtype=pl.String, skip_nulls=False)
    return pl.DataFrame([out[c].fill_null("-").alias(f"c{i}") for i, c in enumerate(columns)])


def table_blocks(df: pl.DataFrame, columns: Sequence[str], digits: int = 1, chunk: int = 100_000):
    """A plain fixed-width table for a terminal, as text blocks: the header and rule, then ``chunk`` rows a block
    (each block ends with a newline)."""
    cells = _cells(df, columns, digits)
    widths = [max(len(c), cells[f"c{i}"].str.len_chars().max() or 0) for i, c in enumerate(columns)]
    yield "  ".join(c.rjust(w) for c, w in zip(columns, widths)) + "\n" + "  ".join("-" * w for w in widths) + "\n"
    padded = [pl.col(f"c{i}").str.pad_start(w) for i, w in enumerate(widths)]
    for part in cells.iter_slices(chunk):
        if part.height:
            yield part.select(pl.concat_str(padded, separator="  ").str.join("\n")).item() + "\n"


def format_table(df: pl.DataFrame, columns: Sequence[str], digits: int = 1) -> str:
    """A plain fixed-width table for a terminal (:func:`table_blocks` as one string, without the final newline)."""
    return "".join(table_blocks(df, columns, digits))[:-1]


def write_table(df: pl.DataFrame, columns: Sequence[str], digits: int = 1, out=None) -> None:
    """:func:`table_blocks` written to ``out`` (standard output by default) as they are made, as UTF-8 bytes where the
    stream takes them (:func:`_utf8_buffer`)."""
    out = out or sys.stdout
    raw = _utf8_buffer(out)
    out.flush()
    write = out.write if raw is None else (lambda block: raw.write(block.encode()))  # the stream chosen once
    for block in table_blocks(df, columns, digits):
        write(block)
    (raw or out).flush()


def exclusion_records(exclusions: pl.DataFrame) -> list[dict]:
    """The exclusion windows as ``summarize --json`` lists them: file order, times ISO-8601, what each left out."""
    return [{k: jsonable(v) for k, v in r.items() if k != "exclusion_id"} for r in exclusions.iter_rows(named=True)]


# ----------------------------------------------------------------------------------------------------- one form


def synthetic_banner(trace: Any) -> str:
    """The one SYNTHETIC line of a text output."""
    return "SYNTHETIC trace: " + str(trace.metadata.get("description") or "generated data, not measured")


def print_head(trace: Any, out=None) -> None:
    """The head of a text output: the SYNTHETIC banner for synthetic data, then the measured window and the exclusion
    windows (nothing for a real trace measured whole)."""
    out = out or sys.stdout
    if trace.synthetic:
        print(synthetic_banner(trace), file=out)
    print_window(trace, out)


def print_window(trace: Any, out=None) -> None:
    """The measured window and the exclusion windows, as lines of text (nothing for the default whole trace)."""
    out = out or sys.stdout
    w = trace.window
    if w.since_ms is not None or w.until_ms is not None:
        print(
            f"Measured from {iso(w.since_ms) or 'the start'} to {iso(w.until_ms) or 'the end'} (each job's "
            "time clipped to it).",
            file=out,
        )
    if w.exclusions:
        ex = metric.exclusion_summary(trace)
        print(f"Exclusion windows (left out of wall time, every bucket and NoF; {ex.height}):", file=out)
        print(
            format_table(
                ex,
                ["start", "end", "reason", "job", "label", "jobs", "wall_gpu_h", "productive_gpu_h", "nof"],
                digits=2,
            ),
            file=out,
        )
    if not w.whole:
        print(file=out)


def as_of_field(trace: Any) -> str | dict[str, str] | None:
    """The envelope's ``as_of``: the analysis time, or, where a store of several sources measured each source's
    running jobs to its own horizon (``StoreTrace.horizons``), an object of one instant a source."""
    horizons = getattr(trace, "horizons", None)
    if horizons:
        return {source: iso(ms) for source, ms in horizons.items()}
    return iso(trace.as_of_ms) if trace.as_of_ms is not None else None


def envelope(schema: str, command: str, trace: Any, args: Any) -> dict[str, Any]:
    """The keys every ``--json`` answer starts with (``ettcore/schemas/envelope.schema.json``); the window carries the
    exclusion windows and what each took out."""
    w, engine = trace.window, getattr(args, "engine", "duckdb")
    return {
        "schema": schemas.header(schema),
        "command": command,
        "ettcore_version": __version__,
        "input": {
            "path": str(args.trace),
            "kind": input_kind(args),
            "engine": engine,
            "spark_master": (args.spark_master or engines.DEFAULT_MASTER) if engine == "spark" else None,
        },
        "synthetic": bool(trace.synthetic),
        "as_of": as_of_field(trace),
        "window": {
            "since": iso(w.since_ms),
            "until": iso(w.until_ms),
            "exclusions": exclusion_records(metric.exclusion_summary(trace)) if w.exclusions else [],
        },
        "mapping": {
            "file": None if getattr(args, "mapping", None) is None else str(args.mapping),
            "components": list(metric.components(trace)),
        },
    }


def records(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as JSON objects (:func:`jsonable` values), in the frame's order."""
    return [{k: jsonable(v) for k, v in r.items()} for r in frame.iter_rows(named=True)]


def write_answer(doc: dict[str, Any], out=None) -> None:
    """One ``--json`` answer (built on :func:`envelope`), indented."""
    print(json.dumps(doc, indent=2), file=out or sys.stdout)


INSTANT_CSV = "%Y-%m-%dT%H:%M:%S%.3fZ"  # every CSV's instants: UTC, milliseconds, Z


def csv_text(frame: pl.DataFrame, synthetic: bool) -> str:
    """``frame`` as CSV in the one form: instants :data:`INSTANT_CSV`, days ``YYYY-MM-DD``, and for SYNTHETIC data a
    last column ``synthetic`` = ``true`` on every row."""
    out = frame.with_columns(pl.col(pl.Datetime).dt.strftime(INSTANT_CSV))
    if synthetic:
        out = out.with_columns(pl.lit(True).alias("synthetic"))
    return out.write_csv()


def write_csv(frame: pl.DataFrame, trace: Any, out=None) -> None:
    """:func:`csv_text` of ``frame`` (``trace`` says whether it is SYNTHETIC) to standard output."""
    (out or sys.stdout).write(csv_text(frame, bool(trace.synthetic)))
