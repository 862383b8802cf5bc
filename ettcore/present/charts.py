"""Altair chart builders for the notebooks and reports.

Every builder takes frames that :mod:`ettcore` computed (it computes no metric
itself) and returns an Altair chart whose title says ``SYNTHETIC`` when the
data is synthetic.  Durations are drawn in minutes (``seconds / 60``) or
GPU-hours, as labelled.

Display: :func:`use_renderer` registers the ``ett`` renderer, which emits the
chart as a Vega-Lite v5 mime bundle (``application/vnd.vegalite.v5+json``, drawn
interactively by JupyterLab's built-in Vega extension, offline) plus a short
deterministic ``text/plain`` line, so that nbval compares stable outputs.
:mod:`ettcore.present.report` turns that bundle into an inline ``vegaEmbed`` call in the
HTML reports, with the Vega JavaScript embedded in the page (no network).
Charts use only Vega-Lite features that v5 supports (the specs are checked by
rendering them with the v5 compiler in the tests).
"""

from __future__ import annotations

from typing import Sequence

import altair as alt
import polars as pl

from ettcore.phases import ALL_COMPONENTS, components_in
from ettcore.present.calendar import shown_label
from ettcore.vocabulary import VOCABULARY, Vocabulary

VEGALITE_V5_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
VEGALITE_MIMETYPE = "application/vnd.vegalite.v5+json"
VL_VERSION = "v5.21"  # the Vega-Lite library bundled into HTML reports

# One colour per L2 component (and effective training), the same in every chart.
COMPONENT_COLORS: dict[str, str] = {
    "effective_training": "#4c9a2a",
    "scheduling": "#8c6d31",
    "hardware_setup": "#7b4173",
    "trainer_init": "#3182bd",
    "pt2_compile": "#e6550d",
    "wasted_training": "#d6616b",
    "shutdown": "#636363",
    "unattributed": "#bdbdbd",
}
COMPONENT_ORDER: tuple[str, ...] = ("effective_training",) + ALL_COMPONENTS
# Colours of a mapping file's own components, given in the order the chart lists them (after the defaults)
EXTRA_COLORS: tuple[str, ...] = ("#17becf", "#bcbd22", "#9467bd", "#e377c2", "#8c564b", "#1f77b4", "#ff7f0e", "#2ca02c")


def component_order(seen: Sequence[str], include_productive: bool = True) -> list[str]:
    """The components ``seen`` (a chart's data), in report order: effective training, the six defaults, a mapping
    file's own components in the order first seen (the metric lists them in the mapping's order), unattributed."""
    seen = list(dict.fromkeys(seen))
    extras = [c for c in seen if c not in COMPONENT_COLORS]
    order = [c for c in COMPONENT_ORDER[:-1] if c in seen] + extras
    order += [c for c in COMPONENT_ORDER[-1:] if c in seen]
    return order if include_productive else [c for c in order if c != "effective_training"]


def title(text: str, synthetic: bool) -> str:
    """A chart title, prefixed with ``SYNTHETIC:`` for synthetic data."""
    return f"SYNTHETIC: {text}" if synthetic else text


def component_scale(domain: Sequence[str] = COMPONENT_ORDER) -> alt.Scale:
    """One colour a component: the defaults' own, and the extra colours, in the order given, for a user's."""
    extras = [c for c in domain if c not in COMPONENT_COLORS]
    colors = {c: EXTRA_COLORS[i % len(EXTRA_COLORS)] for i, c in enumerate(extras)}
    return alt.Scale(domain=list(domain), range=[COMPONENT_COLORS.get(c) or colors[c] for c in domain])


def to_v5_spec(chart: alt.TopLevelMixin) -> dict:
    """The chart's Vega-Lite spec, declared as v5 (the version JupyterLab and the reports draw)."""
    spec = chart.to_dict()
    spec["$schema"] = VEGALITE_V5_SCHEMA
    return spec


def _chart_title(spec: dict) -> str:
    """The chart's title, or the first title of its parts (a concatenated or layered chart titles its panels)."""
    t = spec.get("title")
    if isinstance(t, dict):
        t = t.get("text")
    if isinstance(t, list):
        t = " ".join(t)
    if t:
        return str(t)
    for key in ("vconcat", "hconcat", "concat", "layer"):
        for part in spec.get(key) or ():
            found = _chart_title(part)
            if found != "untitled":
                return found
    return "untitled"


def ett_renderer(spec: dict, **_: object) -> dict:
    """Altair renderer: a Vega-Lite v5 mime bundle and a stable one-line text form."""
    spec = dict(spec)
    spec["$schema"] = VEGALITE_V5_SCHEMA
    return {VEGALITE_MIMETYPE: spec, "text/plain": f"<Chart: {_chart_title(spec)}>"}


alt.renderers.register("ett", ett_renderer)


def use_renderer(name: str = "ett") -> None:
    """Select the Altair renderer (``ett`` by default; any Altair renderer name works)."""
    alt.renderers.enable(name)


# ----------------------------------------------------------------------------- one job

# The vocabulary's colours and legend labels (ettcore/defaults/vocabulary.yaml, causes.yaml), by name: the Level 1
# buckets (productive keeps the training green; no loss bucket is green) and the end reasons.  The interruption causes
# and their categories are drawn in the colours of the trace's vocabulary (cause_bars, category_bars).
L1_COLORS: dict[str, str] = VOCABULARY.bucket_colors
L1_LABELS: dict[str, str] = VOCABULARY.bucket_labels
END_REASON_COLORS: dict[str, str] = VOCABULARY.end_reason_colors
END_REASON_LABELS: dict[str, str] = VOCABULARY.end_reason_labels


def l1_scale(buckets: Sequence[str]) -> alt.Scale:
    """The colour scale of Level 1 buckets (names, in the order given), over their legend labels."""
    return alt.Scale(domain=[L1_LABELS[b] for b in buckets], range=[L1_COLORS[b] for b in buckets])


def end_reason_scale(reasons: Sequence[str]) -> alt.Scale:
    """The colour scale of end reasons (names, in the order given), over their legend labels."""
    return alt.Scale(domain=[END_REASON_LABELS[r] for r in reasons], range=[END_REASON_COLORS[r] for r in reasons])


def _legend_color(field: str, title: str, scale: alt.Scale, **legend: int) -> alt.Color:
    """A colour channel over ``field`` (a timeline lane's) whose legend, below the chart, lists the scale's domain in
    its order."""
    return alt.Color(
        field,
        title=title,
        sort=list(scale.domain),
        scale=scale,
        legend=alt.Legend(orient="bottom", labelLimit=200, **legend),
    )


def end_reason_label(column: str = "end_reason") -> pl.Expr:
    """An end reason's legend label (a name the vocabulary does not know stays as it is)."""
    return pl.col(column).replace_strict(END_REASON_LABELS, default=pl.col(column))


LABEL_PX = 6.2  # the width of a character of an 11-pixel label, about (measured: 6.0), for what fits in a box


def _hms(ms: pl.Expr) -> pl.Expr:
    """A duration in ms as text: ``1 h 05 min``, ``12 min 30 s``, ``4.25 s``."""
    s = ms / 1000
    return (
        pl.when(s >= 3600)
        .then(
            pl.format(
                "{} h {} min",
                (s // 3600).cast(pl.Int64),
                ((s % 3600) // 60).cast(pl.Int64).cast(pl.String).str.zfill(2),
            )
        )
        .when(s >= 60)
        .then(pl.format("{} min {} s", (s // 60).cast(pl.Int64), (s % 60).round(0).cast(pl.Int64)))
        .otherwise(pl.format("{} s", s.round(2)))
    )


def _utc_text(ms: pl.Expr) -> pl.Expr:
    return pl.from_epoch(ms, time_unit="ms").dt.strftime("%Y-%m-%d %H:%M:%S%.3f UTC")


def _time_axis(span_ms: int, relative: bool, unit_ms: float, unit: str) -> dict:
    if relative:
        return {"title": f"{unit} since the job's start (T0)", "labelOverlap": True, "labelFlush": True}
    fmt = "%H:%M" if span_ms <= 86_400_000 else "%d %b %H:%M"
    if span_ms <= 3_600_000:  # ticks may be 30 s apart: minutes alone would repeat a label
        fmt = "%H:%M:%S"
    return {"title": "time (UTC, 24-hour clock)", "format": fmt, "labelOverlap": True}


def _time_format(times: pl.Series) -> str:
    """A d3 time format for an axis over ``times``: clock times within a day, days (and a clock) over a few days,
    dates beyond."""
    t = times.drop_nulls()
    span_s = (t.max() - t.min()).total_seconds() if t.len() > 1 else 0
    if span_s <= 86_400:
        return "%H:%M"
    if span_s <= 4 * 86_400:
        return "%d %b %H:%M"
    return "%Y-%m-%d"


def gantt(
    tl, *, synthetic: bool, relative: bool = False, chart_title: str | None = None, width: int = 760
) -> alt.VConcatChart:
    """Timeline of one or more jobs from the metric's own per-instant attribution
    (:class:`ettcore.metric.intervals.Timeline`).

    Per job three lanes: its attempts (end reason written on each, interruptions marked), the Level-1 bucket of
    every instant, and the Level-2 component of every instant (queue, replay and unattributed time included).
    ``relative=True`` puts every job on one axis of time since its own T0, so paired jobs compare.  Drag on the
    strip below to zoom (double-click to reset); tooltips give times (UTC) and durations.
    """
    iv, at = tl.intervals, tl.attempts
    jobs = tl.job_ids
    t0 = at.group_by("job_id").agg(pl.col("t0_ms").first()).sort("job_id")
    span_ms = int((at["t1_ms"] - at["t0_ms"]).max()) if at.height else 0
    unit, unit_ms = (
        ("seconds", 1000.0)
        if span_ms < 20 * 60_000
        else (("minutes", 60_000.0) if span_ms < 48 * 3_600_000 else ("hours", 3_600_000.0))
    )
    multi = len(jobs) > 1

    def lane(job: pl.Expr, name: str) -> pl.Expr:
        return (job + " · " + name) if multi else pl.lit(name)

    def xcols(frame: pl.DataFrame) -> pl.DataFrame:
        frame = frame.join(t0, on="job_id", how="left")
        return frame.with_columns(
            ((pl.col("start_ms") - pl.col("t0_ms")) / unit_ms).alias("x0"),
            ((pl.col("end_ms") - pl.col("t0_ms")) / unit_ms).alias("x1"),
            _utc_text(pl.col("start_ms")).alias("start (UTC)"),
            _utc_text(pl.col("end_ms")).alias("end (UTC)"),
            _hms(pl.col("end_ms") - pl.col("start_ms")).alias("duration"),
            _hms(pl.col("start_ms") - pl.col("t0_ms")).alias("from T0"),
            pl.from_epoch("start_ms", time_unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").alias("t_start"),
            pl.from_epoch("end_ms", time_unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").alias("t_end"),
        )

    l2 = xcols(iv).with_columns(
        lane(pl.col("job_id"), "L2: where the time went").alias("lane"),
        pl.col("bucket").replace_strict(L1_LABELS, default=pl.col("bucket")).alias("L1 bucket"),
        pl.when(pl.col("bucket") == "productive")
        .then(pl.lit("train (new data)"))
        .when(pl.col("phase") == "train")
        .then(pl.lit("train (replay of done steps)"))
        .otherwise(pl.col("phase"))
        .alias("what"),
    )
    # L1 lane: consecutive intervals of one bucket merged
    l1 = (
        iv.sort("job_id", "start_ms")
        .with_columns(
            (pl.col("bucket") != pl.col("bucket").shift(1).over("job_id"))
            .fill_null(True)
            .cum_sum()
            .over("job_id")
            .alias("_run")
        )
        .group_by("job_id", "_run", "bucket")
        .agg(pl.col("start_ms").min(), pl.col("end_ms").max())
        .drop("_run")
        .sort("job_id", "start_ms")
    )
    l1 = xcols(l1).with_columns(
        lane(pl.col("job_id"), "L1: bucket").alias("lane"),
        pl.col("bucket").replace_strict(L1_LABELS, default=pl.col("bucket")).alias("L1 bucket"),
    )
    att = xcols(at.select("job_id", "attempt", "start_ms", "end_ms", "end_reason", "interrupted")).with_columns(
        lane(pl.col("job_id"), "attempts").alias("lane"), end_reason_label().alias("end reason")
    )
    att = att.with_columns(pl.format("attempt {}: {}", pl.col("attempt"), pl.col("end reason")).alias("label"))
    # the text written on an attempt's box is what fits in it at the unzoomed scale (the whole label, its short
    # form, the number alone, or nothing): a label never runs into the next attempt (the tooltip has it all)
    domain_ms = span_ms if relative else (int(at["t1_ms"].max() - at["t0_ms"].min()) if at.height else 0)
    px = (pl.col("end_ms") - pl.col("start_ms")) * (width / max(domain_ms, 1)) - 8  # the box less its margins
    px = px - pl.when(pl.col("interrupted")).then(10).otherwise(0)  # room for the interruption's triangle
    short = pl.format("{}: {}", pl.col("attempt"), pl.col("end reason"))
    att = att.with_columns(
        pl.when(px >= pl.col("label").str.len_chars() * LABEL_PX)
        .then(pl.col("label"))
        .when(px >= short.str.len_chars() * LABEL_PX)
        .then(short)
        .when(px >= pl.col("attempt").cast(pl.String).str.len_chars() * LABEL_PX)
        .then(pl.col("attempt").cast(pl.String))
        .otherwise(pl.lit(""))
        .alias("shown")
    )
    lanes = [
        n
        for j in jobs
        for n in (
            [f"{j} · attempts", f"{j} · L1: bucket", f"{j} · L2: where the time went"]
            if multi
            else ["attempts", "L1: bucket", "L2: where the time went"]
        )
    ]
    field0, field1 = ("x0", "x1") if relative else ("t_start", "t_end")
    xtype = "Q" if relative else "T"
    axis = _time_axis(span_ms, relative, unit_ms, unit)
    brush = alt.selection_interval(encodings=["x"], name="zoom")
    x_scale = (
        alt.Scale(domain=brush, type="linear", nice=False, zero=True)
        if relative
        else alt.Scale(domain=brush, type="utc")
    )
    axis_kw = {k: v for k, v in axis.items() if k != "title"}
    x = alt.X(f"{field0}:{xtype}", title=axis["title"], scale=x_scale, axis=alt.Axis(**axis_kw))
    y = alt.Y("lane:N", sort=lanes, title=None, axis=alt.Axis(labelLimit=320))
    times = ["start (UTC):N", "end (UTC):N", "duration:N", "from T0:N"]
    comps = [c for c in tl.components if c in set(iv["component"])] or list(COMPONENT_ORDER)  # in report order
    buckets = [b for b in L1_COLORS if b in set(iv["bucket"])]
    bars_l2 = (
        alt.Chart(l2)
        .mark_bar(height={"band": 0.8})
        .encode(
            x=x,
            x2=f"{field1}:{xtype}",
            y=y,
            color=alt.Color(
                "component:N",
                title="L2 component",
                scale=component_scale(comps),
                sort=comps,
                legend=alt.Legend(orient="bottom", columns=4, labelLimit=200),
            ),
            tooltip=["job_id:N", "component:N", "what:N", "L1 bucket:N", "attempt:N", "owner:N", *times],
        )
    )
    bars_l1 = (
        alt.Chart(l1)
        .mark_bar(height={"band": 0.8})
        .encode(
            x=x,
            x2=f"{field1}:{xtype}",
            y=y,
            color=_legend_color("L1 bucket:N", "L1 bucket", l1_scale(buckets), columns=3),
            tooltip=["job_id:N", "L1 bucket:N", *times],
        )
    )
    bars_at = (
        alt.Chart(att)
        .mark_bar(height={"band": 0.8}, fill="#f0f0f0", stroke="#525252", strokeWidth=1)
        .encode(x=x, x2=f"{field1}:{xtype}", y=y, tooltip=["job_id:N", "label:N", *times])
    )
    text_at = (
        alt.Chart(att)
        .mark_text(align="left", dx=4, fontSize=11, color="#252525")
        .encode(x=alt.X(f"{field0}:{xtype}"), y=y, text="shown:N")
    )
    interrupted = att.filter(pl.col("interrupted"))
    reasons = [r for r in VOCABULARY.interruptions if r in set(interrupted["end_reason"])]  # in vocabulary order
    ends = (
        alt.Chart(interrupted)
        .mark_point(shape="triangle-down", size=120, filled=True)
        .encode(
            x=alt.X(f"{field1}:{xtype}"),
            y=y,
            color=_legend_color("end reason:N", "interruption", end_reason_scale(reasons))
            if reasons
            else alt.Undefined,
            tooltip=["job_id:N", "label:N", "end (UTC):N"],
        )
    )
    detail = (
        alt.layer(bars_at, text_at, ends, bars_l1, bars_l2)
        .resolve_scale(color="independent")
        .properties(
            width=width,
            height=28 * len(lanes),
            title=title(chart_title or ("Timeline of " + ", ".join(jobs)), synthetic),
        )
    )
    overview = (
        alt.Chart(l2)
        .mark_bar()
        .encode(
            x=alt.X(
                f"{field0}:{xtype}",
                title="drag here to zoom the timeline above; double-click to reset",
                scale=alt.Scale(type="linear", nice=False, zero=True) if relative else alt.Scale(type="utc"),
                axis=alt.Axis(**axis_kw),
            ),
            x2=f"{field1}:{xtype}",
            y=alt.Y("job_id:N", title=None, sort=jobs, axis=alt.Axis(labelLimit=320)),
            color=alt.Color("component:N", scale=component_scale(comps), legend=None),
        )
        .add_params(brush)
        .properties(width=width, height=14 * len(jobs) + 6)
    )
    return alt.vconcat(detail, overview).resolve_scale(color="independent")


# ----------------------------------------------------------------------------- L1 / L2


def l2_long(summary: pl.DataFrame, key: str = "job_id") -> pl.DataFrame:
    """Per-row component seconds (``<component>_s`` columns of ``job_summary``) as long ``key, component, minutes``."""
    cols = {"productive_s": "effective_training", **{f"{c}_s": c for c in components_in(summary.columns)}}
    return (
        summary.select(key, *cols)
        .unpivot(index=key, variable_name="column", value_name="seconds")
        .with_columns(
            pl.col("column").replace_strict(cols).alias("component"), (pl.col("seconds") / 60).alias("minutes")
        )
        .drop("column")
    )


def l1_long(frame: pl.DataFrame, key: str, suffix: str = "_gpu_h", value: str = "gpu_h") -> pl.DataFrame:
    """Per-row Level 1 columns (``<stem><suffix>`` of ``job_summary``, ``fleet_summary``) as long ``key, L1 bucket,
    value``, each bucket by its table label, in report order."""
    cols = {f"{b.stem}{suffix}": b.table_label for b in VOCABULARY.l1_buckets}
    return (
        frame.select(key, *cols)
        .unpivot(index=key, variable_name="column", value_name=value)
        .with_columns(pl.col("column").replace_strict(cols).alias("L1 bucket"))
        .drop("column")
    )


def stacked_components(
    long: pl.DataFrame,
    *,
    key: str = "job_id",
    value: str = "minutes",
    synthetic: bool,
    chart_title: str = "Where the wall time went (L2 components)",
    include_productive: bool = True,
    normalize: bool = False,
    sort: Sequence[str] | None = None,
    key_title: str | None = None,
) -> alt.Chart:
    """Horizontal stacked bars: one bar per ``key``, segments per component (optionally shares of the total).

    ``sort``: the order of the bars (default: as in ``long``); labels are never cut short.
    """
    data = long if include_productive else long.filter(pl.col("component") != "effective_training")
    order = component_order([*COMPONENT_ORDER, *long["component"].to_list()], include_productive)
    data = data.with_columns(
        pl.col("component").replace_strict({c: i for i, c in enumerate(order)}, default=99).alias("k")
    )
    # Vega-Lite's "no sort" still orders the aggregated bars by their text (job 10 before job 2): name the order
    sort = list(sort) if sort else data[key].unique(maintain_order=True).to_list()
    return (
        alt.Chart(data.select(key, "component", value, "k"))
        .mark_bar()
        .encode(
            y=alt.Y(
                f"{key}:N",
                title=key_title or key.replace("_id", "").replace("_", " "),
                sort=sort,
                axis=alt.Axis(labelLimit=0),
            ),
            x=alt.X(
                f"sum({value}):Q",
                title=("share of wall time" if normalize else value),
                stack="normalize" if normalize else True,
                axis=alt.Axis(format="%") if normalize else alt.Undefined,
            ),
            color=alt.Color("component:N", scale=component_scale(order), title="L2 component"),
            order=alt.Order("k:Q"),
            tooltip=[f"{key}:N", "component:N", alt.Tooltip(f"sum({value}):Q", format=".1f", title=value)],
        )
        .properties(title=title(chart_title, synthetic), width=560)
    )


def l1_bars(
    summary_row: dict, *, synthetic: bool, chart_title: str = "Level 1: productive time and the four losses"
) -> alt.Chart:
    """One stacked bar of a job's (or the fleet's) L1 split, in minutes (the L1 colours of the timeline)."""
    cols = {b: f"{stem}_s" for b, stem in VOCABULARY.bucket_stems.items()}
    labels = [L1_LABELS[k] for k in cols]
    df = pl.DataFrame(
        {"bucket": labels, "minutes": [summary_row[c] / 60 for c in cols.values()], "k": list(range(len(cols)))}
    )
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            x=alt.X("sum(minutes):Q", title="minutes"),
            color=alt.Color(
                "bucket:N",
                sort=labels,
                title="L1 bucket",
                scale=l1_scale(list(cols)),
            ),
            order=alt.Order("k:Q"),
            tooltip=["bucket:N", alt.Tooltip("minutes:Q", format=".1f")],
        )
        .properties(title=title(chart_title, synthetic), width=560, height=60)
    )


def owner_bars(owner_hours: pl.DataFrame, *, synthetic: bool) -> alt.Chart:
    """GPU-hours lost per owning team (``metric.owner_gpu_hours``)."""
    return (
        alt.Chart(owner_hours)
        .mark_bar()
        .encode(
            y=alt.Y("owner:N", sort="-x", title="owner"),
            x=alt.X("gpu_h:Q", title="GPU-hours lost"),
            color=alt.Color(
                "component:N",
                scale=component_scale(component_order([*ALL_COMPONENTS, *owner_hours["component"].to_list()], False)),
                title="component",
            ),
            tooltip=["owner:N", "component:N", alt.Tooltip("gpu_h:Q", format=".2f")],
        )
        .properties(title=title("GPU-hours lost by owner", synthetic), width=480)
    )


def drilldown(
    summary: pl.DataFrame, *, synthetic: bool, group: str = "model", top: int = 15, chart_title: str | None = None
) -> alt.VConcatChart:
    """Fleet -> group -> job, with Altair selections (JupyterLab and the HTML reports alike).

    Top: GPU-hours lost per ``group`` (the ``top`` groups that lost most); click one.  Middle: that group's jobs,
    ETT% against start time (size: GPUs; colour: interruptions); click one.  Bottom: that job's wall time by L2
    component.  ``summary`` is :func:`ettcore.metric.job_summary` (or a subset).
    """
    comp_cols = {f"{c}_s": c for c in components_in(summary.columns)}
    order = component_order([*COMPONENT_ORDER, *comp_cols.values()])
    s = summary.with_columns(
        pl.col(group).cast(pl.String).alias("_group"),
        ((pl.col("wall_s") - pl.col("productive_s")) * pl.col("gpus") / 3600).alias("lost_gpu_h"),
    )
    groups = (
        s.group_by("_group")
        .agg(
            pl.col("lost_gpu_h").sum(),
            pl.len().alias("jobs"),
            (100 * (pl.col("productive_s") * pl.col("gpus")).sum() / (pl.col("wall_s") * pl.col("gpus")).sum()).alias(
                "ett_pct"
            ),
        )
        .sort(["lost_gpu_h", "_group"], descending=[True, False])
        .head(top)
    )
    keep = groups["_group"].to_list()
    jobs = s.filter(pl.col("_group").is_in(keep)).select(
        "job_id",
        "_group",
        "gpus",
        "ett_pct",
        "nof",
        "lost_gpu_h",
        "wall_s",
        pl.col("t0").dt.strftime("%Y-%m-%dT%H:%M:%SZ").alias("t0"),
        pl.col("t0").dt.strftime("%Y-%m-%d %H:%M UTC").alias("start (UTC)"),
        *[pl.col(c) for c in comp_cols],
        pl.col("productive_s"),
    )
    long = (
        jobs.select("job_id", "_group", "productive_s", *comp_cols)
        .unpivot(index=["job_id", "_group"], variable_name="column", value_name="seconds")
        .with_columns(
            pl.col("column").replace_strict({"productive_s": "effective_training", **comp_cols}).alias("component"),
            (pl.col("seconds") / 60).alias("minutes"),
        )
        .drop("column", "seconds")
    )
    pick_group = alt.selection_point(
        fields=["_group"], name="pick_group", empty=False, value=[{"_group": keep[0]}] if keep else None
    )
    pick_job = alt.selection_point(fields=["job_id"], name="pick_job", empty=False)
    g_label = group.replace("_", " ")
    top_chart = (
        alt.Chart(groups.rename({"_group": "_group"}))
        .mark_bar()
        .encode(
            y=alt.Y("_group:N", sort="-x", title=g_label, axis=alt.Axis(labelLimit=240)),
            x=alt.X("lost_gpu_h:Q", title="GPU-hours lost"),
            color=alt.condition(pick_group, alt.value("#c51b7d"), alt.value("#9ecae1")),
            tooltip=[
                alt.Tooltip("_group:N", title=g_label),
                "jobs:Q",
                alt.Tooltip("lost_gpu_h:Q", format=",.1f", title="GPU-hours lost"),
                alt.Tooltip("ett_pct:Q", format=".2f", title="ETT% (GPU-time weighted)"),
            ],
        )
        .add_params(pick_group)
        .properties(
            title=title(
                chart_title
                or f"Drill-down: click a {g_label} (the {len(keep)} that lost most GPU-hours), then one of its jobs",
                synthetic,
            ),
            width=560,
            height=max(120, 16 * len(keep)),
        )
    )
    mid = (
        alt.Chart(jobs)
        .mark_point(filled=True, opacity=0.8)
        .encode(
            x=alt.X("t0:T", title="job start (UTC)", scale=alt.Scale(type="utc"), axis=alt.Axis(format="%d %b")),
            y=alt.Y("ett_pct:Q", title="ETT%", scale=alt.Scale(domain=[0, 100])),
            size=alt.Size("gpus:Q", title="GPUs", scale=alt.Scale(range=[30, 400])),
            color=alt.condition(
                pick_job,
                alt.value("#c51b7d"),
                alt.Color("nof:O", title="interruptions (NoF)", scale=alt.Scale(scheme="oranges")),
            ),
            tooltip=[
                "job_id:N",
                alt.Tooltip("_group:N", title=g_label),
                "gpus:Q",
                "start (UTC):N",
                alt.Tooltip("ett_pct:Q", format=".2f", title="ETT%"),
                alt.Tooltip("nof:Q", title="NoF"),
                alt.Tooltip("lost_gpu_h:Q", format=",.1f", title="GPU-hours lost"),
            ],
        )
        .transform_filter(pick_group)
        .add_params(pick_job)
        .properties(title=f"Jobs of the selected {g_label}: click a job", width=560, height=200)
    )
    bottom = (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("component:N", sort=order, title=None),
            x=alt.X("minutes:Q", title="minutes of the selected job's wall time"),
            color=alt.Color("component:N", scale=component_scale(order), legend=None),
            tooltip=["job_id:N", "component:N", alt.Tooltip("minutes:Q", format=",.1f")],
        )
        .transform_filter(pick_job)
        .properties(title="Where the selected job's wall time went (L2)", width=560, height=170)
    )
    return alt.vconcat(top_chart, mid, bottom).resolve_scale(color="independent", size="independent")


# ----------------------------------------------------------------------------- start-up and what-if


def waterfall(
    steps: Sequence[tuple[str, float]],
    *,
    synthetic: bool,
    unit: str = "min",
    chart_title: str = "TTS waterfall",
    final_label: str = "after all",
) -> alt.LayerChart:
    """Waterfall: ``steps = [(baseline label, total), (change label, total after it), ...]``.

    The baseline and the final total are bars from zero; each change is a bar
    floating from the previous total to the new one (green when it reduces).
    """
    if len(steps) < 1:
        raise ValueError("a waterfall needs at least the baseline step")
    rows = [
        {
            "label": steps[0][0],
            "lo": 0.0,
            "hi": float(steps[0][1]),
            "kind": "total",
            "delta": 0.0,
            "total": float(steps[0][1]),
        }
    ]
    for (_, prev), (label, total) in zip(steps, steps[1:]):
        rows.append(
            {
                "label": label,
                "lo": float(min(prev, total)),
                "hi": float(max(prev, total)),
                "kind": "reduction" if total <= prev else "increase",
                "delta": float(total - prev),
                "total": float(total),
            }
        )
    if len(steps) > 1:
        last = float(steps[-1][1])
        rows.append({"label": final_label, "lo": 0.0, "hi": last, "kind": "total", "delta": 0.0, "total": last})
    df = pl.DataFrame(rows)
    order = df["label"].to_list()
    base = alt.Chart(df).encode(x=alt.X("label:N", sort=order, title=None, axis=alt.Axis(labelAngle=-20)))
    bars = base.mark_bar().encode(
        y=alt.Y("lo:Q", title=unit),
        y2="hi:Q",
        color=alt.Color(
            "kind:N",
            scale=alt.Scale(domain=["total", "reduction", "increase"], range=["#3182bd", "#4c9a2a", "#d6616b"]),
            title=None,
        ),
        tooltip=["label:N", alt.Tooltip("total:Q", format=".1f"), alt.Tooltip("delta:Q", format="+.1f")],
    )
    text = base.mark_text(dy=-6).encode(y="hi:Q", text=alt.Text("total:Q", format=".1f"))
    return (bars + text).properties(title=title(chart_title, synthetic), width=520)


def lines(
    frame: pl.DataFrame,
    x: str,
    y: str,
    color: str | None,
    *,
    synthetic: bool,
    chart_title: str,
    x_title: str | None = None,
    y_title: str | None = None,
    points: bool = False,
    color_title: str | None = None,
    x_domain: Sequence[float] | None = None,
    markers: Sequence[tuple[float, str]] = (),
    y_zero: bool = True,
    log: str = "",
) -> alt.LayerChart:
    """A line chart of ``y`` against ``x`` (one line per ``color`` value).

    ``x`` may be numeric, a time, or text (bucket labels such as "Jan 2026": one tick each, in the frame's order).
    ``x_domain`` limits the x axis; ``markers`` draws a labelled vertical rule at each ``(x, label)`` (an optimum);
    ``y_zero=False`` lets the y axis start near the data instead of at zero; ``log`` names the axes drawn on a log
    scale (``"x"``, ``"y"`` or ``"xy"``).
    """
    if set(log) - {"x", "y"}:
        raise ValueError(f"log takes 'x', 'y' or 'xy', got {log!r}")
    xs = {"type": "log"} if "x" in log else {}
    scale = alt.Scale(domain=list(x_domain), nice=False, **xs) if x_domain else alt.Scale(**xs) if xs else alt.Undefined
    yscale = alt.Scale(type="log") if "y" in log else alt.Undefined if y_zero else alt.Scale(zero=False)
    kind = frame.schema[x]
    xt = f"{x}:Q" if kind.is_numeric() else f"{x}:T" if kind.is_temporal() else f"{x}:O"
    if xt.endswith(":O"):
        xaxis = alt.Axis(labelAngle=0)
    elif xt.endswith(":T"):  # one clock for every label: never "12 PM" among 24-hour times, nor "February" among days
        xaxis = alt.Axis(format=_time_format(frame[x]), labelOverlap=True)
    else:
        xaxis = alt.Undefined
    enc = {
        "x": alt.X(
            xt,
            title=x_title or x,
            scale=scale,
            sort=None if xt.endswith(":O") else alt.Undefined,
            axis=xaxis,
        ),
        "y": alt.Y(f"{y}:Q", title=y_title or y, scale=yscale),
        "tooltip": [
            alt.Tooltip(xt, title=x_title or x, format=".2f" if frame.schema[x].is_numeric() else alt.Undefined),
            alt.Tooltip(f"{y}:Q", format=".2f", title=y_title or y),
        ]
        + ([alt.Tooltip(f"{color}:N", title=color_title or color)] if color else []),
    }
    if color:  # legend labels are never cut short (lines told apart by their ends: "interval low", "interval high")
        enc["color"] = alt.Color(f"{color}:N", title=color_title or color, legend=alt.Legend(labelLimit=0))
    data = frame.filter((pl.col(x) >= x_domain[0]) & (pl.col(x) <= x_domain[1])) if x_domain else frame
    chart = alt.Chart(data).mark_line(point=points, clip=True).encode(**enc)
    if markers:
        m = pl.DataFrame({"x": [float(v) for v, _ in markers], "label": [lab for _, lab in markers]})
        rule = (
            alt.Chart(m)
            .mark_rule(strokeDash=[4, 3], color="#444")
            .encode(x=alt.X("x:Q", scale=scale), tooltip=["label:N"])
        )
        text = (
            alt.Chart(m)
            .mark_text(align="left", dx=4, dy=-4, baseline="top", fontSize=11, color="#222")
            .encode(x=alt.X("x:Q", scale=scale), y=alt.value(4), text="label:N")
        )
        chart = chart + rule + text
    return alt.layer(chart).properties(title=title(chart_title, synthetic), width=560)


def grouped_bars(
    frame: pl.DataFrame,
    x: str,
    y: str,
    color: str,
    *,
    synthetic: bool,
    chart_title: str,
    column: str | None = None,
    y_title: str | None = None,
    independent_y: bool = False,
    x_title: str | None = None,
    color_title: str | None = None,
    colors: dict[str, str] | None = None,
    x_sort: Sequence[str] | str | None = None,
    side_by_side: bool = True,
) -> alt.Chart:
    """Grouped bars: ``color`` values side by side inside each ``x``; with ``column``, one panel per value.

    ``colors`` maps each ``color`` value to its colour (e.g. paired shades for a 2 x 2 design).  ``side_by_side=False``
    draws one full-width bar per ``x``, coloured by its ``color`` value (a category each ``x`` belongs to, such as a
    cause's group): no narrow bar offset inside an empty band.
    """
    cscale = alt.Scale(domain=list(colors), range=list(colors.values())) if colors else alt.Undefined
    offset = (
        {"xOffset": alt.XOffset(f"{color}:N", sort=list(colors) if colors else alt.Undefined)} if side_by_side else {}
    )
    chart = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X(
                f"{x}:N",
                title=None if column else (x_title or x),
                sort=x_sort if x_sort is not None else None,
                axis=alt.Axis(labelAngle=-30, labelLimit=200),
            ),
            **offset,
            y=alt.Y(f"{y}:Q", title=y_title or y),
            color=alt.Color(
                f"{color}:N", title=color_title or color, scale=cscale, sort=list(colors) if colors else alt.Undefined
            ),
            tooltip=[
                alt.Tooltip(f"{x}:N", title=x_title or x),
                *([] if color == x else [alt.Tooltip(f"{color}:N", title=color_title or color)]),
                alt.Tooltip(f"{y}:Q", format=".2f", title=y_title or y),
            ],
        )
    )
    if column:
        chart = chart.properties(width=170, height=170).facet(facet=alt.Facet(f"{column}:N", title=None), columns=3)
        if independent_y:
            chart = chart.resolve_scale(y="independent")
        return chart.properties(title=title(chart_title, synthetic))
    return chart.properties(title=title(chart_title, synthetic), width=560)


def cause_bars(
    by_cause: pl.DataFrame,
    value: str,
    *,
    synthetic: bool,
    chart_title: str,
    y_title: str | None = None,
    color_by: str = "group",
    vocabulary: Vocabulary = VOCABULARY,
) -> alt.Chart:
    """One bar a cause, in the order of the causes of ``vocabulary`` (the trace's: with a user's causes file, its
    causes after the built-in ones, :func:`ettcore.metric.vocabulary_of`): ``by_cause`` has ``cause``, ``group`` and
    ``value`` columns (:func:`ettcore.metric.cause_table`).  The bars take their group's colour, with the groups'
    labels in the legend, or (``color_by="cause"``) each cause's own colour (a causes file's, else its group's).  The
    legend lists what ``by_cause`` holds, in the vocabulary's order."""
    causes = [c for c in vocabulary.cause_names if c in set(by_cause["cause"])]
    if color_by == "group":
        labels = {g.name: g.label for g in vocabulary.groups}
        frame = by_cause.with_columns(pl.col("group").replace_strict(labels).alias("cause group"))
        seen = set(frame["cause group"])
        field, colors = "cause group", {g.label: g.color for g in vocabulary.groups if g.label in seen}
    elif color_by == "cause":
        frame, field, colors = by_cause, "cause", {c: vocabulary.cause_colors[c] for c in causes}
    else:
        raise ValueError(f"color_by is 'group' or 'cause', got {color_by!r}")
    return grouped_bars(
        frame,
        "cause",
        value,
        field,
        synthetic=synthetic,
        chart_title=chart_title,
        x_title="cause",
        y_title=y_title,
        color_title=field,
        colors=colors,
        x_sort=causes,
        side_by_side=False,
    )


def category_bars(
    by_category: pl.DataFrame,
    value: str,
    *,
    synthetic: bool,
    chart_title: str,
    y_title: str | None = None,
    vocabulary: Vocabulary = VOCABULARY,
) -> alt.Chart:
    """One bar a display category of ``vocabulary``'s causes (the trace's), in report order and in its colour
    (:attr:`ettcore.vocabulary.Vocabulary.category_colors`: its first cause's): ``by_category`` has ``category`` and
    ``value`` columns (:func:`ettcore.metric.by_category`)."""
    seen = set(by_category["category"])
    colors = {k: c for k, c in vocabulary.category_colors.items() if k in seen}
    return grouped_bars(
        by_category,
        "category",
        value,
        "category",
        synthetic=synthetic,
        chart_title=chart_title,
        x_title="category",
        y_title=y_title,
        color_title="category",
        colors=colors,
        x_sort=list(colors),
        side_by_side=False,
    )


def nof_bars(frame: pl.DataFrame, x: str, *, synthetic: bool, chart_title: str) -> alt.Chart:
    """Interruptions by end reason side by side inside each ``x``, from the ``nof_<end reason>`` columns of
    ``frame`` (``job_summary``, ``trend``): each end reason by its label and in its colour, in vocabulary order."""
    reasons = [r for r in VOCABULARY.end_reasons if r.interrupts]
    long = frame.select(x, *[pl.col(r.nof_column).alias(r.label) for r in reasons]).unpivot(
        index=x, variable_name="end reason", value_name="interruptions"
    )
    return grouped_bars(
        long,
        x,
        "interruptions",
        "end reason",
        synthetic=synthetic,
        chart_title=chart_title,
        colors={r.label: r.color for r in reasons},
    )


def scatter(
    frame: pl.DataFrame,
    x: str,
    y: str,
    color: str,
    *,
    synthetic: bool,
    chart_title: str,
    x_title: str | None = None,
    y_title: str | None = None,
    color_title: str | None = None,
    label: str | None = None,
) -> alt.Chart:
    """One point per row, ``y`` against ``x``, coloured by ``color`` (a category such as a flag); ``label`` is a
    column shown in the tooltip (a node's name)."""
    tips = [alt.Tooltip(f"{label}:N")] if label else []
    chart = (
        alt.Chart(frame)
        .mark_point(filled=True, size=60)
        .encode(
            x=alt.X(f"{x}:Q", title=x_title or x, scale=alt.Scale(zero=False)),
            y=alt.Y(f"{y}:Q", title=y_title or y),
            color=alt.Color(f"{color}:N", title=color_title or color),
            tooltip=tips
            + [
                alt.Tooltip(f"{x}:Q", format=".2f", title=x_title or x),
                alt.Tooltip(f"{y}:Q", format=".2f", title=y_title or y),
                alt.Tooltip(f"{color}:N", title=color_title or color),
            ],
        )
    )
    return chart.properties(title=title(chart_title, synthetic), width=560)


# ----------------------------------------------------------------------------- fleet


def trend_panels(trend: pl.DataFrame, *, synthetic: bool, every: str = "week") -> alt.VConcatChart:
    """Fleet ETT% per bucket above lost GPU-hours a day per component, one tick per bucket.

    ``trend`` is :func:`ettcore.present.calendar.coverage` of a :func:`ettcore.metric.trend` frame: partial buckets (the
    trace observed only part of them) are marked (open points, lighter bars, "(partial)" in the label), and lost
    time is drawn as GPU-hours per observed day so a partial bucket compares with full ones.  Nothing is dropped.
    """
    if "partial" not in trend.columns:
        raise ValueError(
            "trend_panels needs ettcore.present.calendar.coverage(trend, ...) (bucket labels and partial flags)"
        )
    t = trend.with_columns(
        shown_label(),
        pl.when(pl.col("partial"))
        .then(
            pl.format(
                "partial: {} of {} days observed",
                pl.col("observed_days").round(1),
                pl.col("bucket_days").round(0).cast(pl.Int64),
            )
        )
        .otherwise(pl.lit("full"))
        .alias("coverage"),
    )
    order = t["label"].to_list()
    x = alt.X(
        "label:O",
        sort=order,
        title=f"{every} (UTC)",
        axis=alt.Axis(labelAngle=0 if len(order) <= 12 else -45, labelOverlap=True),
    )
    has_partial = bool(t["partial"].any())
    line = (
        alt.Chart(t.select("label", "ett_pct", "coverage", "partial"))
        .mark_line(color="#4c9a2a")
        .encode(x=x, y=alt.Y("ett_pct:Q", title="fleet ETT% (GPU-time weighted)", scale=alt.Scale(zero=False)))
    )
    points = (
        alt.Chart(t.select("label", "ett_pct", "coverage", "partial"))
        .mark_point(size=70, color="#4c9a2a")
        .encode(
            x=x,
            y="ett_pct:Q",
            fill=alt.condition("datum.partial", alt.value("white"), alt.value("#4c9a2a")),
            tooltip=[
                alt.Tooltip("label:N", title=every),
                alt.Tooltip("ett_pct:Q", format=".2f", title="ETT%"),
                "coverage:N",
            ],
        )
    )
    top = (line + points).properties(
        title=title(f"Fleet ETT% per {every}" + (" (open points: partial buckets)" if has_partial else ""), synthetic),
        width=620,
        height=180,
    )
    cols = {f"{c}_gpu_h": c for c in components_in(t.columns, "_gpu_h")}
    long = (
        t.select("label", "observed_days", "partial", "coverage", *cols)
        .unpivot(index=["label", "observed_days", "partial", "coverage"], variable_name="column", value_name="gpu_h")
        .with_columns(
            pl.col("column").replace_strict(cols).alias("component"),
            (pl.col("gpu_h") / pl.col("observed_days")).alias("gpu_h_per_day"),
        )
        .drop("column")
    )
    bottom = (
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=x,
            y=alt.Y("gpu_h_per_day:Q", title="GPU-hours lost a day", stack=True),
            color=alt.Color(
                "component:N",
                scale=component_scale(component_order([*ALL_COMPONENTS, *cols.values()])),
                title="L2 component",
            ),
            opacity=alt.condition("datum.partial", alt.value(0.45), alt.value(1.0)),
            tooltip=[
                alt.Tooltip("label:N", title=every),
                "component:N",
                alt.Tooltip("gpu_h_per_day:Q", format=",.1f", title="GPU-h a day"),
                alt.Tooltip("gpu_h:Q", format=",.0f", title="GPU-h in the bucket"),
                "coverage:N",
            ],
        )
        .properties(
            title=title(
                f"Lost GPU-hours a day per L2 component, per {every}"
                + (" (lighter: partial buckets)" if has_partial else ""),
                synthetic,
            ),
            width=620,
            height=200,
        )
    )
    return alt.vconcat(top, bottom).resolve_scale(color="independent")


# ----------------------------------------------------------------------------- scorecard

EVIDENCE_COLORS: dict[str, str] = {
    "measured": "#1a9850",
    "calibrated": "#f46d43",
    "analytic": "#4575b4",
    "external": "#7b3294",
    "identity": "#999999",
}


def evidence_scatter(checks: Sequence[dict]) -> alt.LayerChart:
    """Every scorecard check: published value against the ettcore value (log axes), coloured by evidence class.

    Points on the diagonal agree; a bound (``<=3.3``) is drawn at its limit.  Checks whose values are not positive
    cannot be drawn on log axes and are counted in the subtitle.
    """
    from ettcore.present.scorecard import EVIDENCE, published

    rows = published()
    data = pl.DataFrame(
        [
            {
                "id": c["id"],
                "part": c["part"],
                "quantity": c["quantity"],
                "unit": c["unit"],
                "evidence": c["evidence"],
                "result": "pass" if c["passed"] else "FAIL",
                "published": rows[c["id"]].targets[c["part"]].value if c["id"] in rows else None,
                "published_text": c["published"],
                "ettcore_value": float(c["reproduced"]),
            }
            for c in checks
        ]
    )
    drawable = data.filter((pl.col("published") > 0) & (pl.col("ettcore_value") > 0))
    left_out = data.height - drawable.height
    lo = float(min(drawable["published"].min(), drawable["ettcore_value"].min())) / 1.5
    hi = float(max(drawable["published"].max(), drawable["ettcore_value"].max())) * 1.5
    classes = [k for k in EVIDENCE if k in set(drawable["evidence"])]
    scale = alt.Scale(type="log", domain=[lo, hi], nice=False)
    diag = (
        alt.Chart(pl.DataFrame({"v": [lo, hi]}))
        .mark_line(color="#bbbbbb", strokeDash=[4, 4])
        .encode(x=alt.X("v:Q", scale=scale), y=alt.Y("v:Q", scale=scale))
    )
    pts = (
        alt.Chart(drawable)
        .mark_point(size=70, filled=True, opacity=0.85)
        .encode(
            x=alt.X("published:Q", scale=scale, title="published value (paper's unit, log scale)"),
            y=alt.Y("ettcore_value:Q", scale=scale, title="ettcore value (same unit, log scale)"),
            color=alt.Color(
                "evidence:N",
                title="evidence class",
                sort=classes,
                scale=alt.Scale(domain=classes, range=[EVIDENCE_COLORS[k] for k in classes]),
            ),
            shape=alt.Shape(
                "result:N", title="check", scale=alt.Scale(domain=["pass", "FAIL"], range=["circle", "cross"])
            ),
            tooltip=[
                "id:N",
                "part:N",
                "quantity:N",
                "evidence:N",
                "published_text:N",
                "unit:N",
                alt.Tooltip("ettcore_value:Q", format=".4g"),
                "result:N",
            ],
        )
    )
    by_class = ", ".join(f"{n} {k}" for k in classes if (n := int((drawable["evidence"] == k).sum())))
    sub = f"{drawable.height} checks ({by_class}); on the dashed line the two agree" + (
        f"; {left_out} with a value <= 0 not drawn" if left_out else ""
    )
    return (diag + pts).properties(
        title={"text": "Published versus ettcore value, by evidence class", "subtitle": sub}, width=520, height=360
    )
