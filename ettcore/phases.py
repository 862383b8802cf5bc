"""Phase vocabulary, the L2 components, and their owners.

The defaults are the trace spec's table (``ettcore/defaults/phases.yaml``), the one list of the six components:
its ``owners`` name them, in report order.  A mapping file (YAML or JSON) may add phases, re-map a phase to
another component, add components of its own and rename owners::

    phases:                     # added after the defaults, in this order
      - {phase: my_warmup, component: trainer_init}
      - {phase: eval, component: wasted_training}   # re-map an existing phase
      - {phase: data_warmup, component: data_loading}   # a component of the user's own
    owners:
      pt2_compile: PyTorch compiler team
      data_loading: Data platform

A user's component comes after the six defaults (and before ``unattributed``), in the order the mapping first
names it, in every table, JSON object, export and chart.  ``train`` is special: its productive part is effective
training and its replay part is wasted training; it cannot be re-mapped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ettcore.config import DEFAULTS_DIR
from ettcore.errors import InputError, Problem
from ettcore.vocabulary import VOCABULARY

UNATTRIBUTED = "unattributed"
L1_BUCKETS: tuple[str, ...] = VOCABULARY.bucket_names  # the Level 1 buckets, in report order
TRAIN = "train"
SCHEDULING = "scheduling"
EFFECTIVE_TRAINING = "effective_training"  # productive time, the seventh bucket of the spec's L2 table
# Stems of the metric's other ``<stem>_s`` / ``<stem>_gpu_h`` columns: the wall time, each Level 1 bucket's
# (ttr_total for recovery), the mean time to recover and the excluded time; a component may not take one of these names
L1_STEMS: tuple[str, ...] = ("wall", *VOCABULARY.bucket_stems.values(), "ttr_mean", "excluded")
_COMPONENT_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


@dataclass(frozen=True)
class PhaseMap:
    """Phases in vocabulary order, each with its component; components with owners."""

    phases: tuple[str, ...]
    component_of: dict[str, str] = field(hash=False)
    owner_of: dict[str, str] = field(hash=False)
    components: tuple[str, ...] = ()  # the defaults, then the mapping's own in the order it names them

    @property
    def all_components(self) -> tuple[str, ...]:
        """The components and ``unattributed``: the order of every table, JSON object, export and chart."""
        return self.components + (UNATTRIBUTED,)

    def order(self, phase: str) -> int:
        return self.phases.index(phase)

    def owner(self, component: str) -> str:
        """The team that owns ``component``; ``(none)`` for ``unattributed`` and a component without an owner."""
        return "(none)" if component == UNATTRIBUTED else self.owner_of.get(component, "(none)")

    def rows(self) -> list[tuple[int, str, str, str]]:
        """(phase_id, phase, component, owner) rows; id 0 is ``unattributed``."""
        out = [(0, UNATTRIBUTED, UNATTRIBUTED, self.owner(UNATTRIBUTED))]
        for i, p in enumerate(self.phases, start=1):
            c = self.component_of[p]
            out.append((i, p, c, self.owner(c)))
        return out


def _read_mapping(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(path), None, None, f"cannot read mapping file: {exc}")) from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise InputError(Problem(str(path), None, None, f"mapping file is not valid YAML/JSON: {exc}")) from None
    return _mapping(data, path)


def _mapping(data: object, path: Path) -> dict:
    """A mapping file's content, checked to be a mapping (nothing: an empty one)."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(
            Problem(str(path), None, None, "mapping file must hold a mapping with 'phases' and/or 'owners'")
        )
    return data


def _apply(base: PhaseMap | None, data: dict, source: str) -> PhaseMap:
    """``data`` (a mapping file's content) on top of ``base``; ``base`` None reads the defaults, whose ``owners``
    name the components."""
    phases = list(base.phases) if base else []
    comp = dict(base.component_of) if base else {}
    owners = dict(base.owner_of) if base else {}
    unknown_keys = set(data) - {"phases", "owners"}
    if unknown_keys:
        raise InputError(
            Problem(source, None, sorted(unknown_keys)[0], "unknown key in mapping file (expected 'phases', 'owners')")
        )
    if base is None:
        components = [c for c in (data.get("owners") or {})]
    else:
        components = list(base.components)
    defaults = tuple(components)
    for i, entry in enumerate(data.get("phases") or [], start=1):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("phase"), str)
            or not isinstance(entry.get("component"), str)
        ):
            raise InputError(Problem(source, i, "phases", "each phase entry needs string keys 'phase' and 'component'"))
        p, c = entry["phase"], entry["component"]
        if c not in components:
            _check_new_component(c, source, i, defaults)
            components.append(c)
        if p in (UNATTRIBUTED, "productive"):
            raise InputError(Problem(source, i, "phase", f"{p!r} is reserved"))
        if base is not None and p == TRAIN and c != comp.get(TRAIN):
            raise InputError(Problem(source, i, "phase", "'train' cannot be re-mapped"))
        if p not in comp:
            phases.append(p)
        comp[p] = c
    for c, o in (data.get("owners") or {}).items():
        if (c not in components and c != UNATTRIBUTED) or not isinstance(o, str):
            raise InputError(
                Problem(
                    source,
                    None,
                    "owners",
                    f"owner entry {c!r}: {o!r} must map a component name to a string"
                    f" (components: {', '.join(components + [UNATTRIBUTED])})",
                )
            )
        owners[c] = o
    if len(phases) > 1000:
        raise InputError(Problem(source, None, "phases", "at most 1000 phases are supported"))
    return PhaseMap(tuple(phases), comp, owners, tuple(components))


def _check_new_component(c: str, source: str, row: int, defaults: tuple[str, ...]) -> None:
    """A component a mapping file adds: a lower-case name that is not one the metric already uses."""
    taken = set(L1_STEMS) | {UNATTRIBUTED, EFFECTIVE_TRAINING, "productive"}
    if _COMPONENT_NAME.fullmatch(c) is None or c in taken:
        raise InputError(
            Problem(
                source,
                row,
                "component",
                f"component {c!r} cannot be added: a new component is a lower-case name (letters, digits, '_') other"
                f" than {', '.join(sorted(taken))}; the defaults are {', '.join(defaults)}",
            )
        )


def default_phase_map() -> PhaseMap:
    """The default phases, components and owners: the vocabulary's ``phases.yaml``."""
    path = DEFAULTS_DIR / "phases.yaml"
    return _apply(None, _mapping(VOCABULARY.phases, path), str(path))


# The six default components (the defaults' ``owners``, in order) and with ``unattributed``: what a trace read without
# a mapping file reports; a trace's own list is ``trace.phase_map.all_components``.
COMPONENTS: tuple[str, ...] = default_phase_map().components
ALL_COMPONENTS: tuple[str, ...] = COMPONENTS + (UNATTRIBUTED,)


def components_in(columns: list[str] | tuple[str, ...], suffix: str = "_s") -> tuple[str, ...]:
    """The components whose ``<component><suffix>`` columns a metric frame holds, in order.

    The metric places a user's components between the last default (``shutdown``) and ``unattributed``, so a frame
    (``job_summary``, ``fleet_summary``, ``trend`` or a selection of their columns in that order) tells its own
    components: the defaults it holds, and every column between those two.
    """
    cols = list(columns)
    out = [c for c in COMPONENTS if f"{c}{suffix}" in cols]
    last, end = f"{COMPONENTS[-1]}{suffix}", f"{UNATTRIBUTED}{suffix}"
    if last in cols and end in cols:
        out += [c[: len(c) - len(suffix)] for c in cols[cols.index(last) + 1 : cols.index(end)] if c.endswith(suffix)]
    if end in cols:
        out.append(UNATTRIBUTED)
    return tuple(out)


def load_phase_map(mapping_file: str | Path | None = None) -> PhaseMap:
    """The default vocabulary, extended or re-mapped by ``mapping_file`` if given."""
    base = default_phase_map()
    if mapping_file is None:
        return base
    path = Path(mapping_file)
    return _apply(base, _read_mapping(path), str(path))
