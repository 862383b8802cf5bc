"""Phase vocabulary, the six L2 components, and their owners.

The defaults are the trace spec's table (``ettcore/defaults/phases.yaml``).  A
mapping file (YAML or JSON) may add phases, re-map a phase to another
component, and rename owners::

    phases:                     # added after the defaults, in this order
      - {phase: my_warmup, component: trainer_init}
      - {phase: eval, component: wasted_training}   # re-map an existing phase
    owners:
      pt2_compile: PyTorch compiler team

``train`` is special: its productive part is effective training and its replay
part is wasted training; it cannot be re-mapped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ettcore.config import DEFAULTS_DIR
from ettcore.errors import InputError, Problem

COMPONENTS: tuple[str, ...] = (
    "scheduling",
    "hardware_setup",
    "trainer_init",
    "pt2_compile",
    "wasted_training",
    "shutdown",
)
UNATTRIBUTED = "unattributed"
ALL_COMPONENTS: tuple[str, ...] = COMPONENTS + (UNATTRIBUTED,)
L1_BUCKETS: tuple[str, ...] = ("productive", "tts", "recovery", "in_training_loss", "shutdown_tail")
TRAIN = "train"
SCHEDULING = "scheduling"


@dataclass(frozen=True)
class PhaseMap:
    """Phases in vocabulary order, each with its component; components with owners."""

    phases: tuple[str, ...]
    component_of: dict[str, str] = field(hash=False)
    owner_of: dict[str, str] = field(hash=False)

    def order(self, phase: str) -> int:
        return self.phases.index(phase)

    def rows(self) -> list[tuple[int, str, str, str]]:
        """(phase_id, phase, component, owner) rows; id 0 is ``unattributed``."""
        out = [(0, UNATTRIBUTED, UNATTRIBUTED, "(none)")]
        for i, p in enumerate(self.phases, start=1):
            c = self.component_of[p]
            out.append((i, p, c, self.owner_of.get(c, "(none)")))
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
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(
            Problem(str(path), None, None, "mapping file must hold a mapping with 'phases' and/or 'owners'")
        )
    return data


def _apply(base: PhaseMap | None, data: dict, source: str) -> PhaseMap:
    phases = list(base.phases) if base else []
    comp = dict(base.component_of) if base else {}
    owners = dict(base.owner_of) if base else {}
    unknown_keys = set(data) - {"phases", "owners"}
    if unknown_keys:
        raise InputError(
            Problem(source, None, sorted(unknown_keys)[0], "unknown key in mapping file (expected 'phases', 'owners')")
        )
    for i, entry in enumerate(data.get("phases") or [], start=1):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("phase"), str)
            or not isinstance(entry.get("component"), str)
        ):
            raise InputError(Problem(source, i, "phases", "each phase entry needs string keys 'phase' and 'component'"))
        p, c = entry["phase"], entry["component"]
        if c not in COMPONENTS:
            raise InputError(
                Problem(source, i, "component", f"unknown component {c!r}; expected one of {', '.join(COMPONENTS)}")
            )
        if p in (UNATTRIBUTED, "productive"):
            raise InputError(Problem(source, i, "phase", f"{p!r} is reserved"))
        if base is not None and p == TRAIN and c != comp.get(TRAIN):
            raise InputError(Problem(source, i, "phase", "'train' cannot be re-mapped"))
        if p not in comp:
            phases.append(p)
        comp[p] = c
    for c, o in (data.get("owners") or {}).items():
        if c not in ALL_COMPONENTS or not isinstance(o, str):
            raise InputError(
                Problem(source, None, "owners", f"owner entry {c!r}: {o!r} must map a component name to a string")
            )
        owners[c] = o
    if len(phases) > 1000:
        raise InputError(Problem(source, None, "phases", "at most 1000 phases are supported"))
    return PhaseMap(tuple(phases), comp, owners)


def default_phase_map() -> PhaseMap:
    path = DEFAULTS_DIR / "phases.yaml"
    return _apply(None, _read_mapping(path), str(path))


def load_phase_map(mapping_file: str | Path | None = None) -> PhaseMap:
    """The default vocabulary, extended or re-mapped by ``mapping_file`` if given."""
    base = default_phase_map()
    if mapping_file is None:
        return base
    path = Path(mapping_file)
    return _apply(base, _read_mapping(path), str(path))
