"""Formatted tables for the notebooks and reports, through Great Tables (Polars' ``DataFrame.style``).

:func:`table` turns a Polars frame into a :class:`Table`: readable column labels with their units
(``wall (min)``), numbers formatted per column (thousands separators, fixed decimals), ``yes``/``no`` for
booleans, ``–`` for missing values, no dtype row, no truncated cell and no row limit.  It displays as the Great
Tables HTML (JupyterLab and the HTML reports; the HTML has a deterministic table id and loads nothing from the
network) and as an aligned plain-text table (terminals, nbval), both from the same formatted values.

Labels: by default a column ``wall_min`` reads ``wall (min)``: a known unit suffix (``_min``, ``_s``, ``_h``,
``_gpu_h``, ``_pct``, ``_pp``, ``_ms``, ``_x``) becomes the unit, underscores become spaces.  ``labels`` overrides a
column's label (its unit is still appended unless ``units`` says otherwise).
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime
from typing import Any, Mapping, Sequence

import polars as pl

from ettcore.vocabulary import VOCABULARY

# column-name suffix -> unit shown in the header
UNIT_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_gpu_h", "GPU-h"),
    ("_min", "min"),
    ("_pct", "%"),
    ("_pp", "pp"),
    ("_ms", "ms"),
    ("_s", "s"),
    ("_h", "h"),
    ("_x", "x"),
)
MISSING = "–"
NO_ROWS = "(no rows)"
# labels of the metric's column names (by the name without its unit suffix); those of the Level 1 buckets
# (<stem>_s, <stem>_gpu_h) and of the interruptions by end reason (nof_<end reason>) are the vocabulary's
BASE_LABELS: dict[str, str] = {
    "job_id": "job",
    "ett": "ETT%",
    "ett_mean": "mean ETT% of jobs",
    "nof": "NoF",
    **{r.nof_column: r.nof_label or r.label for r in VOCABULARY.end_reasons if r.interrupts},
    **{b.stem: b.table_label for b in VOCABULARY.l1_buckets},
    **{f"{b.stem}_gpu": b.gpu_table_label for b in VOCABULARY.l1_buckets},
    "ttr_mean": "TTR",
    "wall": "wall",
    "wall_gpu": "wall",
    "gpus": "GPUs",
    "hardware_setup": "hardware setup",
    "trainer_init": "trainer init",
    "pt2_compile": "PT2 compile",
    "wasted_training": "wasted training",
    "effective_training": "effective training",
}


def split_unit(column: str) -> tuple[str, str]:
    """``'wall_min'`` -> ``('wall', 'min')``; a column without a known suffix has no unit."""
    for suffix, unit in UNIT_SUFFIXES:
        if column.endswith(suffix) and len(column) > len(suffix):
            return column[: -len(suffix)], unit
    return column, ""


def label_of(column: str, labels: Mapping[str, str] | None = None, units: Mapping[str, str] | None = None) -> str:
    """The header of ``column``: its label and, in parentheses, its unit."""
    base, unit = split_unit(column)
    if units and column in units:
        unit = units[column]
    text = (labels or {}).get(column) or BASE_LABELS.get(base) or base.replace("_", " ")
    if unit in ("%", "GPU-h") and unit in text:  # "ETT%" or "per 1,000 GPU-h" already say their unit: not "ETT% (%)"
        return text
    return f"{text} ({unit})" if unit else text


def _decimals_for(series: pl.Series) -> int:
    vals = series.drop_nulls().drop_nans() if series.dtype.is_float() else series.drop_nulls()
    if vals.is_empty():
        return 2
    big = float(vals.abs().max())
    if big >= 1000:
        return 0
    if big >= 10:
        return 1
    return 2


def _fmt_value(v: Any, decimals: int | None, spec: str | None = None) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return MISSING
    if spec is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
        return format(v, spec)
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        d = 2 if decimals is None else decimals
        text = f"{v:,.{d}f}"
        return "0" + text[2:] if text.startswith("-0") and float(text.replace(",", "")) == 0 else text
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v)
    return str(v)


class Table:
    """A formatted table (Great Tables HTML and plain text from the same cell texts)."""

    def __init__(
        self,
        frame: pl.DataFrame,
        cells: pl.DataFrame,
        headers: list[str],
        numeric: list[bool],
        title: str | None,
        notes: Sequence[str],
        markdown: Sequence[str] = (),
    ):
        self.markdown = [c for c in markdown if c in cells.columns]
        self.frame = frame
        self.cells = cells  # every cell as its formatted text
        self.headers = headers
        self.numeric = numeric
        self.title = title
        self.notes = list(notes)
        key = json.dumps([title, headers, cells.rows(), self.notes], default=str, sort_keys=True)
        self.id = "ett-table-" + hashlib.sha1(key.encode()).hexdigest()[:12]

    def gt(self):
        """The Great Tables object (formatted cells, labels, title, source notes, deterministic id)."""
        from great_tables import GT

        names = self.cells.columns
        # a header wraps at its spaces, never inside a unit: "(GPU-h)" keeps its hyphen unbroken (U+2011)
        headers = [h.replace("GPU-h", "GPU\u2011h") for h in self.headers]
        g = GT(self.cells, id=self.id).cols_label(**dict(zip(names, headers)))
        right = [n for n, num in zip(names, self.numeric) if num]
        if right:
            g = g.cols_align("right", columns=right)
        left = [n for n, num in zip(names, self.numeric) if not num]
        if left:
            g = g.cols_align("left", columns=left)
        if self.markdown:
            g = g.fmt_markdown(columns=self.markdown)
        short = [n for n in names if (self.cells[n].str.len_chars().max() or 0) <= (60 if n in self.markdown else 40)]
        if short:  # short cells never wrap (ids, names, numbers); long text wraps
            from great_tables import loc, style

            g = g.tab_style(style=style.text(whitespace="nowrap"), locations=loc.body(columns=short))
        if self.title:
            g = g.tab_header(title=self.title)
        if not self.cells.height:  # a table with nothing in it says so, as its text form does
            g = g.tab_source_note(NO_ROWS)
        for note in self.notes:
            g = g.tab_source_note(note)
        return g.tab_options(
            table_font_size="13px",
            column_labels_font_weight="bold",
            data_row_padding="3px",
            table_margin_left="0",
            table_margin_right="auto",
        )

    def html(self) -> str:
        return self.gt().as_raw_html()

    def text(self) -> str:
        rows = self.cells.rows()
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(self.headers)]
        just = [(str.rjust if num else str.ljust) for num in self.numeric]
        out = [self.title] if self.title else []
        out.append("  ".join(h.ljust(w) for h, w in zip(self.headers, widths)).rstrip())
        out += ["  ".join(j(v, w) for j, v, w in zip(just, r, widths)).rstrip() for r in rows]
        if not rows:
            out.append(NO_ROWS)
        out += self.notes
        return "\n".join(out)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/html": self.html(), "text/plain": self.text()}

    def __repr__(self) -> str:
        return self.text()


def table(
    frame: pl.DataFrame,
    *,
    title: str | None = None,
    labels: Mapping[str, str] | None = None,
    units: Mapping[str, str] | None = None,
    decimals: int | Mapping[str, int] | None = None,
    notes: Sequence[str] = (),
    synthetic: bool | None = None,
    markdown: Sequence[str] = (),
    formats: Mapping[str, str] | None = None,
) -> Table:
    """A formatted table of ``frame`` (see the module docstring).

    ``markdown``: string columns whose cells are Markdown (links, emphasis), rendered as such in the HTML.
    ``formats``: a Python format spec per numeric column, in place of the fixed decimals (``{"p_value": ".2g"}``:
    a p-value of 3e-9 reads ``3e-09``, not ``0.000000``).
    ``decimals``: one number for every float column, or per column; a float column not named gets 0, 1 or 2
    decimals by its largest absolute value (>= 1000, >= 10, smaller).  ``synthetic=True`` adds a note saying the
    data are synthetic.
    """
    if not isinstance(frame, pl.DataFrame):
        raise TypeError(f"table() takes a Polars DataFrame, not {type(frame).__name__}")
    per: dict[str, int] = {}
    for c in frame.columns:
        if frame.schema[c].is_float():
            if isinstance(decimals, int):
                per[c] = decimals
            elif isinstance(decimals, Mapping) and c in decimals:
                per[c] = decimals[c]
            else:
                per[c] = _decimals_for(frame[c])
    specs = dict(formats or {})
    cells = pl.DataFrame(
        {c: [_fmt_value(v, per.get(c), specs.get(c)) for v in frame[c].to_list()] for c in frame.columns},
        schema={c: pl.String for c in frame.columns},
    )
    numeric = [frame.schema[c].is_numeric() and frame.schema[c] != pl.Boolean for c in frame.columns]
    headers = [label_of(c, labels, units) for c in frame.columns]
    notes = list(notes) + (["SYNTHETIC data."] if synthetic else [])
    return Table(frame, cells, headers, numeric, title, notes, markdown)


def quantities(
    rows: Sequence[tuple[str, Any, str]],
    *,
    title: str | None = None,
    decimals: int = 2,
    notes: Sequence[str] = (),
    synthetic: bool | None = None,
) -> Table:
    """A two-column table of ``(quantity, value, unit)`` rows, the unit shown with the value."""
    frame = pl.DataFrame(
        {
            "quantity": [r[0] for r in rows],
            "value": [_fmt_value(r[1], decimals) + (f" {r[2]}" if r[2] else "") for r in rows],
        }
    )
    t = table(frame, title=title, notes=notes, synthetic=synthetic)
    t.numeric = [False, True]
    return t
