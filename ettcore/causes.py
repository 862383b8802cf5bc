"""The interruption causes and the rules that decide them (docs/causes.md).

The causes are the vocabulary's (:data:`ettcore.vocabulary.VOCABULARY`, read from ``ettcore/defaults/causes.yaml``):
each cause with its group, in report order, and the cause an attempt without one takes from its end reason
(``preemption`` -> preemption, ``failure`` -> unknown).  The names below are that vocabulary's, kept for the modules
that import them.

An importer decides each interruption's cause from what its source records (:class:`Signals`: the Slurm state, exit
status and signal, a reason text, an exception text) with a :class:`CauseMap`: rules tried in order, the first whose
every condition holds giving the cause, ``unknown`` when none holds.  The shipped rules are
``ettcore/defaults/cause_mapping.yaml``; a user's file (``--cause-mapping FILE``, YAML or JSON, the same form) is
tried before them.  A rule may name a cause of a user's causes file (``--causes-file FILE``, the measuring commands'
option: :func:`ettcore.vocabulary.read_causes_file`) when the importer is given that file too
(:func:`load_cause_map`'s ``causes_file``, or a ``vocabulary`` read before, such as a fleet store's).  A rule naming
a cause the vocabulary does not hold, an unknown condition or a pattern that does not compile is an
:class:`~ettcore.errors.InputError` naming the file, the rule (1-based) and the field.
"""

from __future__ import annotations

import json
import re
import signal as _signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ettcore.config import DEFAULTS_DIR
from ettcore.errors import InputError, Problem
from ettcore.vocabulary import UNKNOWN_CAUSE, VOCABULARY, Vocabulary

INTERRUPTIONS = VOCABULARY.interruptions  # the end reasons that interrupt a job (NoF)
UNKNOWN = UNKNOWN_CAUSE
CONDITIONS = ("source", "end_reason", "state", "exit_code", "signal", "reason", "exception")
SOURCES = ("slurm", "recorder", "goodput", "mlperf")


def _load_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(path), None, None, f"cannot read cause mapping file: {exc}")) from None
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise InputError(
            Problem(str(path), None, None, f"cause mapping file is not valid YAML/JSON: {str(exc).splitlines()[0]}")
        ) from None


#: The causes, in report order; each cause's group; the cause an end reason gives an attempt without one.
CAUSES: tuple[str, ...] = VOCABULARY.cause_names
GROUP_OF: dict[str, str] = VOCABULARY.group_of
DERIVED: dict[str, str] = VOCABULARY.derived


def derived_cause(end_reason: str) -> str | None:
    """The cause of an attempt that records none: from its end reason (None: not an interruption)."""
    return DERIVED.get(end_reason)


def signal_number(value: Any) -> int | None:
    """A signal as a number: ``9``, ``"9"``, ``"SIGKILL"``, ``"KILL"`` -> 9; None when it names no signal."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str):
        text = value.strip().upper()
        if text.isdigit():
            return int(text)
        name = text if text.startswith("SIG") else "SIG" + text
        member = getattr(_signal.Signals, name, None) if name in _signal.Signals.__members__ else None
        return None if member is None else int(member)
    return None


@dataclass(frozen=True)
class Signals:
    """What a source recorded about one attempt's end (each field None when the source does not say)."""

    source: str
    end_reason: str
    state: str | None = None  # a Slurm job state (upper case)
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None  # a reason text (Slurm's Reason, an MLPerf run_stop status)
    exception: str | None = None  # an exception's type and message


@dataclass(frozen=True)
class Rule:
    cause: str
    where: str  # "FILE rule N", for the import report
    source: tuple[str, ...] = ()
    end_reason: tuple[str, ...] = ()
    state: tuple[str, ...] = ()
    exit_code: tuple[int | str, ...] = ()
    signal: tuple[int, ...] = ()
    reason: re.Pattern | None = None
    exception: re.Pattern | None = None

    def matches(self, s: Signals) -> bool:
        if self.source and s.source not in self.source:
            return False
        if self.end_reason and s.end_reason not in self.end_reason:
            return False
        if self.state and (s.state or "").upper() not in self.state:
            return False
        if self.exit_code:
            if s.exit_code is None:
                return False
            if not any(c == s.exit_code or (c == "nonzero" and s.exit_code != 0) for c in self.exit_code):
                return False
        if self.signal and s.signal not in self.signal:
            return False
        if self.reason is not None and (s.reason is None or self.reason.search(s.reason) is None):
            return False
        if self.exception is not None and (s.exception is None or self.exception.search(s.exception) is None):
            return False
        return True


def _listed(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _rule(entry: Any, source: str, n: int, vocabulary: Vocabulary) -> Rule:
    """One rule of a mapping file, checked against ``vocabulary``'s causes: each problem names the file, the rule
    number and the field."""

    def bad(fld: str | None, msg: str) -> InputError:
        return InputError(Problem(source, n, fld, msg, table="cause mapping"))

    if not isinstance(entry, dict):
        raise bad(None, f"a rule is a mapping of conditions and a 'cause', got {entry!r}"[:200])
    unknown = sorted(str(k) for k in entry if k not in (*CONDITIONS, "cause"))
    if unknown:
        raise bad(unknown[0], f"unknown field; a rule has {', '.join(CONDITIONS)} and cause")
    cause = entry.get("cause")
    if cause not in vocabulary.cause_names:
        hint = "" if vocabulary.added else " (a cause of your own: give its causes file too, --causes-file FILE)"
        raise bad("cause", f"unknown cause {cause!r}; the causes are {', '.join(vocabulary.cause_names)}{hint}")
    kw: dict[str, Any] = {}
    for key in ("source", "end_reason", "state"):
        if key in entry:
            vals = _listed(entry[key])
            if not vals or not all(isinstance(v, str) and v.strip() for v in vals):
                raise bad(key, f"expected a text or a list of texts, got {entry[key]!r}"[:200])
            if key == "source" and any(v not in SOURCES for v in vals):
                raise bad(key, f"unknown source in {entry[key]!r}; the sources are {', '.join(SOURCES)}")
            if key == "end_reason" and any(v not in INTERRUPTIONS for v in vals):
                raise bad(key, f"an interruption's end reason is {' or '.join(INTERRUPTIONS)}, got {entry[key]!r}")
            kw[key] = tuple(v.strip().upper() if key == "state" else v.strip() for v in vals)
    if "exit_code" in entry:
        vals = _listed(entry["exit_code"])
        if not vals or not all(
            v == "nonzero" or (isinstance(v, int) and not isinstance(v, bool) and v >= 0) for v in vals
        ):
            raise bad(
                "exit_code", f"expected an exit status >= 0, 'nonzero' or a list of them, got {entry['exit_code']!r}"
            )
        kw["exit_code"] = tuple(vals)
    if "signal" in entry:
        nums = [signal_number(v) for v in _listed(entry["signal"])]
        if not nums or any(v is None for v in nums):
            raise bad("signal", f"expected a signal number or name (9, SIGKILL) or a list, got {entry['signal']!r}")
        kw["signal"] = tuple(nums)
    for key in ("reason", "exception"):
        if key in entry:
            pattern = entry[key]
            if not isinstance(pattern, str) or not pattern:
                raise bad(key, f"expected a regular expression, got {pattern!r}")
            try:
                kw[key] = re.compile(pattern)
            except re.error as exc:
                raise bad(key, f"malformed regular expression {pattern!r}: {exc}") from None
    return Rule(cause=cause, where=f"{source} rule {n}", **kw)


def _rules(data: Any, source: str, vocabulary: Vocabulary) -> list[Rule]:
    if data is None:
        return []
    if not isinstance(data, dict) or set(data) - {"rules"}:
        raise InputError(Problem(source, None, None, "a cause mapping file holds one key, 'rules': a list of rules"))
    entries = data.get("rules") or []
    if not isinstance(entries, list):
        raise InputError(Problem(source, None, "rules", "'rules' must be a list of rules"))
    return [_rule(e, source, i, vocabulary) for i, e in enumerate(entries, start=1)]


@dataclass
class CauseMap:
    """Rules in the order they are tried; :meth:`classify` gives an interruption's cause and counts what it gave."""

    rules: list[Rule]
    counts: dict[str, int] = field(default_factory=dict)
    causes: tuple[str, ...] = CAUSES  # the causes the rules may give, in report order (a causes file's included)

    def classify(self, s: Signals) -> str | None:
        """The cause of an attempt's end: None when it is not an interruption (completed, cancelled, running)."""
        if s.end_reason not in INTERRUPTIONS:
            return None
        cause = next((r.cause for r in self.rules if r.matches(s)), UNKNOWN)
        self.counts[cause] = self.counts.get(cause, 0) + 1
        return cause

    def counts_line(self) -> str:
        """What :meth:`classify` gave so far, in report order (``"preemption 2, unknown 1"``; ``"none"``), for an
        import report."""
        return ", ".join(f"{c} {self.counts[c]}" for c in self.causes if c in self.counts) or "none"


def load_cause_map(
    path: str | Path | None = None, causes_file: str | Path | None = None, vocabulary: Vocabulary | None = None
) -> CauseMap:
    """The shipped rules, after those of ``path`` (a user's mapping file) when given.  The rules may name the causes
    of ``causes_file`` (a user's causes file, as ``load_trace(causes_file=)`` reads it) or of ``vocabulary`` (one
    read before: a fleet store's); without either, the package's causes only."""
    v = VOCABULARY.with_causes(causes_file) if causes_file is not None else vocabulary or VOCABULARY
    default = DEFAULTS_DIR / "cause_mapping.yaml"
    rules = _rules(_load_yaml(default), str(default), v)
    if path is not None:
        p = Path(path)
        rules = _rules(_load_yaml(p), str(p), v) + rules
    return CauseMap(rules, causes=v.cause_names)
