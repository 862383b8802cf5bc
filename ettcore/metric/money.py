"""Lost GPU-hours as money: ``--gpu-hour-price PRICE|FILE`` and ``--currency``.

A price is per GPU-hour *held*.  Every Level-2 component is GPU time held and lost, except those of
:data:`UNBILLED` (``scheduling``: waiting for resources, no GPU held yet), which are shown beside as waiting time and
never billed.  Per job (``gpus`` accelerators at ``price`` a GPU-hour)::

    held_gpu_h         = gpus x (wall_s - scheduling_s) / 3600
    cost               = price x held_gpu_h                     # what the job's held time cost
    <component>_cost   = price x gpus x <component>_s / 3600    # each billed component
    lost_cost          = sum of the billed components' costs    # = cost - price x gpus x productive_s / 3600
    waiting_gpu_h      = gpus x scheduling_s / 3600             # not billed

Groups (a model, an owner, the fleet) sum their jobs' money, so a fleet of jobs at different prices is priced job by
job.  Money is generic over the breakdowns of lost time: :func:`breakdowns` lists them (component, owner; a trace
with a breakdown by cause adds its columns the same way), and :func:`lost_by` sums any of them.

The price is a number, or a table (CSV or YAML) of prices by label: each row names values of the jobs table's
columns (``partition``, ``gpu_type``, ``model``, ...; an empty cell or ``*`` matches anything) and a ``price``; the
first row a job matches gives its price.  A column the jobs table does not have, a job that no row matches, a
negative or non-numeric price: an :class:`~ettcore.errors.InputError` naming the file, the row and the field.
No price given: no money anywhere, nothing invented.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import polars as pl

from ettcore.errors import InputError, Problem

__all__ = ["UNBILLED", "PriceRow", "Prices", "parse_prices", "job_money", "lost_by", "breakdowns", "group_money"]

UNBILLED: tuple[str, ...] = ("scheduling",)
"""Components during which no GPU is held (waiting for resources): shown as waiting time, never billed."""

ANY = ("", "*")


@dataclass(frozen=True)
class PriceRow:
    """One row of a price table: the label values it matches (column -> value) and its price a GPU-hour."""

    match: dict[str, str]
    price: float
    row: int


@dataclass(frozen=True)
class Prices:
    """A price a GPU-hour: one number for every job, or a table by label (first matching row wins)."""

    source: str  # the file, or "--gpu-hour-price"
    currency: str = "USD"
    flat: float | None = None
    rows: tuple[PriceRow, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        if self.flat is not None:
            return f"{_fmt(self.flat)} {self.currency} a GPU-hour"
        return f"{self.currency} a GPU-hour from {self.source} ({len(self.rows)} row(s), first match wins)"

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"currency": self.currency, "unbilled": list(UNBILLED)}
        if self.flat is not None:
            d["gpu_hour_price"] = self.flat
        else:
            d["price_table"] = self.source
            d["rows"] = [{**r.match, "price": r.price} for r in self.rows]
        return d

    def job_prices(self, jobs: pl.DataFrame) -> pl.Series:
        """Each job's price a GPU-hour (a Float64 series in ``jobs``' order)."""
        if self.flat is not None:
            return pl.Series("price_per_gpu_h", [self.flat] * jobs.height, pl.Float64)
        cols = {c.lower(): c for c in jobs.columns}
        problems = []
        for r in self.rows:
            for k in r.match:
                if k.lower() not in cols:
                    known = ", ".join(c for c in jobs.columns if not c.endswith("_s") and c not in ("t0", "t1"))
                    problems.append(Problem(self.source, r.row, k, f"unknown label; the jobs table has: {known}"))
        if problems:
            raise InputError(problems[:1])
        expr: pl.Expr = pl.lit(None, pl.Float64)
        for r in reversed(self.rows):  # built from the last row up, so the first matching row wins
            cond = pl.lit(True)
            for k, v in r.match.items():
                cond = cond & (pl.col(cols[k.lower()]).cast(pl.String) == v)
            expr = pl.when(cond).then(pl.lit(r.price, pl.Float64)).otherwise(expr)
        got = jobs.select(pl.col("job_id"), expr.alias("price_per_gpu_h"))
        missing = got.filter(pl.col("price_per_gpu_h").is_null())
        if missing.height:
            first = missing["job_id"][0]
            raise InputError(
                Problem(
                    self.source,
                    None,
                    "price",
                    f"no row matches job {first!r} ({missing.height} job(s) without a price); "
                    "add a row for them or a last row of empty cells (matches anything)",
                )
            )
        return got["price_per_gpu_h"]


def _fmt(v: float) -> str:
    return f"{v:g}"


def _price(text: Any, file: str, row: int | None, fld: str = "price") -> float:
    try:
        v = float(str(text).strip())
    except ValueError:
        raise InputError(Problem(file, row, fld, f"not a number: {text!r}")) from None
    if not math.isfinite(v) or v < 0:
        raise InputError(Problem(file, row, fld, f"a price a GPU-hour is a finite number >= 0, got {text!r}"))
    return v


def _rows_of(path: Path) -> list[tuple[int, dict[str, Any]]]:
    file = str(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(Problem(file, None, None, f"cannot read the price table: {exc.strerror or exc}")) from None
    except UnicodeDecodeError as exc:
        raise InputError(Problem(file, None, None, f"not valid UTF-8 (byte {exc.start})")) from None
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [h.strip() for h in (reader.fieldnames or [])]
        if "price" not in header:
            raise InputError(Problem(file, None, "price", "missing column (a price table has label columns and price)"))
        rows = []
        for i, rec in enumerate(reader, start=1):
            if None in rec:
                raise InputError(Problem(file, i, None, "more fields than the header names"))
            rows.append((i, {k.strip(): v for k, v in rec.items()}))
        return rows
    if suffix in (".yaml", ".yml"):
        import yaml

        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(Problem(file, None, None, f"not valid YAML: {str(exc).splitlines()[0]}")) from None
        if isinstance(doc, dict) and set(doc) == {"prices"}:
            doc = doc["prices"]
        if not isinstance(doc, list):
            raise InputError(Problem(file, None, None, "a YAML price table is a list of rows (or {prices: [...]})"))
        rows = []
        for i, rec in enumerate(doc, start=1):
            if not isinstance(rec, dict):
                raise InputError(Problem(file, i, None, "a row is a mapping of labels and price"))
            if "price" not in rec:
                raise InputError(Problem(file, i, "price", "missing"))
            rows.append((i, {str(k): v for k, v in rec.items()}))
        return rows
    raise InputError(Problem(file, None, None, "a price table is .csv, .yaml or .yml"))


def parse_prices(text: str, currency: str = "USD") -> Prices:
    """``--gpu-hour-price``: a number (every job), else the path of a price table (module docstring)."""
    if not currency or not currency.strip() or any(ch.isspace() for ch in currency):
        raise InputError(
            Problem("--currency", None, "currency", f"a currency is one word (USD, EUR), got {currency!r}")
        )
    try:
        float(text)
    except ValueError:
        pass
    else:
        return Prices("--gpu-hour-price", currency, flat=_price(text, "--gpu-hour-price", None, "gpu-hour-price"))
    path = Path(text)
    if not path.exists():
        raise InputError(
            Problem("--gpu-hour-price", None, "gpu-hour-price", f"neither a number nor a price table file: {text!r}")
        )
    rows = []
    for i, rec in _rows_of(path):
        price = _price(rec.get("price"), str(path), i)
        match = {
            k: str(v).strip() for k, v in rec.items() if k != "price" and v is not None and str(v).strip() not in ANY
        }
        rows.append(PriceRow(match, price, i))
    if not rows:
        raise InputError(Problem(str(path), None, None, "the price table has no rows"))
    return Prices(str(path), currency, rows=tuple(rows))


def job_money(jobs: pl.DataFrame, prices: Prices, components: Sequence[str]) -> pl.DataFrame:
    """One row a job: ``job_id``, ``model``, ``gpus``, ``price_per_gpu_h``, ``held_gpu_h``, ``cost``, ``lost_cost``,
    ``<component>_cost`` for each billed component, ``waiting_gpu_h`` (module docstring), from ``job_summary``."""
    billed = [c for c in components if c not in UNBILLED]
    waiting = [c for c in components if c in UNBILLED]
    g = pl.col("gpus").cast(pl.Float64)
    p = pl.col("price_per_gpu_h")
    wait_s = pl.sum_horizontal([pl.col(f"{c}_s") for c in waiting]) if waiting else pl.lit(0.0)
    out = jobs.with_columns(prices.job_prices(jobs).alias("price_per_gpu_h")).with_columns(
        (g * (pl.col("wall_s") - wait_s) / 3600).alias("held_gpu_h"),
        *[(g * pl.col(f"{c}_s") / 3600 * p).alias(f"{c}_cost") for c in billed],
        (g * wait_s / 3600).alias("waiting_gpu_h"),
    )
    out = out.with_columns(
        (pl.col("held_gpu_h") * p).alias("cost"),
        (pl.sum_horizontal([pl.col(f"{c}_cost") for c in billed]) if billed else pl.lit(0.0)).alias("lost_cost"),
    )
    return out.select(
        "job_id",
        "model",
        "gpus",
        "price_per_gpu_h",
        "held_gpu_h",
        "cost",
        "lost_cost",
        *[f"{c}_cost" for c in billed],
        "waiting_gpu_h",
    )


def breakdowns(components: Sequence[str], owners: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """The breakdowns of lost money: for each (``component``, ``owner``), each key and the billed ``<x>_cost``
    columns it sums.  A breakdown by cause joins here when the trace has lost time by cause."""
    billed = [c for c in components if c not in UNBILLED]
    by_owner: dict[str, list[str]] = {}
    for c in billed:
        by_owner.setdefault(owners[c], []).append(f"{c}_cost")
    return {"component": {c: [f"{c}_cost"] for c in billed}, "owner": by_owner}


def lost_by(money: pl.DataFrame, breakdown: dict[str, list[str]], name: str) -> pl.DataFrame:
    """Lost money summed over jobs per key of one breakdown: ``name``, ``lost_cost``, highest first (ties by key)."""
    rows = [(k, float(sum(money[c].sum() for c in cols))) for k, cols in breakdown.items()]
    return pl.DataFrame(rows, schema={name: pl.String, "lost_cost": pl.Float64}, orient="row").sort(
        ["lost_cost", name], descending=[True, False]
    )


def group_money(money: pl.DataFrame, by: str | None) -> pl.DataFrame:
    """The money of the fleet (``by`` None: one row) or of each value of a job column (``model``): ``held_gpu_h``,
    ``cost``, ``lost_cost``, each ``<component>_cost`` and ``waiting_gpu_h`` summed over jobs."""
    sums = [c for c in money.columns if c.endswith("_cost") or c in ("cost", "held_gpu_h", "waiting_gpu_h")]
    agg = [pl.len().alias("jobs"), *[pl.col(c).sum() for c in sums]]
    if by is None:
        return money.select(agg)
    return money.group_by(by).agg(agg).sort(by)


def money_tables(
    jobs: pl.DataFrame, prices: Prices, components: Sequence[str], owners: dict[str, str]
) -> dict[str, pl.DataFrame]:
    """Everything a report shows of money, from ``job_summary``: ``jobs`` (:func:`job_money`), ``fleet`` and ``model``
    (:func:`group_money`), and one frame a breakdown of lost money (``component``, with its ``owner``; ``owner``)."""
    per_job = job_money(jobs, prices, components)
    out = {"jobs": per_job, "fleet": group_money(per_job, None), "model": group_money(per_job, "model")}
    for name, b in breakdowns(components, owners).items():
        frame = lost_by(per_job, b, name)
        if name == "component":
            frame = frame.with_columns(
                pl.col("component").replace_strict(owners, return_dtype=pl.String).alias("owner")
            )
            frame = frame.select("component", "owner", "lost_cost")
        out[name] = frame
    return out


def records(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts (NaN as None)."""
    return [
        {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
        for r in frame.iter_rows(named=True)
    ]
