"""Altair chart builders for the notebooks and reports.

Every builder takes frames that :mod:`ettcore` computed (it computes no metric
itself) and returns an Altair chart whose title says ``SYNTHETIC`` when the
data is synthetic.  Durations are drawn in minutes (``seconds / 60``) or
GPU-hours, as labelled.

Display: :func:`use_renderer` registers the ``ett`` renderer, which emits the
chart as a Vega-Lite v5 mime bundle (``application/vnd.vegalite.v5+json``, drawn
interactively by JupyterLab's built-in Vega extension, offline) plus a short
deterministic ``text/plain`` line, so that nbval compares stable outputs.
:mod:`ettcore.report` turns that bundle into an inline ``vegaEmbed`` call in the
HTML reports, with the Vega JavaScript embedded in the page (no network).
Charts use only Vega-Lite features that v5 supports (the specs are checked by
rendering them with the v5 compiler in the tests).
"""

from __future__ import annotations

from typing import Sequence

import altair as alt
import polars as pl

from .phases import ALL_COMPONENTS
from .trace import Trace

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


def title(text: str, synthetic: bool) -> str:
    """A chart title, prefixed with ``SYNTHETIC:`` for synthetic data."""
    return f"SYNTHETIC: {text}" if synthetic else text


def _component_scale(domain: Sequence[str] = COMPONENT_ORDER) -> alt.Scale:
    return alt.Scale(domain=list(domain), range=[COMPONENT_COLORS[c] for c in domain])


def to_v5_spec(chart: alt.TopLevelMixin) -> dict:
    """The chart's Vega-Lite spec, declared as v5 (the version JupyterLab and the reports draw)."""
    spec = chart.to_dict()
    spec["$schema"] = VEGALITE_V5_SCHEMA
    return spec


def _chart_title(spec: dict) -> str:
    t = spec.get("title")
    if isinstance(t, dict):
        t = t.get("text")
    if isinstance(t, list):
        t = " ".join(t)
    return str(t) if t else "untitled"


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


def timeline_frame(trace: Trace, job_id: str) -> pl.DataFrame:
    """Attempts and spans of one job as rows ``row, attempt, phase, component, start, end`` (UTC datetimes)."""
    q = """
        SELECT 'attempt ' || a.attempt || ' (' || a.end_reason || ')' AS row, a.attempt,
               'attempt' AS phase, 'attempt' AS component, a.start_ms, a.end_ms, NULL AS stage
        FROM clean_attempts a WHERE a.job_id = $job
        UNION ALL
        SELECT 'attempt ' || s.attempt || ' spans', s.attempt, s.phase, p.component, s.start_ms, s.end_ms, s.stage
        FROM clean_spans s JOIN ett_phases p ON p.phase = s.phase WHERE s.job_id = $job
    """
    df = trace.sql(q, {"job": job_id})
    as_of = trace.as_of_ms
    return df.with_columns(
        pl.col("end_ms").fill_null(as_of if as_of is not None else pl.col("start_ms")),
    ).with_columns(
        pl.from_epoch("start_ms", time_unit="ms").alias("start"),
        pl.from_epoch("end_ms", time_unit="ms").alias("end"),
        ((pl.col("end_ms") - pl.col("start_ms")) / 60000).alias("minutes"),
        pl.when(pl.col("component") == "wasted_training").then(pl.lit("train / save / eval")).otherwise(
            pl.col("component")).alias("legend"),
    ).sort(["attempt", "start_ms", "phase"])


def gantt(frame: pl.DataFrame, job_id: str, *, synthetic: bool) -> alt.Chart:
    """Timeline of one job: a bar per attempt and, under it, its phase spans coloured by component."""
    colors = dict(COMPONENT_COLORS, attempt="#dddddd", **{"train / save / eval": COMPONENT_COLORS["effective_training"]})
    domain = ["attempt", "scheduling", "hardware_setup", "trainer_init", "pt2_compile", "train / save / eval", "shutdown"]
    return (
        alt.Chart(frame.select("row", "phase", "stage", "legend", "start", "end", "minutes"))
        .mark_bar(stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("start:T", title="time (UTC)"),
            x2="end:T",
            y=alt.Y("row:N", title=None, sort=None),
            color=alt.Color("legend:N", title="component", scale=alt.Scale(domain=domain, range=[colors[d] for d in domain])),
            tooltip=["phase:N", "stage:N", "start:T", "end:T", alt.Tooltip("minutes:Q", format=".1f")],
        )
        .properties(title=title(f"Timeline of job {job_id}", synthetic), width=620)
    )


# ----------------------------------------------------------------------------- L1 / L2


def l2_long(summary: pl.DataFrame, key: str = "job_id") -> pl.DataFrame:
    """Per-row component seconds (``<component>_s`` columns of ``job_summary``) as long ``key, component, minutes``."""
    cols = {"productive_s": "effective_training", **{f"{c}_s": c for c in ALL_COMPONENTS}}
    return (
        summary.select(key, *cols)
        .unpivot(index=key, variable_name="column", value_name="seconds")
        .with_columns(pl.col("column").replace_strict(cols).alias("component"), (pl.col("seconds") / 60).alias("minutes"))
        .drop("column")
    )


def stacked_components(long: pl.DataFrame, *, key: str = "job_id", value: str = "minutes", synthetic: bool,
                       chart_title: str = "Where the wall time went (L2 components)",
                       include_productive: bool = True, normalize: bool = False) -> alt.Chart:
    """Horizontal stacked bars: one bar per ``key``, segments per component (optionally shares of the total)."""
    data = long if include_productive else long.filter(pl.col("component") != "effective_training")
    order = [c for c in COMPONENT_ORDER if include_productive or c != "effective_training"]
    data = data.with_columns(pl.col("component").replace_strict({c: i for i, c in enumerate(order)}, default=99).alias("k"))
    return (
        alt.Chart(data.select(key, "component", value, "k"))
        .mark_bar()
        .encode(
            y=alt.Y(f"{key}:N", title=key, sort=None),
            x=alt.X(f"sum({value}):Q", title=("share of wall time" if normalize else value), stack="normalize" if normalize else True),
            color=alt.Color("component:N", scale=_component_scale(order), title="component"),
            order=alt.Order("k:Q"),
            tooltip=[f"{key}:N", "component:N", alt.Tooltip(f"sum({value}):Q", format=".1f", title=value)],
        )
        .properties(title=title(chart_title, synthetic), width=560)
    )


def l1_bars(summary_row: dict, *, synthetic: bool, chart_title: str = "Level 1: productive time and the four losses") -> alt.Chart:
    """One stacked bar of a job's (or the fleet's) L1 split, in minutes."""
    parts = [("productive", summary_row["productive_s"]), ("TTS", summary_row["tts_s"]),
             ("recovery (NoF x TTR)", summary_row["ttr_total_s"]), ("in-training loss", summary_row["in_training_loss_s"]),
             ("shutdown tail", summary_row["shutdown_tail_s"])]
    df = pl.DataFrame({"bucket": [p for p, _ in parts], "minutes": [v / 60 for _, v in parts], "k": list(range(len(parts)))})
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            x=alt.X("sum(minutes):Q", title="minutes"),
            color=alt.Color("bucket:N", sort=[p for p, _ in parts], title="L1 bucket"),
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
            color=alt.Color("component:N", scale=_component_scale(ALL_COMPONENTS), title="component"),
            tooltip=["owner:N", "component:N", alt.Tooltip("gpu_h:Q", format=".2f")],
        )
        .properties(title=title("GPU-hours lost by owner", synthetic), width=480)
    )


def linked_jobs(summary: pl.DataFrame, *, synthetic: bool, group: str = "model") -> alt.VConcatChart:
    """ETT% per job (click a group in the legend or a bar to select it) linked to its L2 components."""
    sel = alt.selection_point(fields=[group], bind="legend")
    keep = ["job_id", group, "ett_pct"]
    jobs = summary.select(keep).with_columns(pl.col(group).cast(pl.String))
    top = (
        alt.Chart(jobs)
        .mark_bar()
        .encode(
            x=alt.X("job_id:N", sort="y", title="job"),
            y=alt.Y("ett_pct:Q", title="ETT%"),
            color=alt.Color(f"{group}:N"),
            opacity=alt.condition(sel, alt.value(1.0), alt.value(0.2)),
            tooltip=["job_id:N", f"{group}:N", alt.Tooltip("ett_pct:Q", format=".1f")],
        )
        .add_params(sel)
        .properties(title=title(f"ETT% per job (select a {group})", synthetic), width=560, height=180)
    )
    long = l2_long(summary.with_columns(pl.col(group).cast(pl.String)), key="job_id").join(
        jobs.select("job_id", group), on="job_id")
    long = long.filter(pl.col("component") != "effective_training")
    bottom = (
        alt.Chart(long.select("job_id", group, "component", "minutes"))
        .mark_bar()
        .encode(
            x=alt.X("component:N", sort=list(ALL_COMPONENTS), title=None),
            y=alt.Y("sum(minutes):Q", title="lost minutes (selected jobs)"),
            color=alt.Color("component:N", scale=_component_scale(ALL_COMPONENTS), legend=None),
            tooltip=["component:N", alt.Tooltip("sum(minutes):Q", format=".1f")],
        )
        .transform_filter(sel)
        .properties(title=title("Lost time by component for the selection", synthetic), width=560, height=160)
    )
    return alt.vconcat(top, bottom).resolve_scale(color="independent")


# ----------------------------------------------------------------------------- start-up and what-if


def waterfall(steps: Sequence[tuple[str, float]], *, synthetic: bool, unit: str = "min",
              chart_title: str = "TTS waterfall", final_label: str = "after all") -> alt.LayerChart:
    """Waterfall: ``steps = [(baseline label, total), (change label, total after it), ...]``.

    The baseline and the final total are bars from zero; each change is a bar
    floating from the previous total to the new one (green when it reduces).
    """
    if len(steps) < 1:
        raise ValueError("a waterfall needs at least the baseline step")
    rows = [{"label": steps[0][0], "lo": 0.0, "hi": float(steps[0][1]), "kind": "total", "delta": 0.0,
             "total": float(steps[0][1])}]
    for (_, prev), (label, total) in zip(steps, steps[1:]):
        rows.append({"label": label, "lo": float(min(prev, total)), "hi": float(max(prev, total)),
                     "kind": "reduction" if total <= prev else "increase", "delta": float(total - prev), "total": float(total)})
    if len(steps) > 1:
        last = float(steps[-1][1])
        rows.append({"label": final_label, "lo": 0.0, "hi": last, "kind": "total", "delta": 0.0, "total": last})
    df = pl.DataFrame(rows)
    order = df["label"].to_list()
    base = alt.Chart(df).encode(x=alt.X("label:N", sort=order, title=None, axis=alt.Axis(labelAngle=-20)))
    bars = base.mark_bar().encode(
        y=alt.Y("lo:Q", title=unit), y2="hi:Q",
        color=alt.Color("kind:N", scale=alt.Scale(domain=["total", "reduction", "increase"],
                                                   range=["#3182bd", "#4c9a2a", "#d6616b"]), title=None),
        tooltip=["label:N", alt.Tooltip("total:Q", format=".1f"), alt.Tooltip("delta:Q", format="+.1f")],
    )
    text = base.mark_text(dy=-6).encode(y="hi:Q", text=alt.Text("total:Q", format=".1f"))
    return (bars + text).properties(title=title(chart_title, synthetic), width=520)


def lines(frame: pl.DataFrame, x: str, y: str, color: str | None, *, synthetic: bool, chart_title: str,
          x_title: str | None = None, y_title: str | None = None, points: bool = False) -> alt.Chart:
    """A line chart of ``y`` against ``x`` (one line per ``color`` value)."""
    enc = {
        "x": alt.X(f"{x}:Q" if frame.schema[x].is_numeric() else f"{x}:T", title=x_title or x),
        "y": alt.Y(f"{y}:Q", title=y_title or y),
        "tooltip": [x, alt.Tooltip(f"{y}:Q", format=".2f")] + ([color] if color else []),
    }
    if color:
        enc["color"] = alt.Color(f"{color}:N", title=color)
    return alt.Chart(frame).mark_line(point=points).encode(**enc).properties(title=title(chart_title, synthetic), width=560)


def grouped_bars(frame: pl.DataFrame, x: str, y: str, color: str, *, synthetic: bool, chart_title: str,
                 column: str | None = None, y_title: str | None = None, independent_y: bool = False) -> alt.Chart:
    """Grouped bars: ``color`` values side by side inside each ``x``; with ``column``, one panel per value."""
    chart = alt.Chart(frame).mark_bar().encode(
        x=alt.X(f"{x}:N", title=None if column else x, sort=None),
        xOffset=alt.XOffset(f"{color}:N"),
        y=alt.Y(f"{y}:Q", title=y_title or y),
        color=alt.Color(f"{color}:N", title=color),
        tooltip=[f"{x}:N", f"{color}:N", alt.Tooltip(f"{y}:Q", format=".2f")],
    )
    if column:
        chart = chart.properties(width=170, height=170).facet(facet=alt.Facet(f"{column}:N", title=None), columns=3)
        if independent_y:
            chart = chart.resolve_scale(y="independent")
        return chart.properties(title=title(chart_title, synthetic))
    return chart.properties(title=title(chart_title, synthetic), width=560)


# ----------------------------------------------------------------------------- fleet


def trend_panels(trend: pl.DataFrame, *, synthetic: bool, every: str = "week") -> alt.VConcatChart:
    """Fleet ETT% per bucket above per-component GPU-hours lost (stacked area), sharing the time axis."""
    top = (
        alt.Chart(trend.select("bucket_start", "ett_pct"))
        .mark_line(point=True)
        .encode(x=alt.X("bucket_start:T", title=f"{every} (UTC)"), y=alt.Y("ett_pct:Q", title="fleet ETT% (GPU-time weighted)",
                                                                          scale=alt.Scale(zero=False)),
                tooltip=["bucket_start:T", alt.Tooltip("ett_pct:Q", format=".2f")])
        .properties(title=title(f"Fleet ETT% per {every}", synthetic), width=600, height=180)
    )
    cols = {f"{c}_gpu_h": c for c in ALL_COMPONENTS if f"{c}_gpu_h" in trend.columns}
    long = (trend.select("bucket_start", *cols).unpivot(index="bucket_start", variable_name="column", value_name="gpu_h")
            .with_columns(pl.col("column").replace_strict(cols).alias("component")).drop("column"))
    bottom = (
        alt.Chart(long)
        .mark_area()
        .encode(x=alt.X("bucket_start:T", title=f"{every} (UTC)"), y=alt.Y("gpu_h:Q", title="GPU-hours lost", stack=True),
                color=alt.Color("component:N", scale=_component_scale(ALL_COMPONENTS), title="component"),
                tooltip=["bucket_start:T", "component:N", alt.Tooltip("gpu_h:Q", format=".1f")])
        .properties(title=title(f"GPU-hours lost per component per {every}", synthetic), width=600, height=180)
    )
    return alt.vconcat(top, bottom).resolve_scale(color="independent")
