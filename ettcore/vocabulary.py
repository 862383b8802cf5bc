"""The vocabulary every layer shares, read once from ``ettcore/defaults/*.yaml``.

One place for the words the trace and the metric use, and for how they are shown:

- the trace's tables (``jobs``, ``attempts``, ``spans``, ``rank_timing``);
- the end reasons of an attempt, each with its role (completion, interruption, cancel, open), label and colour;
- the Level 1 buckets, each with its column stem, labels and colour;
- the interruption causes and their groups (``causes.yaml``), each with its colour; a group says whether its causes
  count against a node (``ett nodes``), in the MTTF fit and as a crash (a failure of the job's own run, which a crash
  loop repeats: :mod:`ettcore.metric.restarts`);
- the phases, components and owners (``phases.yaml``; applied by :mod:`ettcore.phases`, which also reads a user's
  mapping file).

Every consumer derives from :data:`VOCABULARY`: the SQL (:func:`sql_fragments`, rendered into the query files by
:mod:`ettcore.trace.queries`), the data checks, the tables' labels, the charts' colours and legends, the Prometheus
families, the synthetic generator and the reference.  Adding an end reason, a cause or a bucket's label or colour is
one edit of a YAML file.  Which instant falls in which Level 1 bucket stays the attribution's logic (the SQL).

``$ETT_DEFAULTS_DIR`` points at another folder of the same files (a site's own vocabulary; the tests use a copy).
Every name is checked (lower case, digits, ``_``): a name reaches the SQL as a quoted literal built here, never from
a command line.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from ettcore.config import DEFAULTS_DIR
from ettcore.errors import InputError, Problem

NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
COLOR = re.compile(r"#[0-9a-fA-F]{6}")
ROLES = ("completion", "interruption", "cancel", "open")
UNKNOWN_CAUSE = "unknown"  # the cause of an interruption its source does not explain: every vocabulary has it
FILES = ("vocabulary.yaml", "causes.yaml", "phases.yaml")
#: The columns of the ``ett_causes`` table (:attr:`Vocabulary.cause_rows`), as a DuckDB column list; the metric's SQL
#: joins it to give an attempt its cause and group.
CAUSE_TABLE_COLUMNS = "cause_id BIGINT, cause VARCHAR, cause_group VARCHAR, derived_from VARCHAR, crash BOOLEAN"


@dataclass(frozen=True)
class EndReason:
    name: str
    role: str  # one of ROLES
    label: str
    color: str
    nof_label: str | None = None  # an interruption's nof_<name> column header

    @property
    def interrupts(self) -> bool:
        return self.role == "interruption"

    @property
    def needs_end(self) -> bool:
        """Every end reason but the open one needs an ``end`` instant."""
        return self.role != "open"

    @property
    def nof_column(self) -> str | None:
        """``nof_<name>``: the interruptions of this end reason, per job, group and bucket (None: not one)."""
        return f"nof_{self.name}" if self.interrupts else None


@dataclass(frozen=True)
class L1Bucket:
    name: str
    stem: str  # <stem>_s per job, <stem>_gpu_h per group
    label: str  # a chart's legend
    table_label: str  # a table's header
    gpu_table_label: str  # a GPU-hours table's header
    color: str


@dataclass(frozen=True)
class CauseGroup:
    name: str
    label: str
    color: str
    node: bool  # counted against the nodes of the attempt (ett nodes)
    mttf: bool  # a system or hardware failure (the MTTF fit)
    crash: bool  # a failure of the job's own run, not a preemption or a time limit (crash loops)


@dataclass(frozen=True)
class Cause:
    name: str
    group: str
    color: str
    description: str
    category: str | None = None  # a display category of a user's causes file (GPU, host, network, ...)


@dataclass(frozen=True)
class Vocabulary:
    """The vocabulary of one defaults folder (:func:`load`)."""

    tables: tuple[str, ...]
    end_reasons: tuple[EndReason, ...]
    l1_buckets: tuple[L1Bucket, ...]
    causes: tuple[Cause, ...]
    groups: tuple[CauseGroup, ...]
    derived: dict[str, str]  # an interrupting end reason -> the cause of an attempt that records none
    phases: dict[str, Any]  # phases.yaml as read (ettcore.phases applies it)
    digest: str  # of every file read: the data checks' cache key covers it
    added: tuple[Cause, ...] = ()  # the causes a user's causes file added (read_causes_file), in its order

    def __hash__(self) -> int:
        return hash(self.digest)

    # ------------------------------------------------------------------ end reasons

    @cached_property
    def end_reason_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.end_reasons)

    @cached_property
    def interruptions(self) -> tuple[str, ...]:
        """The end reasons that interrupt a job (NoF), in order."""
        return tuple(r.name for r in self.end_reasons if r.interrupts)

    def end_reason(self, name: str) -> EndReason:
        return next(r for r in self.end_reasons if r.name == name)

    def role(self, role: str) -> tuple[str, ...]:
        """The end reasons of one role, in order."""
        return tuple(r.name for r in self.end_reasons if r.role == role)

    @cached_property
    def open_end_reason(self) -> str:
        """The end reason of an attempt still running (no end)."""
        return self.role("open")[0]

    @cached_property
    def nof_columns(self) -> tuple[str, ...]:
        """``nof_failure``, ``nof_preemption``, ...: one column an interrupting end reason."""
        return tuple(r.nof_column for r in self.end_reasons if r.interrupts)

    @cached_property
    def closed_end_reasons(self) -> tuple[str, ...]:
        """The end reasons of an attempt that ended (every one but the open one), in order: what a recorder writes
        when an attempt ends."""
        return tuple(r.name for r in self.end_reasons if r.needs_end)

    @cached_property
    def end_reason_colors(self) -> dict[str, str]:
        return {r.name: r.color for r in self.end_reasons}

    @cached_property
    def end_reason_labels(self) -> dict[str, str]:
        return {r.name: r.label for r in self.end_reasons}

    # ------------------------------------------------------------------ L1 buckets

    @cached_property
    def bucket_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.l1_buckets)

    @cached_property
    def bucket_stems(self) -> dict[str, str]:
        """Each bucket's column stem (``recovery`` -> ``ttr_total``)."""
        return {b.name: b.stem for b in self.l1_buckets}

    @cached_property
    def bucket_labels(self) -> dict[str, str]:
        """Each bucket's chart label (``recovery`` -> ``recovery (NoF x TTR)``)."""
        return {b.name: b.label for b in self.l1_buckets}

    @cached_property
    def bucket_colors(self) -> dict[str, str]:
        return {b.name: b.color for b in self.l1_buckets}

    @cached_property
    def loss_buckets(self) -> tuple[L1Bucket, ...]:
        """The buckets but the productive one: the four losses."""
        return tuple(b for b in self.l1_buckets if b.name != "productive")

    # ------------------------------------------------------------------ causes

    @cached_property
    def cause_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.causes)

    @cached_property
    def group_of(self) -> dict[str, str]:
        return {c.name: c.group for c in self.causes}

    @cached_property
    def group_names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.groups)

    def group(self, name: str) -> CauseGroup:
        return next(g for g in self.groups if g.name == name)

    @cached_property
    def node_causes(self) -> tuple[str, ...]:
        """The causes counted against the nodes of an attempt (``ett nodes``), in order."""
        return tuple(c.name for c in self.causes if self.group(c.group).node)

    @cached_property
    def mttf_causes(self) -> tuple[str, ...]:
        """The system and hardware failures of the MTTF fit, in order."""
        return tuple(c.name for c in self.causes if self.group(c.group).mttf)

    @cached_property
    def crash_causes(self) -> tuple[str, ...]:
        """The causes whose interruptions are crashes (a crash loop repeats them), in order."""
        return tuple(c.name for c in self.causes if self.group(c.group).crash)

    @cached_property
    def cause_colors(self) -> dict[str, str]:
        return {c.name: c.color for c in self.causes}

    @cached_property
    def category_of(self) -> dict[str, str]:
        """Each cause's display category, the one place categories come from: a user's causes file gives one;
        otherwise (the fallback) its group's label.  Names that differ only in case, spaces, ``_`` or ``-`` are one
        category (:func:`category_key`), spelt as a causes file first names it, else as the group's label: a file's
        ``Unknown`` and the ``unknown`` group's label ``unknown`` are one row, never two."""
        named = [c.category or self.group(c.group).label for c in self.causes]
        given = [c.category for c in self.causes if c.category] + [g.label for g in self.groups]
        spelling: dict[str, str] = {}
        for name in given:
            spelling.setdefault(category_key(name), name)
        return {c.name: spelling[category_key(n)] for c, n in zip(self.causes, named)}

    @cached_property
    def category_colors(self) -> dict[str, str]:
        """Each display category (:attr:`category_of`), in report order (the order its first cause comes in), with
        the colour of that first cause: a causes file that colours its causes by category colours the category so;
        a built-in cause's category, its group's label, takes the group's first cause's colour (the group's own in
        the shipped vocabulary)."""
        colors: dict[str, str] = {}
        for c in self.causes:
            colors.setdefault(self.category_of[c.name], c.color)
        return colors

    def with_causes(self, path: str | Path) -> "Vocabulary":
        """This vocabulary with the causes of a user's causes file added (:func:`read_causes_file`)."""
        return read_causes_file(self, path)

    def with_cause_entries(self, entries: list[dict], where: str | Path) -> "Vocabulary":
        """This vocabulary with the causes of :meth:`added_entries` (as a fleet store or its Parquet mirror keeps
        them) added, checked as a causes file's; a problem names ``where``.  No entries: this vocabulary."""
        return _with_entries(self, {"causes": entries}, Path(where)) if entries else self

    def added_entries(self) -> list[dict]:
        """The causes a user's causes file added, as the entries of such a file with every field written out (the
        category only where one was given): what a fleet store and its Parquet mirror keep, and what
        :meth:`with_cause_entries` reads back."""
        return [
            {
                "cause": c.name,
                "group": c.group,
                "color": c.color,
                "description": c.description,
                **({} if c.category is None else {"category": c.category}),
            }
            for c in self.added
        ]

    def derived_from(self, cause: str) -> str | None:
        """The end reason that gives ``cause`` to an attempt without one (None: no end reason gives it)."""
        return next((r for r, c in self.derived.items() if c == cause), None)

    @cached_property
    def cause_rows(self) -> tuple[tuple[int, str, str, str | None, bool], ...]:
        """The rows of the ``ett_causes`` table both engines register (columns :data:`CAUSE_TABLE_COLUMNS`): each
        cause, numbered from 1 in report order, with its group, the end reason it is derived from (or None) and
        whether it is a crash (its group's flag)."""
        return tuple(
            (i, c.name, c.group, self.derived_from(c.name), self.group(c.group).crash)
            for i, c in enumerate(self.causes, start=1)
        )


# ---------------------------------------------------------------------------------------------------- reading


def _read(path: Path) -> tuple[Any, bytes]:
    try:
        raw = path.read_bytes()
        return yaml.safe_load(raw.decode("utf-8")), raw
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(Problem(str(path), None, None, f"cannot read the vocabulary: {exc}")) from None


def _entries(data: Any, key: str, path: Path, fields: dict[str, type], optional: dict[str, type]) -> list[dict]:
    """``data[key]``: a list of mappings with ``fields`` (and maybe ``optional``), each checked; a problem names the
    file, the entry (1-based) and the field."""
    items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise InputError(Problem(str(path), None, key, f"'{key}' must be a non-empty list"))
    out = []
    for i, e in enumerate(items, start=1):
        if not isinstance(e, dict):
            raise InputError(Problem(str(path), i, key, f"each entry of '{key}' is a mapping"))
        unknown = sorted(set(e) - set(fields) - set(optional))
        if unknown:
            raise InputError(Problem(str(path), i, unknown[0], f"unknown field of '{key}'"))
        for f, t in {**fields, **optional}.items():
            if f not in e:
                if f in fields:
                    raise InputError(Problem(str(path), i, f, f"missing field of '{key}'"))
                continue
            if not isinstance(e[f], t) or (t is str and not e[f].strip()):
                raise InputError(Problem(str(path), i, f, f"expected {t.__name__}, got {e[f]!r}"))
        out.append(e)
    return out


def _name(value: str, path: Path, row: int, fld: str, seen: set[str]) -> str:
    if NAME.fullmatch(value) is None:
        raise InputError(Problem(str(path), row, fld, f"{value!r} is not a name (lower case, digits, '_')"))
    if value in seen:
        raise InputError(Problem(str(path), row, fld, f"{value!r} is named twice"))
    seen.add(value)
    return value


def _color(value: str, path: Path, row: int) -> str:
    if COLOR.fullmatch(value) is None:
        raise InputError(Problem(str(path), row, "color", f"a colour is #rrggbb, got {value!r}"))
    return value


def _derived(data: Any, path: Path, interrupting: tuple[str, ...], causes: set[str]) -> dict[str, str]:
    """``derived``: each interrupting end reason (and no other) -> a cause; a problem names the end reason
    (``derived.<end reason>``)."""
    derived = data.get("derived") if isinstance(data, dict) else None
    if not isinstance(derived, dict):
        raise InputError(
            Problem(
                str(path),
                None,
                "derived",
                "'derived' maps each interrupting end reason to a cause: " + ", ".join(interrupting),
            )
        )
    for r in interrupting:
        if r not in derived:
            raise InputError(
                Problem(str(path), None, f"derived.{r}", f"no cause for the interrupting end reason {r!r}")
            )
    for r, c in derived.items():
        if r not in interrupting:
            raise InputError(
                Problem(
                    str(path),
                    None,
                    f"derived.{r}",
                    f"{r!r} is not an interrupting end reason: " + ", ".join(interrupting),
                )
            )
        if c not in causes:
            raise InputError(Problem(str(path), None, f"derived.{r}", f"unknown cause {c!r}"))
    return dict(derived)


def load(folder: str | Path = DEFAULTS_DIR) -> Vocabulary:
    """The vocabulary of ``folder`` (``vocabulary.yaml``, ``causes.yaml``, ``phases.yaml``), checked."""
    folder = Path(folder)
    digest = hashlib.blake2b(digest_size=16)
    texts = {}
    for name in FILES:
        texts[name], raw = _read(folder / name)
        digest.update(name.encode() + b"\0" + raw + b"\0")
    voc, path = texts["vocabulary.yaml"], folder / "vocabulary.yaml"
    tables = voc.get("tables") if isinstance(voc, dict) else None
    if not isinstance(tables, list) or not all(isinstance(t, str) and NAME.fullmatch(t) for t in tables):
        raise InputError(Problem(str(path), None, "tables", "'tables' must be a list of names"))
    seen: set[str] = set()
    reasons = []
    for i, e in enumerate(
        _entries(
            voc, "end_reasons", path, {"end_reason": str, "role": str, "label": str, "color": str}, {"nof_label": str}
        ),
        start=1,
    ):
        if e["role"] not in ROLES:
            raise InputError(
                Problem(str(path), i, "role", f"unknown role {e['role']!r}; the roles are {', '.join(ROLES)}")
            )
        reasons.append(
            EndReason(
                _name(e["end_reason"], path, i, "end_reason", seen),
                e["role"],
                e["label"],
                _color(e["color"], path, i),
                e.get("nof_label"),
            )
        )
    for role in ("completion", "cancel", "open"):
        if sum(r.role == role for r in reasons) != 1:
            raise InputError(Problem(str(path), None, "role", f"exactly one end reason has the role {role!r}"))
    if not any(r.interrupts for r in reasons):
        raise InputError(Problem(str(path), None, "role", "at least one end reason has the role 'interruption'"))
    seen = set()
    buckets = []
    for i, e in enumerate(
        _entries(
            voc,
            "l1_buckets",
            path,
            {"bucket": str, "stem": str, "label": str, "table_label": str, "color": str},
            {"gpu_table_label": str},
        ),
        start=1,
    ):
        buckets.append(
            L1Bucket(
                _name(e["bucket"], path, i, "bucket", seen),
                _name(e["stem"], path, i, "stem", set()),
                e["label"],
                e["table_label"],
                e.get("gpu_table_label") or e["table_label"],
                _color(e["color"], path, i),
            )
        )
    if buckets[0].name != "productive":
        raise InputError(Problem(str(path), 1, "bucket", "the first Level 1 bucket is 'productive'"))
    cdata, cpath = texts["causes.yaml"], folder / "causes.yaml"
    seen = set()
    groups = [
        CauseGroup(
            _name(e["group"], cpath, i, "group", seen),
            e["label"],
            _color(e["color"], cpath, i),
            e["node"],
            e["mttf"],
            e["crash"],
        )
        for i, e in enumerate(
            _entries(
                cdata,
                "groups",
                cpath,
                {"group": str, "label": str, "color": str, "node": bool, "mttf": bool, "crash": bool},
                {},
            ),
            start=1,
        )
    ]
    seen = set()
    causes = []
    for i, e in enumerate(
        _entries(cdata, "causes", cpath, {"cause": str, "group": str, "color": str, "description": str}, {}), start=1
    ):
        if e["group"] not in {g.name for g in groups}:
            raise InputError(
                Problem(
                    str(cpath),
                    i,
                    "group",
                    f"unknown group {e['group']!r}; the groups are " + ", ".join(g.name for g in groups),
                )
            )
        causes.append(
            Cause(
                _name(e["cause"], cpath, i, "cause", seen), e["group"], _color(e["color"], cpath, i), e["description"]
            )
        )
    if UNKNOWN_CAUSE not in seen:
        raise InputError(
            Problem(str(cpath), None, "causes", f"the causes include {UNKNOWN_CAUSE!r} (what a source does not say)")
        )
    derived = _derived(cdata, cpath, tuple(r.name for r in reasons if r.interrupts), seen)
    return Vocabulary(
        tuple(tables),
        tuple(reasons),
        tuple(buckets),
        tuple(causes),
        tuple(groups),
        derived,
        texts["phases.yaml"] or {},
        digest.hexdigest(),
    )


# ---------------------------------------------------------------------------------------------------- a user's causes


def category_key(name: str) -> str:
    """What makes two display categories one (:attr:`Vocabulary.category_of`): case, and runs of spaces, ``_`` and
    ``-``, do not count (``Unplanned Maintenance`` is ``unplanned_maintenance``)."""
    return " ".join(re.split(r"[\s_-]+", name.strip())).casefold()


def read_causes_file(base: Vocabulary, path: str | Path) -> Vocabulary:
    """``base`` with the causes of a user's causes file (YAML or JSON) added, as a mapping file adds components::

        causes:
          - {cause: faulty_gpu, group: hardware, category: GPU, description: "a GPU failed (Xid, fell off the bus)"}
          - {cause: nccl_watchdog, group: system, category: network, color: "#fc9272"}

    Each cause has a new name (lower case, digits, ``_``) and one of ``base``'s groups, which decide what ``ett
    nodes``, the MTTF fit and crash loops count; ``category`` (a display category of the user's own), ``color``
    (default: its group's) and ``description`` are optional.  The causes come after ``base``'s own and before
    ``unknown``, in the file's order.  A problem names the file, the entry (1-based) and the field, in one line.  The
    digest covers the causes added, every field written out (the data checks' cache key covers the causes a trace
    may name; two files that say the same give the same digest, and so does a store's copy of them)."""
    path = Path(path)
    data, _raw = _read(path)
    return _with_entries(base, data, path)


def _with_entries(base: Vocabulary, data: Any, path: Path) -> Vocabulary:
    """``base`` with the causes of ``data`` (a causes file's content, read from ``path``) added, checked."""
    groups = {g.name: g for g in base.groups}
    seen = set(base.cause_names)
    added = []
    for i, e in enumerate(
        _entries(
            data,
            "causes",
            path,
            {"cause": str, "group": str},
            {"category": str, "color": str, "description": str},
        ),
        start=1,
    ):
        if e["group"] not in groups:
            raise InputError(
                Problem(str(path), i, "group", f"unknown group {e['group']!r}; the groups are " + ", ".join(groups))
            )
        name = _name(e["cause"], path, i, "cause", seen)
        color = _color(e["color"], path, i) if "color" in e else groups[e["group"]].color
        added.append(Cause(name, e["group"], color, e.get("description", name.replace("_", " ")), e.get("category")))
    unknown = [c for c in base.causes if c.name == UNKNOWN_CAUSE]
    causes = tuple(c for c in base.causes if c.name != UNKNOWN_CAUSE) + tuple(added) + tuple(unknown)
    every = (*base.added, *added)
    v = Vocabulary(
        base.tables, base.end_reasons, base.l1_buckets, causes, base.groups, base.derived, base.phases, "", every
    )
    text = json.dumps(v.added_entries(), sort_keys=True).encode()
    digest = hashlib.blake2b(base.digest.encode() + b"\0causes\0" + text, digest_size=16).hexdigest()
    return Vocabulary(
        base.tables, base.end_reasons, base.l1_buckets, causes, base.groups, base.derived, base.phases, digest, every
    )


def kept_vocabulary(kept: list[dict], where: str, causes_file: str | Path | None) -> tuple[Vocabulary, str | None]:
    """The vocabulary rows kept with their causes (a fleet store's or its Parquet mirror's: ``kept``, as
    :meth:`Vocabulary.added_entries` writes them, read from ``where``) are read with, and why it differs from the one
    they were attributed with (None: it does not): the kept causes, or those of ``causes_file`` where given and other.
    A causes file that lacks a kept cause is refused in one line (the rows may name it)."""
    kept_v = VOCABULARY.with_cause_entries(kept, where)
    if causes_file is None:
        return kept_v, None
    given = VOCABULARY.with_causes(causes_file)
    if given.causes == kept_v.causes:
        return kept_v, None
    missing = [c for c in kept_v.cause_names if c not in given.cause_names]
    if missing:
        why = (
            f"{causes_file} lacks causes the store keeps ({', '.join(missing)}), which its rows may name: give the "
            "store's causes file, or none (a store reads the causes it keeps)"
        )
        raise InputError(Problem("--causes-file", None, "causes_file", why))
    return given, "--causes-file differs from the store's causes"


# ---------------------------------------------------------------------------------------------------- the SQL


def _quoted(names) -> str:
    return ", ".join(f"'{n}'" for n in names)  # names are checked against NAME: no quote can be in one


def sql_fragments(v: Vocabulary) -> dict[str, str]:
    """The texts the query files name as ``{{name}}`` (:func:`ettcore.trace.queries.sql` renders them):

    - ``end_reasons``: every end reason, quoted and comma-separated (``'completed', 'failure', ...``);
    - ``closed_end_reasons``: those that need an end; ``interruptions``: those that interrupt a job;
      ``not_interruptions``: the others;
    - ``open_end_reason``, ``cancel_end_reason``: the one of each role, quoted;
    - ``nof_by_end_reason``: ``CAST(count_if(end_reason = 'failure') AS BIGINT) AS nof_failure, ...``;
    - ``derived_cause``: ``WHEN 'preemption' THEN 'preemption' WHEN 'failure' THEN 'unknown'`` (inside
      ``CASE end_reason ... END``).
    """
    return {
        "end_reasons": _quoted(v.end_reason_names),
        "closed_end_reasons": _quoted(v.closed_end_reasons),
        "interruptions": _quoted(v.interruptions),
        "not_interruptions": _quoted(r.name for r in v.end_reasons if not r.interrupts),
        "open_end_reason": _quoted(v.role("open")),
        "cancel_end_reason": _quoted(v.role("cancel")),
        "nof_by_end_reason": ", ".join(
            f"CAST(count_if(end_reason = '{r}') AS BIGINT) AS nof_{r}" for r in v.interruptions
        ),
        "derived_cause": " ".join(f"WHEN '{r}' THEN '{c}'" for r, c in v.derived.items()),
    }


def sql_lists(v: Vocabulary) -> dict[str, tuple[str, ...]]:
    """The lists a query file repeats a text over as ``{{each LIST: TEXT}}``: ``nof`` (``nof_failure``,
    ``nof_preemption``: one count column an interrupting end reason) and ``tables`` (the trace's tables, ``jobs``,
    ``attempts``, ``spans``, ``rank_timing``: the fleet store keeps each one's rows and digest)."""
    return {"nof": v.nof_columns, "tables": v.tables}


#: The vocabulary of ``ettcore/defaults`` (or ``$ETT_DEFAULTS_DIR``): what every layer reads.
VOCABULARY: Vocabulary = load()
