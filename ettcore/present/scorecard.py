"""The reproduction scorecard: published value, reproduced value, tolerance, pass.

The published values are the rows of ``data/reference/published-figures.csv``
(a bundled copy of the paper's numbers, provenance in the folder's README).  A
``value`` cell is text such as ``151.5``, ``59-85``, ``2050 -> 254``,
``<=3.3`` or ``~80 -> >90``; :func:`parse_value` splits it into named *parts*,
each a target with a comparison:

=================  ===================================  ====================
value text         parts                                comparison
=================  ===================================  ====================
``151.5``          ``value``                            ``|r - 151.5| <= tol``
``59-85``          ``low``, ``high``                    each ``|r - x| <= tol``
``2050 -> 254``    ``before``, ``after``                each ``|r - x| <= tol``
``<=3.3``          ``value`` (an upper bound)           ``r <= 3.3 + tol``
``>90``            ``value`` (a lower bound)            ``r >= 90 - tol``
``~80``            ``value`` (approximate)              ``|r - 80| <= tol``
``7 (6 paired)``   ``value``, ``paired``                each ``|r - x| <= tol``
``15 s / 3``       ``blocking_s``, ``failures_per_day``  each ``|r - x| <= tol``
=================  ===================================  ====================

A notebook makes a :class:`Scorecard`, calls :meth:`Scorecard.check` once per
part it checks (saying *how* it was obtained, the ``basis``, and what kind of
evidence it is, the ``evidence``), adds headline figures for the report index,
and saves it as ``<output_dir>/<notebook>.scorecard.json``.  :func:`combine`
merges the saved cards into the suite's scorecard and lists the published rows
no notebook checks, each with the reason from :data:`NOT_REPRODUCED`.

Evidence classes (:data:`EVIDENCE`), one on every check and every combined row:

``measured``
    measured by the suite on real runs: the live PyTorch job, MLPerf logs, a
    real fleet's accounting.  Only a card whose trace is not synthetic may
    record it.
``calibrated``
    consistency on a synthetic trace (or an assumed model) calibrated to that
    very number: the generator -> metric -> notebook pipeline returns it.  Only
    a synthetic card may record it.
``analytic``
    a formula evaluated on published inputs (and stated assumptions).
``external``
    an external model check: the project's expected-ETT model (:mod:`ettcore.planning.evidence`) evaluated on
    another publication's inputs, with costs stated before the comparison, against that publication's outcome
    (rows of ``data/reference/external-figures.csv``).  Counted apart from the paper's figures.
``identity``
    arithmetic of other published figures the scorecard already checks (for
    example ``cascade_inherited`` = (1 + NoF) x ``cascade_direct``): it holds
    by construction, adds no evidence, and is listed apart and counted in no
    evidence class.

Adding a row from a notebook::

    card = Scorecard("14-slurm-fleet", "Slurm fleet", synthetic=t.synthetic, trace=display_path(trace_path))
    card.check("fleet_ett", value, part="after", tolerance=1.0, evidence="measured",
               basis="metric.trend on the sacct export of ...")
    card.save(output_dir)

``card.trace_evidence`` is ``"measured"`` for a real trace and ``"calibrated"``
for a synthetic one, for notebooks that run on either.  A published part
checked twice with the same evidence class is refused by :func:`combine` (no
figure is counted twice); a row checked with several classes counts once, under
the strongest (the order of :data:`EVIDENCE`).

Tolerances are absolute, in the row's unit, and are chosen by the notebook
from the precision the paper prints (e.g. 0.05 for a value printed to 0.1).

Comparisons (``comparison=True``, always for ``external`` checks): a check against
a figure of another scale or another publication, such as a CPU demo job's
compile-cache saving against the paper's 32-GPU ablation.  Its FAIL is a finding,
shown and kept, not a broken reproduction: ``combine`` reports
``reproductions_passed`` (every check that is not a comparison passes) beside
``all_passed``, and ``ett report`` fails only on the former.  A comparison's
``basis`` says what differs in scale and where its tolerance and assumptions
come from; ``holds_over`` gives the range of assumptions over which it holds.

Published rows come from two files: the paper's (``published-figures.csv``) and
other publications' (``external-figures.csv``, rows with ``role`` ``result``; its
``input`` rows are the inputs the external checks read, see
:func:`external_inputs`).
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from ettcore.atomic import write_text
from ettcore.config import DATA_DIR

PUBLISHED_CSV = DATA_DIR / "reference" / "published-figures.csv"
EXTERNAL_CSV = DATA_DIR / "reference" / "external-figures.csv"
# The ``trace`` of a card whose inputs are published figures, not a trace (the index's data column says so).
PUBLISHED_INPUTS = "published figures (data/reference/external-figures.csv)"
SCORECARD_SUFFIX = ".scorecard.json"

_NUM = r"(\d+(?:\.\d+)?)"
_BOUND = re.compile(rf"^(~|<=|>=|<|>)?\s*{_NUM}$")
_RANGE = re.compile(rf"^{_NUM}\s*-\s*{_NUM}$")
_PAIRED = re.compile(rf"^{_NUM}\s*\({_NUM} paired\)$")
_PER_SAVE = re.compile(rf"^{_NUM}\s*s\s*/\s*{_NUM}$")

# Why the suite does not reproduce a published row (shown in the combined scorecard).
NOT_REPRODUCED: dict[str, str] = {
    "megacache_blog": "a fleet average over many jobs from the PyTorch blog; no trace or model of it is bundled",
    "bench_models": "a count of the paper's benchmark set, not a measurement; the benchmark scenario is built with it",
    "stream_warmup": "a measured range that only enters the suite as a scenario assumption, not as a result",
    "sharding_phase": "an input of the assumed Model D stage graph (ettcore.startup), not a result",
    "compile_cold": "Table III is a controlled ablation on a scaled-down model; no compile logs of it are public or "
    "bundled (05-compilation shows the endpoints as published)",
    "compile_warm": "Table III is a controlled ablation on a scaled-down model; no compile logs of it are public or "
    "bundled (05-compilation shows the endpoints as published)",
    "ckpt_blog_example": "hypothetical inputs of the blog's example; 06-checkpointing uses them as its defaults, "
    "so there is nothing to reproduce",
    "shutdown_saving": "IV-D's 'about 30 minutes per job' does not say over which jobs; the benchmark scenario's "
    "standalone-publishing models save 35.9 min on average (07-shutdown shows it), so it is not scored",
    "mpg_scheduling_goodput": "the expected-ETT model has no scheduling term (queueing is outside it), and no bundled "
    "real fleet ran under Google's preemption policy; recorded, not checked",
}


# Evidence classes, strongest first (see the module docstring).
EVIDENCE: dict[str, str] = {
    "measured": "measured by the suite on real runs (live job, MLPerf logs, a real fleet)",
    "calibrated": "consistency on a synthetic trace or assumed model calibrated to that very number",
    "analytic": "a formula on published inputs",
    "external": "the project's expected-ETT model on another publication's inputs, costs stated beforehand",
    "identity": "arithmetic of other published figures already checked; no evidence of its own",
}
COUNTED_EVIDENCE: tuple[str, ...] = ("measured", "calibrated", "analytic", "external")
COMPARISON_MEANING = (
    "(comparison): a check against a figure of another scale or another publication; its FAIL is a finding about "
    "the model or the run, kept and shown, not a broken reproduction."
)
HOLDS_OVER_MEANING = (
    "holds over: the part of a grid of the stated assumptions, computed by ettcore, over which the check passes."
)


def result_text(passed: bool, comparison: bool) -> str:
    """``pass`` or ``FAIL``, marked ``(comparison)`` for a comparison."""
    return ("pass" if passed else "FAIL") + (" (comparison)" if comparison else "")


CALIBRATED_MEANING = (
    "A calibrated consistency check shows that the generator, the metric and the notebook return the "
    "published number from a synthetic trace built to match it; it does not show that the paper's fleet "
    "had that number, nor that the suite would find it on real jobs."
)


@dataclass(frozen=True)
class Target:
    """One part of a published value: ``op`` is ``eq``, ``le`` (upper bound) or ``ge`` (lower bound)."""

    part: str
    value: float
    op: str = "eq"
    approximate: bool = False

    def text(self) -> str:
        sign = {"eq": "~" if self.approximate else "", "le": "<=", "ge": ">="}[self.op]
        return f"{sign}{self.value:g}"


@dataclass(frozen=True)
class Published:
    """One row of the published-figures table, with its value split into parts."""

    id: str
    source: str
    quantity: str
    value: str
    unit: str
    note: str
    targets: dict[str, Target] = field(hash=False)


def _bound(text: str, part: str) -> Target:
    m = _BOUND.match(text.strip())
    if not m:
        raise ValueError(f"cannot parse published value {text!r}")
    sign, num = m.groups()
    op = {"<=": "le", "<": "le", ">=": "ge", ">": "ge"}.get(sign or "", "eq")
    return Target(part, float(num), op, approximate=sign == "~")


def parse_value(text: str) -> dict[str, Target]:
    """Split a published ``value`` cell into named targets (see the module docstring)."""
    t = text.strip()
    if "->" in t:
        before, after = (s.strip() for s in t.split("->", 1))
        return {"before": _bound(before, "before"), "after": _bound(after, "after")}
    if m := _RANGE.match(t):
        return {"low": Target("low", float(m.group(1))), "high": Target("high", float(m.group(2)))}
    if m := _PAIRED.match(t):
        return {"value": Target("value", float(m.group(1))), "paired": Target("paired", float(m.group(2)))}
    if m := _PER_SAVE.match(t):
        return {
            "blocking_s": Target("blocking_s", float(m.group(1))),
            "failures_per_day": Target("failures_per_day", float(m.group(2))),
        }
    return {"value": _bound(t, "value")}


@lru_cache(maxsize=8)
def _load(path: str) -> dict[str, Published]:
    out: dict[str, Published] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row.get("role", "result") != "result":
                continue
            source = f"{row['publication']}, {row['source']}" if row.get("publication") else row["source"]
            out[row["id"]] = Published(
                row["id"],
                source,
                row["quantity"],
                row["value"],
                row["unit"],
                row["note"],
                parse_value(row["value"]),
            )
    return out


def published(path: str | Path = PUBLISHED_CSV, external: str | Path | None = EXTERNAL_CSV) -> dict[str, Published]:
    """All published rows by id: the paper's (``path``) and, unless ``external`` is None, other publications'
    results (``external-figures.csv``)."""
    rows = dict(_load(str(path)))
    if external is not None and Path(external).exists():
        ext = _load(str(external))
        clash = sorted(set(rows) & set(ext))
        if clash:
            raise ValueError(f"ids in both {Path(path).name} and {Path(external).name}: {', '.join(clash)}")
        rows.update(ext)
    return rows


@lru_cache(maxsize=4)
def _inputs(path: str) -> dict[str, dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {row["id"]: row for row in csv.DictReader(fh) if row["role"] == "input"}


def external_inputs(path: str | Path = EXTERNAL_CSV) -> dict[str, float]:
    """The numeric inputs of ``external-figures.csv`` (rows with role ``input``), by id."""
    out = {}
    for rid, row in _inputs(str(path)).items():
        try:
            out[rid] = float(row["value"])
        except ValueError:
            raise ValueError(f"{Path(path).name}: row {rid!r}, field 'value': not a number: {row['value']!r}") from None
    return out


@dataclass(frozen=True)
class Check:
    """One reproduced part of a published row."""

    notebook: str
    id: str
    part: str
    quantity: str
    source: str
    unit: str
    published: str
    reproduced: float
    tolerance: float
    passed: bool
    basis: str
    synthetic: bool
    evidence: str
    comparison: bool = False
    holds_over: str = ""


def compare(target: Target, reproduced: float, tolerance: float) -> bool:
    """Whether ``reproduced`` meets ``target`` within the absolute ``tolerance``."""
    if reproduced is None or not math.isfinite(reproduced):
        return False
    if target.op == "le":
        return reproduced <= target.value + tolerance
    if target.op == "ge":
        return reproduced >= target.value - tolerance
    return abs(reproduced - target.value) <= tolerance


class Scorecard:
    """The checks and headline figures of one notebook run."""

    def __init__(self, notebook: str, title: str, *, synthetic: bool, trace: str = ""):
        self.notebook = notebook
        self.title = title
        self.synthetic = bool(synthetic)
        self.trace = trace
        self.checks: list[Check] = []
        self.headlines: list[dict] = []

    @property
    def trace_evidence(self) -> str:
        """The evidence class of a number measured on this card's trace: ``measured`` if real, else ``calibrated``."""
        return "calibrated" if self.synthetic else "measured"

    def check(
        self,
        row_id: str,
        reproduced: float,
        *,
        tolerance: float,
        part: str = "value",
        basis: str,
        evidence: str,
        comparison: bool = False,
        holds_over: str = "",
    ) -> Check:
        """Record one checked part of published row ``row_id``: ``basis`` says how it was obtained, ``evidence``
        which class of evidence it is (a key of :data:`EVIDENCE`); ``comparison`` marks a check against a figure of
        another scale or publication (always so for ``external``), ``holds_over`` the range of assumptions over
        which it holds (module docstring)."""
        if evidence not in EVIDENCE:
            raise ValueError(f"evidence must be one of {', '.join(EVIDENCE)}, not {evidence!r}")
        if evidence == "measured" and self.synthetic:
            raise ValueError(f"{self.notebook}: a synthetic trace cannot give measured evidence (row {row_id!r})")
        if evidence == "calibrated" and not self.synthetic:
            raise ValueError(
                f"{self.notebook}: calibrated evidence needs a synthetic trace or model (row {row_id!r}); "
                "on a real trace the evidence is measured"
            )
        rows = published()
        if row_id not in rows:
            raise KeyError(f"{row_id!r} is not a row of {PUBLISHED_CSV.name}")
        row = rows[row_id]
        if part not in row.targets:
            raise KeyError(f"row {row_id!r} has parts {sorted(row.targets)}, not {part!r}")
        if tolerance < 0:
            raise ValueError("tolerance must be >= 0")
        target = row.targets[part]
        value = float(reproduced)
        c = Check(
            self.notebook,
            row_id,
            part,
            row.quantity,
            row.source,
            row.unit,
            target.text(),
            value,
            float(tolerance),
            compare(target, value, tolerance),
            basis,
            self.synthetic,
            evidence,
            comparison or evidence == "external",
            holds_over,
        )
        self.checks.append(c)
        return c

    def headline(self, label: str, value: float | str, unit: str = "") -> None:
        """A figure the report index shows next to this notebook's link."""
        if isinstance(value, float):
            value = round(value, 2)
        self.headlines.append({"label": label, "value": value, "unit": unit})

    @property
    def all_passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def reproductions_passed(self) -> bool:
        """Every check that is not a comparison passes (a comparison's FAIL is a finding)."""
        return all(c.passed for c in self.checks if not c.comparison)

    def as_dict(self) -> dict:
        return {
            "notebook": self.notebook,
            "title": self.title,
            "synthetic": self.synthetic,
            "trace": self.trace,
            "headlines": self.headlines,
            "checks": [asdict(c) for c in self.checks],
        }

    def save(self, output_dir: str | Path) -> Path | None:
        """Write ``<output_dir>/<notebook>.scorecard.json``; nothing when ``output_dir`` is empty."""
        if not str(output_dir):
            return None
        path = Path(output_dir) / f"{self.notebook}{SCORECARD_SUFFIX}"
        write_text(path, json.dumps(self.as_dict(), indent=2, sort_keys=True) + "\n")
        return path

    def frame(self):
        """The checks as a Polars frame (one row a check)."""
        import polars as pl

        ranged = any(c.holds_over for c in self.checks)  # the column only where some check states a range
        frame = pl.DataFrame(
            [
                {
                    "id": c.id,
                    "part": c.part,
                    "evidence": c.evidence,
                    "published": f"{c.published} {c.unit}".strip(),
                    "ettcore_value": c.reproduced,
                    "tolerance": c.tolerance,
                    "result": result_text(c.passed, c.comparison),
                    "holds_over": c.holds_over,
                    "basis": c.basis,
                }
                for c in self.checks
            ],
            schema={
                "id": pl.String,
                "part": pl.String,
                "evidence": pl.String,
                "published": pl.String,
                "ettcore_value": pl.Float64,
                "tolerance": pl.Float64,
                "result": pl.String,
                "holds_over": pl.String,
                "basis": pl.String,
            },
        )
        return frame if ranged else frame.drop("holds_over")

    def summary(self) -> str:
        """One line: the checks by evidence class and how many pass."""
        if not self.checks:
            return f"Scorecard {self.notebook}: no published figure is checked here (headline figures only)"
        counts = {k: sum(c.evidence == k for c in self.checks) for k in EVIDENCE}
        by = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        findings = sum(c.comparison and not c.passed for c in self.checks)
        return (
            f"Scorecard {self.notebook}"
            + (" (SYNTHETIC data)" if self.synthetic else "")
            + f": {sum(c.passed for c in self.checks)}/{len(self.checks)} checks pass ({by})"
            + (f"; {findings} comparison{'s' if findings > 1 else ''} FAIL (a finding, kept)" if findings else "")
        )

    def table(self):
        """The checks as a formatted table (:mod:`ettcore.present.tables`)."""
        from ettcore.present.tables import table

        notes = [f"{k}: {EVIDENCE[k]}." for k in EVIDENCE if any(c.evidence == k for c in self.checks)]
        if any(c.evidence == "calibrated" for c in self.checks):
            notes.append(CALIBRATED_MEANING)
        if any(c.comparison for c in self.checks):
            notes.append(COMPARISON_MEANING)
        if any(c.holds_over for c in self.checks):
            notes.append(HOLDS_OVER_MEANING)
        return table(
            self.frame(),
            title=self.summary(),
            labels={"ettcore_value": "ettcore value", "holds_over": "holds over"},
            decimals={"ettcore_value": 3, "tolerance": 2},
            notes=notes,
        )

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        if not self.checks:
            text = self.summary()
            return {"text/plain": text, "text/html": f"<p><b>{html.escape(text)}</b></p>"}
        return self.table()._repr_mimebundle_()

    def __repr__(self) -> str:
        return self.table().text() if self.checks else self.summary()


def load_cards(directory: str | Path) -> list[dict]:
    """The saved scorecards in ``directory``, by notebook name."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(Path(directory).glob(f"*{SCORECARD_SUFFIX}"))]


def strongest(classes: Iterable[str]) -> str:
    """The strongest of some evidence classes (the order of :data:`EVIDENCE`)."""
    order = list(EVIDENCE)
    return min(classes, key=order.index)


def combine(
    cards: Iterable[dict], path: str | Path = PUBLISHED_CSV, external: str | Path | None = EXTERNAL_CSV
) -> dict:
    """The suite's scorecard: every check, the published rows checked (with their evidence), and those not (with why).

    A row counts as checked when at least one notebook checks one of its parts; it passes when every check of it
    passes; its ``evidence`` is the strongest class among its checks.  ``evidence_rows`` counts each row once, under
    that class; identities are counted apart (``identity_rows``).  The same part of a row checked twice with one
    evidence class is an error (a figure counted twice).
    """
    rows = published(path, external)
    checks = [c for card in cards for c in card["checks"]]
    for c in checks:
        if c.get("evidence") not in EVIDENCE:
            raise ValueError(
                f"check {c['id']}/{c['part']} of {c['notebook']} has no valid evidence class: {c.get('evidence')!r}"
            )
    seen: dict[tuple, str] = {}
    for c in checks:
        key = (c["id"], c["part"], c["evidence"])
        if key in seen:
            raise ValueError(
                f"published figure {c['id']} ({c['part']}) is checked twice as {c['evidence']} evidence: "
                f"by {seen[key]} and {c['notebook']}; keep one"
            )
        seen[key] = c["notebook"]
    by_row: dict[str, list[dict]] = {}
    for c in checks:
        by_row.setdefault(c["id"], []).append(c)
    checked = [
        {
            "id": rid,
            "source": rows[rid].source,
            "quantity": rows[rid].quantity,
            "published": rows[rid].value,
            "unit": rows[rid].unit,
            "checks": len(cs),
            "passed": all(c["passed"] for c in cs),
            "comparison": any(c.get("comparison", False) for c in cs),
            "evidence": strongest(c["evidence"] for c in cs),
            "evidence_classes": sorted({c["evidence"] for c in cs}, key=list(EVIDENCE).index),
            "notebooks": sorted({c["notebook"] for c in cs}),
        }
        for rid, cs in by_row.items()
        if rid in rows
    ]
    order = list(rows)
    checked.sort(key=lambda r: order.index(r["id"]))
    missing = [
        {
            "id": rid,
            "source": r.source,
            "quantity": r.quantity,
            "published": r.value,
            "unit": r.unit,
            "reason": NOT_REPRODUCED.get(rid, "no notebook in this run checks it"),
        }
        for rid, r in rows.items()
        if rid not in by_row
    ]
    return {
        "published_rows": len(rows),
        "checked_rows": len(checked),
        "evidence_rows": {k: sum(r["evidence"] == k for r in checked) for k in COUNTED_EVIDENCE},
        "identity_rows": sum(r["evidence"] == "identity" for r in checked),
        "evidence_checks": {k: sum(c["evidence"] == k for c in checks) for k in EVIDENCE},
        "evidence_classes": EVIDENCE,
        "calibrated_meaning": CALIBRATED_MEANING,
        "checks": len(checks),
        "checks_passed": sum(c["passed"] for c in checks),
        "all_passed": all(c["passed"] for c in checks),
        "reproductions_passed": all(c["passed"] for c in checks if not c.get("comparison", False)),
        "comparisons_failed": sum(not c["passed"] for c in checks if c.get("comparison", False)),
        "comparison_meaning": COMPARISON_MEANING,
        "holds_over_meaning": HOLDS_OVER_MEANING,
        "rows": checked,
        "not_reproduced": missing,
        "detail": checks,
    }
