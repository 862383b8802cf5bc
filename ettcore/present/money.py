"""Lost money in the fleet reports: the notebooks' ``gpu_hour_price`` and ``currency`` parameters.

Every figure comes from :mod:`ettcore.metric.money` (``money_tables`` on ``job_summary``: per job, per model, the
fleet, and lost money by component and by owner); this module only arranges, labels and draws it.  Money is for
GPU time held: the components of ``money.UNBILLED`` (``scheduling``: waiting for resources, no GPU held) are never
billed and are shown beside the money as waiting GPU-hours.  A price is a parameter, not data: every table and
chart names it, and an assumed price (``assumed=True``) says so.  No price: :func:`lost_money` gives ``None`` and
:func:`section` one line saying that no money is shown; nothing is invented.

In a notebook::

    cost = lost_money(jobs, gpu_hour_price, currency, phase_map=t.phase_map, synthetic=synthetic)
    for part in section(cost, by="model", top=15):
        display(part)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import altair as alt
import polars as pl

from ettcore.metric import money
from ettcore.phases import PhaseMap, components_in
from ettcore.present import charts, tables

__all__ = ["LostMoney", "Note", "lost_money", "section"]

COLUMN_LABELS = {  # the money tables' headers (the unit, GPU-h or the currency, is added)
    "held_gpu_h": "GPU time held",
    "cost": "cost of the time held",
    "lost_gpu_h": "lost GPU time held",
    "lost_cost": "lost",
    "waiting_gpu_h": "waiting, not billed",
}


class Note:
    """One line of text in a report (plain text for nbval, a paragraph in HTML)."""

    def __init__(self, text: str):
        self.text = text

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        import html

        return {"text/plain": self.text, "text/html": f"<p>{html.escape(self.text)}</p>"}

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class LostMoney:
    """The money of a set of jobs at a price: :func:`ettcore.metric.money.money_tables` and what labels it."""

    prices: money.Prices
    tables: dict[str, pl.DataFrame]
    owners: dict[str, str]  # component -> owner
    gpu_h: dict[str, float]  # component -> GPU-hours (held and lost, or waiting for the unbilled ones)
    assumed: bool
    synthetic: bool

    @property
    def currency(self) -> str:
        return self.prices.currency

    @property
    def fleet(self) -> dict[str, Any]:
        """The fleet's row: ``jobs``, ``held_gpu_h``, ``cost``, ``lost_cost``, ``waiting_gpu_h``, ..."""
        return self.tables["fleet"].row(0, named=True)

    @property
    def price_text(self) -> str:
        """The price as a title says it: ``at 2.5 USD a GPU-hour held (ASSUMED: ...)``."""
        if self.prices.flat is not None:
            text = f"at {self.prices.flat:g} {self.currency} a GPU-hour held"
        else:
            text = f"at the prices of {self.prices.source} ({self.currency} a GPU-hour held, first matching row)"
        assumed = " (an ASSUMED price, the parameter gpu_hour_price: not what the fleet paid)"
        return text + (assumed if self.assumed else "")

    @property
    def short_price(self) -> str:
        """The price in a few words, for chart titles and headline labels."""
        what = f"{self.prices.flat:g} {self.currency}/GPU-h" if self.prices.flat is not None else "the price table"
        return ("an assumed " if self.assumed else "") + what

    def _notes(self) -> list[str]:
        unbilled = ", ".join(money.UNBILLED)
        return [
            f"Priced {self.price_text}.",
            f"{unbilled}: waiting for resources with no GPU held, never billed; shown as waiting GPU-hours.",
        ]

    def group_table(self, by: str = "model", top: int | None = None) -> tables.Table:
        """The fleet's money, then each ``by`` value's (the ``top`` that lost most, when given)."""
        per = self.tables[by].sort(["lost_cost", by], descending=[True, False])
        shown = per.head(top) if top else per
        fleet = self.tables["fleet"].with_columns(pl.lit("(fleet)").alias(by)).select(shown.columns)
        frame = pl.concat([fleet, shown]).with_columns(
            pl.when(pl.col("cost") > 0).then(100 * pl.col("lost_cost") / pl.col("cost")).alias("lost_share_pct")
        )
        what = f"the {shown.height} of {per.height} {by}s that lost most" if top and per.height > top else f"each {by}"
        return self._table(
            frame.select(by, "jobs", "held_gpu_h", "cost", "lost_cost", "lost_share_pct", "waiting_gpu_h"),
            f"Money lost ({self.currency}): the fleet and {what}",
            lost_share_pct="lost share of the cost",
        )

    def _table(self, frame: pl.DataFrame, title: str, **labels: str) -> tables.Table:
        """A money table: its columns' labels, the currency as the unit of money, 2 decimals (1 for shares), and the
        notes naming the price and the unbilled components."""
        return tables.table(
            frame,
            title=title,
            labels={**COLUMN_LABELS, **labels},
            units={c: self.currency for c in ("cost", "lost_cost") if c in frame.columns},
            decimals={c: _decimals(frame[c]) for c in frame.columns if frame.schema[c].is_float()},
            notes=self._notes(),
            synthetic=self.synthetic,
        )

    def component_frame(self) -> pl.DataFrame:
        """One row a component (billed ones by lost money, then the unbilled): ``component``, ``owner``, ``billed``,
        ``lost_gpu_h``, ``lost_cost``, ``lost_share_pct`` (of all lost money), ``waiting_gpu_h``."""
        billed = self.tables["component"]
        total = float(billed["lost_cost"].sum())
        rows = [
            {
                "component": r["component"],
                "owner": r["owner"],
                "billed": True,
                "lost_gpu_h": self.gpu_h[r["component"]],
                "lost_cost": r["lost_cost"],
                "lost_share_pct": 100 * r["lost_cost"] / total if total > 0 else None,
                "waiting_gpu_h": None,
            }
            for r in billed.iter_rows(named=True)
        ]
        rows += [
            {
                "component": c,
                "owner": self.owners[c],
                "billed": False,
                "lost_gpu_h": None,
                "lost_cost": None,
                "lost_share_pct": None,
                "waiting_gpu_h": self.gpu_h[c],
            }
            for c in self.gpu_h
            if c in money.UNBILLED
        ]
        schema = {
            "component": pl.String,
            "owner": pl.String,
            "billed": pl.Boolean,
            "lost_gpu_h": pl.Float64,
            "lost_cost": pl.Float64,
            "lost_share_pct": pl.Float64,
            "waiting_gpu_h": pl.Float64,
        }
        return pl.DataFrame(rows, schema=schema, orient="row")

    def component_table(self) -> tables.Table:
        return self._table(
            self.component_frame(),
            f"Money lost by component ({self.currency}), with its owner",
            lost_share_pct="share of the money lost",
        )

    def owner_table(self) -> tables.Table:
        """One row an owner: its components, the GPU time held it lost and its lost money (the metric's sum by
        owner), and the waiting GPU-hours of its unbilled components."""
        comp = self.component_frame()
        frame = (
            comp.group_by("owner", maintain_order=True)
            .agg(
                pl.col("component").str.join(", ").alias("components"),
                pl.col("billed").any(),
                pl.col("lost_gpu_h").sum(),
                (~pl.col("billed")).any().alias("_waits"),
                pl.col("waiting_gpu_h").sum(),
            )
            .join(self.tables["owner"], on="owner", how="left")
            .with_columns(
                pl.when(pl.col("billed")).then(pl.col("lost_gpu_h")).alias("lost_gpu_h"),
                pl.when(pl.col("_waits")).then(pl.col("waiting_gpu_h")).alias("waiting_gpu_h"),
            )
            .sort(["lost_cost", "owner"], descending=[True, False], nulls_last=True)
        )
        return self._table(
            frame.select("owner", "components", "billed", "lost_gpu_h", "lost_cost", "waiting_gpu_h"),
            f"Money lost by owner ({self.currency})",
        )

    def chart(self) -> alt.LayerChart:
        """Bars of the money each component lost (its owner in the label), and the unbilled components beside, as a
        text of their waiting GPU-hours."""
        owner = pl.when(pl.col("owner") == "(none)").then(pl.lit("no owner")).otherwise(pl.col("owner"))
        comp = self.component_frame().with_columns(
            (pl.col("component") + " (" + owner + ")").alias("component (owner)"),
            pl.col("lost_cost").fill_null(0.0).alias("money"),
            pl.when(pl.col("billed"))
            .then(pl.col("lost_cost").map_elements(lambda v: f"{v:,.2f} {self.currency}", return_dtype=pl.String))
            .otherwise(
                pl.col("waiting_gpu_h").map_elements(
                    lambda v: f"not billed: {v:,.2f} GPU-h waiting, no GPU held", return_dtype=pl.String
                )
            )
            .alias("label"),
        )
        order = comp["component (owner)"].to_list()
        comps = charts.component_order(comp["component"].to_list(), include_productive=False)
        # the labels name the component and its owner: no axis title beside them; the x axis leaves room for the
        # text written after the longest bar
        y = alt.Y("component (owner):N", sort=order, title=None, axis=alt.Axis(labelLimit=0))
        top = float(comp["money"].max() or 0.0)
        x = alt.X(
            "money:Q",
            title=f"money lost ({self.currency})",
            scale=alt.Scale(domainMax=1.3 * top) if top > 0 else alt.Undefined,
        )
        bars = (
            alt.Chart(comp)
            .mark_bar()
            .encode(
                x=x,
                y=y,
                color=alt.Color(
                    "component:N",
                    scale=charts.component_scale(comps),
                    sort=comps,
                    title="L2 component",
                    legend=alt.Legend(labelLimit=0),
                ),
                tooltip=["component:N", "owner:N", "label:N"],
            )
        )
        text = alt.Chart(comp).mark_text(align="left", dx=4, fontSize=11).encode(x=x, y=y, text="label:N")
        return alt.layer(bars, text).properties(
            title=charts.title(f"Money lost by component, {self.currency} at {self.short_price}", self.synthetic),
            width=520,
        )


def _decimals(column: pl.Series) -> int:
    """Shares to 0.1 %, money to the cent, GPU-hours to 3 decimals while they are small (a few minutes of one GPU
    still shows: 0.004 GPU-h, not 0.00 beside 0.01 USD), 2 from 10 GPU-hours on."""
    if column.name.endswith("_pct"):
        return 1
    if column.name.endswith("_gpu_h") and float(column.abs().max() or 0.0) < 10:
        return 3
    return 2


def lost_money(
    jobs: pl.DataFrame,
    gpu_hour_price: str,
    currency: str = "USD",
    *,
    phase_map: PhaseMap,
    synthetic: bool,
    assumed: bool = False,
) -> LostMoney | None:
    """The money of ``jobs`` (``metric.job_summary``, possibly a subset) at ``gpu_hour_price`` (a number or a price
    table file, as ``--gpu-hour-price``); ``None`` when no price is given (``""``).  ``assumed``: the price is an
    assumption of the report, not what the fleet paid, and every title says so."""
    if not str(gpu_hour_price).strip():
        return None
    prices = money.parse_prices(str(gpu_hour_price).strip(), currency or "USD")
    components = components_in(jobs.columns)
    owners = {c: phase_map.owner(c) for c in components}
    gpu_h = {c: float((jobs["gpus"].cast(pl.Float64) * jobs[f"{c}_s"]).sum()) / 3600 for c in components}
    return LostMoney(
        prices=prices,
        tables=money.money_tables(jobs, prices, components, owners),
        owners=owners,
        gpu_h=gpu_h,
        assumed=assumed,
        synthetic=synthetic,
    )


def section(cost: LostMoney | None, *, by: str = "model", top: int | None = None) -> Sequence[Any]:
    """What a fleet report shows of money, in order: the price, the fleet and each ``by`` value, the chart by
    component, the tables by component and by owner; or, without a price, one line saying no money is shown."""
    if cost is None:
        return [Note("No GPU-hour price given (the parameter gpu_hour_price): no money is shown.")]
    f = cost.fleet
    return [
        Note(
            f"{f['jobs']:,} jobs held {f['held_gpu_h']:,.2f} GPU-hours costing {f['cost']:,.2f} {cost.currency}, of "
            f"which {f['lost_cost']:,.2f} {cost.currency} lost; {f['waiting_gpu_h']:,.2f} GPU-hours waiting "
            f"({', '.join(money.UNBILLED)}, not billed). Priced {cost.price_text}."
        ),
        cost.group_table(by, top),
        cost.chart(),
        cost.component_table(),
        cost.owner_table(),
    ]
