"""Scenario files: what a synthetic trace should look like, validated.

A scenario (YAML, ``data/scenarios/<name>.yaml``) describes jobs by
distributions of phase durations, interruption processes, checkpointing,
re-queue delays, shutdown and publishing; :mod:`ettcore.synthetic.generator` turns a
scenario and a seed into a trace.  Every duration in a scenario file is in
**minutes**.  The top-level keys::

    version: 1
    name: fleet
    description: ...
    calibrated_to: ...            # optional, copied into trace.json
    assumptions: [...]            # where the paper gives no number (strings)
    default_jobs: 20000
    start: 2026-01-05T00:00:00Z   # first job start
    arrival: {kind: uniform, window_days: 182}    # or {kind: sequential, spacing_min: 720}
    assignment: shuffled          # or listed: job i takes cohorts in listed order
    startups: {<template>: [<step>, ...]}        # start-up DAGs (below)
    defaults: <profile>           # merged under every cohort's profile
    cohorts: [<cohort>, ...]
    changes: [<change>, ...]      # optional: dated roll-outs and episodes

A **step** of a start-up template: ``{name, phase, stage?, after?: [names],
duration | first | restart}``.  ``duration`` applies to every attempt;
``first`` to attempt 0 and ``restart`` to later attempts; a step with only
one of them runs only on those attempts.  A step starts when all of its
``after`` steps have ended (at the attempt's start if none); training starts
when every step has ended, so the start-up critical path is the longest chain.

A **duration** is a number (fixed) or ``{dist: fixed|uniform|lognormal|normal,
...}`` with ``value`` / ``low, high`` / ``median, sigma`` / ``mean, sd`` and
optional ``min``/``max`` clipping (a random checkpoint interval is clipped at
>= 1 minute).

A **profile** (``defaults`` merged with a cohort's ``profile``)::

    startup: {template: name, durations: {step: duration | {first, restart}}, scale: {phase|step: factor}}
    train_min: duration           # new-data training per job, or:
    wall_budget_min: duration     # time-boxed job: training fills the budget
    cursor_rate: duration         # examples per second (cursor units)
    checkpoint: {interval_min: duration, blocking_min: duration}
    interruptions:
      induced: [{at_min: progress minutes, end_reason: failure|preemption, failure_kind: str}]
      random: {<failure_kind>: {per_day: rate per day of training, end_reason: failure|preemption}}
      hang_min: {failure: duration, preemption: duration}
      requeue_min: {failure: duration, preemption: duration}
      # end_reason: an interrupting end reason of the vocabulary (ettcore/defaults/vocabulary.yaml); an induced
      # interruption's default is the first (failure); hang_min and requeue_min take one duration each
      max: 12                     # at most this many per job (later ones are not drawn)
    shutdown_min: duration
    publish_min: duration

A **cohort**: ``{name, weight, gpus: duration (drawn once per model),
models: count, model_prefix?, labels: {...}, profile: {...}}``.

A **change**: ``{name, from: date | {cohort: date}, until?: date, cohorts?:
[names], patch: <profile fragment>, scale: {dotted.path: factor}, note?: str}``; it
applies to jobs that start in ``[from, until)`` in the named cohorts.

Every problem is a :class:`~ettcore.errors.InputError` naming the file and the
field (a dotted path such as ``cohorts[2].profile.checkpoint.interval_min``).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ettcore.config import SCENARIO_DIR
from ettcore.errors import InputError, Problem
from ettcore.phases import default_phase_map
from ettcore.vocabulary import VOCABULARY

END_REASONS = VOCABULARY.interruptions  # the end reasons a scenario's interruptions take
DIST_KINDS = ("fixed", "uniform", "lognormal", "normal")


class _Err:
    """Collects the file name so every raise names it."""

    def __init__(self, file: str):
        self.file = file

    def __call__(self, fieldpath: str, message: str) -> InputError:
        return InputError(Problem(self.file, None, fieldpath, message))


@dataclass(frozen=True)
class Dist:
    """A non-negative random duration (or rate), in the scenario's units.

    ``fixed``: always ``a``. ``uniform``: U(a, b). ``lognormal``: median ``a``,
    log-sd ``b`` (mean ``a * exp(b^2/2)``). ``normal``: N(a, b^2).  Draws are
    clipped to ``[lo, hi]`` (``lo`` >= 0).
    """

    kind: str
    a: float
    b: float = 0.0
    lo: float = 0.0
    hi: float = math.inf

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` draws as float64 (no draw from ``rng`` for a fixed value)."""
        if self.kind == "fixed":
            x = np.full(n, self.a, dtype=np.float64)
        elif self.kind == "uniform":
            x = rng.uniform(self.a, self.b, n)
        elif self.kind == "lognormal":
            x = self.a * np.exp(self.b * rng.standard_normal(n))
        else:
            x = self.a + self.b * rng.standard_normal(n)
        return np.clip(x, self.lo, self.hi)

    def scaled(self, f: float) -> "Dist":
        """The distribution of ``f * X`` (log-sd and clipping scale accordingly)."""
        if self.kind == "lognormal":
            return Dist(self.kind, self.a * f, self.b, self.lo * f, self.hi * f)
        return Dist(self.kind, self.a * f, self.b * f, self.lo * f, self.hi * f)

    @property
    def is_zero(self) -> bool:
        return self.kind == "fixed" and self.a == 0.0


def parse_dist(value: Any, where: str, err: _Err) -> Dist:
    """A duration field: a number, or a ``{dist: ..}`` mapping."""
    if isinstance(value, bool):
        raise err(where, "expected a number or a {dist: ...} mapping, got a boolean")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise err(where, f"must be a finite number >= 0, got {value!r}")
        return Dist("fixed", float(value))
    if not isinstance(value, dict):
        raise err(where, f"expected a number or a {{dist: ...}} mapping, got {type(value).__name__}")
    kind = value.get("dist")
    if kind not in DIST_KINDS:
        raise err(f"{where}.dist", f"unknown distribution {kind!r}; expected one of {', '.join(DIST_KINDS)}")
    need = {
        "fixed": ("value",),
        "uniform": ("low", "high"),
        "lognormal": ("median", "sigma"),
        "normal": ("mean", "sd"),
    }[kind]
    allowed = set(need) | {"dist", "min", "max"}
    for k in value:
        if k not in allowed:
            raise err(f"{where}.{k}", f"unknown key for a {kind} distribution; expected {', '.join(sorted(allowed))}")
    nums = {}
    for k in need + tuple(k for k in ("min", "max") if k in value):
        v = value.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise err(f"{where}.{k}", f"required number missing or not finite (got {v!r})")
        nums[k] = float(v)
    lo, hi = max(0.0, nums.get("min", 0.0)), nums.get("max", math.inf)
    if lo > hi:
        raise err(f"{where}.min", f"min {lo} is above max {hi}")
    if kind == "fixed":
        if nums["value"] < 0:
            raise err(f"{where}.value", "must be >= 0")
        return Dist(kind, nums["value"], 0.0, lo, hi)
    if kind == "uniform":
        if not 0 <= nums["low"] <= nums["high"]:
            raise err(f"{where}.low", f"need 0 <= low <= high, got low={nums['low']}, high={nums['high']}")
        return Dist(kind, nums["low"], nums["high"], lo, hi)
    if kind == "lognormal":
        if nums["median"] <= 0 or nums["sigma"] < 0:
            raise err(f"{where}.median", "need median > 0 and sigma >= 0")
        return Dist(kind, nums["median"], nums["sigma"], lo, hi)
    if nums["sd"] < 0:
        raise err(f"{where}.sd", "must be >= 0")
    return Dist(kind, nums["mean"], nums["sd"], lo, hi)


@dataclass(frozen=True)
class Step:
    """One start-up step: ``first``/``restart`` durations in minutes (None: not run)."""

    name: str
    phase: str
    stage: str | None
    after: tuple[int, ...]
    first: Dist | None
    restart: Dist | None


@dataclass(frozen=True)
class RandomInterruption:
    failure_kind: str
    end_reason: str
    per_day: Dist  # rate per day of new-data training (drawn per job)


@dataclass(frozen=True)
class InducedInterruption:
    at_min: float  # progress (new-data training minutes) at which it strikes
    end_reason: str
    failure_kind: str


@dataclass(frozen=True)
class Profile:
    """Everything the generator needs to draw one job (durations in minutes)."""

    steps: tuple[Step, ...]
    train_min: Dist | None
    wall_budget_min: Dist | None
    cursor_rate: Dist
    ckpt_interval_min: Dist
    ckpt_blocking_min: Dist
    induced: tuple[InducedInterruption, ...]
    random: tuple[RandomInterruption, ...]
    hang_min: dict[str, Dist]
    requeue_min: dict[str, Dist]
    max_interruptions: int
    shutdown_min: Dist
    publish_min: Dist


@dataclass(frozen=True)
class Change:
    name: str
    starts: dict[str, datetime]  # cohort -> first day it applies
    until: datetime | None
    patch: dict
    scale: dict[str, float]


@dataclass(frozen=True)
class Cohort:
    name: str
    weight: float
    gpus: Dist
    models: int
    model_prefix: str
    labels: dict[str, Any]
    raw_profile: dict  # defaults merged with the cohort's profile, before changes


@dataclass
class Scenario:
    """A validated scenario.  ``profile(cohort, changes)`` resolves a profile."""

    path: Path
    name: str
    description: str
    calibrated_to: str
    assumptions: list[str]
    default_jobs: int
    start: datetime
    arrival_kind: str
    window_days: float
    spacing_min: float
    assignment: str
    templates: dict[str, list[dict]]
    cohorts: list[Cohort]
    changes: list[Change]
    raw: dict = field(repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    def profile(self, cohort: int, active: tuple[int, ...] = ()) -> Profile:
        """The profile of cohort ``cohort`` with changes ``active`` applied (cached)."""
        key = (cohort, active)
        if key not in self._cache:
            c = self.cohorts[cohort]
            raw = copy.deepcopy(c.raw_profile)
            where = f"cohorts[{cohort}] ({c.name}).profile"
            for i in active:
                ch = self.changes[i]
                raw = _deep_merge(raw, ch.patch)
                for path, f in ch.scale.items():
                    _scale_path(raw, path, f, f"changes[{i}] ({ch.name}).scale.{path}", self._err)
                where += f" + changes[{i}] ({ch.name})"
            self._cache[key] = _parse_profile(raw, where, self.templates, self._err)
        return self._cache[key]

    @property
    def _err(self) -> _Err:
        return _Err(str(self.path))


def _deep_merge(base: dict, over: dict) -> dict:
    """``over`` on top of ``base``: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and "dist" not in v:
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _scale_path(raw: dict, path: str, f: float, where: str, err: _Err) -> None:
    """Multiply the duration/rate at dotted ``path`` of a raw profile by ``f``."""
    keys = path.split(".")
    node: Any = raw
    for k in keys[:-1]:
        if not isinstance(node, dict) or k not in node:
            raise err(where, f"path {path!r} does not exist in the profile")
        node = node[k]
    last = keys[-1]
    if not isinstance(node, dict) or last not in node:
        raise err(where, f"path {path!r} does not exist in the profile")
    v = node[last]
    if isinstance(v, bool):
        raise err(where, "cannot scale a boolean")
    if isinstance(v, (int, float)):
        node[last] = v * f
    elif isinstance(v, dict) and "dist" in v:
        d = dict(v)
        for k in ("value", "low", "high", "median", "mean", "sd", "min", "max"):
            if k in d and isinstance(d[k], (int, float)):
                d[k] = d[k] * f
        node[last] = d
    else:
        raise err(where, f"path {path!r} is not a number or a distribution")


def _parse_date(value: Any, where: str, err: _Err) -> datetime:
    if isinstance(value, datetime):
        dt = value
    elif hasattr(value, "isoformat") and not isinstance(value, str):  # a date
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise err(where, f"not an ISO-8601 date/time: {value!r}") from None
    else:
        raise err(where, f"expected a date, got {value!r}")
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


def _check_keys(d: Any, allowed: set[str], where: str, err: _Err, required: tuple[str, ...] = ()) -> dict:
    if not isinstance(d, dict):
        raise err(where, f"expected a mapping, got {type(d).__name__}")
    for k in d:
        if k not in allowed:
            raise err(f"{where}.{k}" if where else str(k), f"unknown key; expected one of {', '.join(sorted(allowed))}")
    for k in required:
        if k not in d:
            raise err(f"{where}.{k}" if where else k, "required key missing")
    return d


def _parse_profile(raw: dict, where: str, templates: dict[str, list[dict]], err: _Err) -> Profile:
    """Validate a merged profile mapping and resolve its start-up template."""
    keys = {
        "startup",
        "train_min",
        "wall_budget_min",
        "cursor_rate",
        "checkpoint",
        "interruptions",
        "shutdown_min",
        "publish_min",
    }
    _check_keys(raw, keys, where, err, ("startup", "cursor_rate", "checkpoint", "shutdown_min"))
    if ("train_min" in raw) == ("wall_budget_min" in raw):
        raise err(f"{where}.train_min", "give exactly one of 'train_min' and 'wall_budget_min'")
    su = _check_keys(raw["startup"], {"template", "durations", "scale"}, f"{where}.startup", err, ("template",))
    tname = su["template"]
    if tname not in templates:
        raise err(
            f"{where}.startup.template", f"unknown start-up template {tname!r}; defined: {', '.join(sorted(templates))}"
        )
    overrides = su.get("durations") or {}
    _check_keys(overrides, {s["name"] for s in templates[tname]}, f"{where}.startup.durations", err)
    scale = su.get("scale") or {}
    _check_keys(
        scale,
        {s["name"] for s in templates[tname]} | {s["phase"] for s in templates[tname]},
        f"{where}.startup.scale",
        err,
    )
    for k, f in scale.items():
        if isinstance(f, bool) or not isinstance(f, (int, float)) or f < 0:
            raise err(f"{where}.startup.scale.{k}", "must be a number >= 0")
    names = [s["name"] for s in templates[tname]]
    steps = []
    for i, s in enumerate(templates[tname]):
        spec = dict(s)
        if s["name"] in overrides:
            ov = overrides[s["name"]]
            spec.pop("duration", None), spec.pop("first", None), spec.pop("restart", None)
            if isinstance(ov, dict) and "dist" not in ov:
                _check_keys(ov, {"first", "restart", "duration"}, f"{where}.startup.durations.{s['name']}", err)
                spec.update(ov)
            else:
                spec["duration"] = ov
        sw = f"{where}.startup.durations.{s['name']}" if s["name"] in overrides else f"startups.{tname}[{i}]"
        if "duration" in spec:
            first = restart = parse_dist(spec["duration"], f"{sw}.duration", err)
        else:
            first = parse_dist(spec["first"], f"{sw}.first", err) if "first" in spec else None
            restart = parse_dist(spec["restart"], f"{sw}.restart", err) if "restart" in spec else None
        f = float(scale.get(s["name"], 1.0)) * float(scale.get(s["phase"], 1.0))
        if f != 1.0:
            first = first.scaled(f) if first else None
            restart = restart.scaled(f) if restart else None
        after = tuple(names.index(a) for a in s.get("after", ()))
        steps.append(Step(s["name"], s["phase"], s.get("stage"), after, first, restart))

    ck = _check_keys(
        raw["checkpoint"],
        {"interval_min", "blocking_min"},
        f"{where}.checkpoint",
        err,
        ("interval_min", "blocking_min"),
    )
    interval = parse_dist(ck["interval_min"], f"{where}.checkpoint.interval_min", err)
    if interval.kind == "fixed" and interval.a <= 0:
        raise err(f"{where}.checkpoint.interval_min", "must be > 0")
    if interval.kind != "fixed" and interval.lo < 1.0:
        # A random interval is clipped at one minute (documented in the module docstring).
        interval = Dist(interval.kind, interval.a, interval.b, 1.0, max(interval.hi, 1.0))

    it = _check_keys(
        raw.get("interruptions") or {},
        {"induced", "random", "hang_min", "requeue_min", "max"},
        f"{where}.interruptions",
        err,
    )
    induced = []
    for j, e in enumerate(it.get("induced") or []):
        w = f"{where}.interruptions.induced[{j}]"
        _check_keys(e, {"at_min", "end_reason", "failure_kind"}, w, err, ("at_min",))
        at = e["at_min"]
        if isinstance(at, bool) or not isinstance(at, (int, float)) or not at > 0:
            raise err(f"{w}.at_min", f"must be a number > 0, got {at!r}")
        er = e.get("end_reason", END_REASONS[0])
        if er not in END_REASONS:
            raise err(f"{w}.end_reason", f"must be one of {', '.join(END_REASONS)}, got {er!r}")
        induced.append(InducedInterruption(float(at), er, str(e.get("failure_kind", "induced"))))
    induced.sort(key=lambda x: x.at_min)
    rnd = []
    for kind, e in (it.get("random") or {}).items():
        w = f"{where}.interruptions.random.{kind}"
        _check_keys(e, {"per_day", "end_reason"}, w, err, ("per_day", "end_reason"))
        if e["end_reason"] not in END_REASONS:
            raise err(f"{w}.end_reason", f"must be one of {', '.join(END_REASONS)}, got {e['end_reason']!r}")
        rnd.append(RandomInterruption(str(kind), e["end_reason"], parse_dist(e["per_day"], f"{w}.per_day", err)))
    if rnd and "wall_budget_min" in raw:
        raise err(
            f"{where}.interruptions.random",
            "random interruptions need 'train_min' (a time-boxed job takes only induced ones)",
        )
    hang, requeue = {}, {}
    for name, dst in (("hang_min", hang), ("requeue_min", requeue)):
        m = _check_keys(it.get(name) or {}, set(END_REASONS), f"{where}.interruptions.{name}", err)
        for er in END_REASONS:
            dst[er] = parse_dist(m.get(er, 0.0), f"{where}.interruptions.{name}.{er}", err)
    mx = it.get("max", 12)
    if isinstance(mx, bool) or not isinstance(mx, int) or not 0 <= mx <= 200:
        raise err(f"{where}.interruptions.max", f"must be an integer in 0..200, got {mx!r}")
    if len(induced) > mx:
        raise err(f"{where}.interruptions.induced", f"{len(induced)} induced interruptions exceed max={mx}")

    return Profile(
        steps=tuple(steps),
        train_min=parse_dist(raw["train_min"], f"{where}.train_min", err) if "train_min" in raw else None,
        wall_budget_min=parse_dist(raw["wall_budget_min"], f"{where}.wall_budget_min", err)
        if "wall_budget_min" in raw
        else None,
        cursor_rate=parse_dist(raw["cursor_rate"], f"{where}.cursor_rate", err),
        ckpt_interval_min=interval,
        ckpt_blocking_min=parse_dist(ck["blocking_min"], f"{where}.checkpoint.blocking_min", err),
        induced=tuple(induced),
        random=tuple(rnd),
        hang_min=hang,
        requeue_min=requeue,
        max_interruptions=mx,
        shutdown_min=parse_dist(raw["shutdown_min"], f"{where}.shutdown_min", err),
        publish_min=parse_dist(raw.get("publish_min", 0.0), f"{where}.publish_min", err),
    )


def _parse_templates(raw: Any, err: _Err) -> dict[str, list[dict]]:
    phases = set(default_phase_map().phases) - {"train", "scheduling"}
    if not isinstance(raw, dict) or not raw:
        raise err("startups", "must map template names to lists of steps")
    out = {}
    for tname, steps in raw.items():
        if not isinstance(steps, list) or not steps:
            raise err(f"startups.{tname}", "must be a non-empty list of steps")
        seen: list[str] = []
        for i, s in enumerate(steps):
            w = f"startups.{tname}[{i}]"
            _check_keys(
                s, {"name", "phase", "stage", "after", "duration", "first", "restart"}, w, err, ("name", "phase")
            )
            if not isinstance(s["name"], str) or s["name"] in seen:
                raise err(f"{w}.name", f"step names must be unique strings, got {s['name']!r}")
            if s["phase"] not in phases:
                raise err(
                    f"{w}.phase", f"unknown start-up phase {s['phase']!r}; expected one of {', '.join(sorted(phases))}"
                )
            after = s.get("after", [])
            if not isinstance(after, list):
                raise err(f"{w}.after", "must be a list of earlier step names")
            for a in after:
                if a not in seen:
                    raise err(f"{w}.after", f"{a!r} is not an earlier step of this template")
            if not any(k in s for k in ("duration", "first", "restart")):
                raise err(f"{w}.duration", "give 'duration', or 'first' and/or 'restart'")
            if "duration" in s and ("first" in s or "restart" in s):
                raise err(f"{w}.duration", "give either 'duration' or 'first'/'restart', not both")
            seen.append(s["name"])
        out[str(tname)] = steps
    return out


def resolve_path(name_or_path: str | Path) -> Path:
    """A scenario name (``fleet``) means ``data/scenarios/fleet.yaml``; anything else is a path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    return SCENARIO_DIR / f"{name_or_path}.yaml"


def load_scenario(name_or_path: str | Path) -> Scenario:
    """Read and validate a scenario; every profile (with every change) is checked now."""
    path = resolve_path(name_or_path)
    err = _Err(str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise err(None, f"cannot read scenario file: {exc}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise err(None, f"not valid YAML: {exc}") from None
    top = {
        "version",
        "name",
        "description",
        "calibrated_to",
        "assumptions",
        "default_jobs",
        "start",
        "arrival",
        "assignment",
        "startups",
        "defaults",
        "cohorts",
        "changes",
    }
    _check_keys(raw, top, "", err, ("version", "name", "start", "startups", "cohorts"))
    if raw["version"] != 1:
        raise err("version", f"unsupported scenario version {raw['version']!r}; expected 1")
    if not isinstance(raw["name"], str) or not raw["name"]:
        raise err("name", "must be a non-empty string")
    assumptions = raw.get("assumptions") or []
    if not isinstance(assumptions, list) or not all(isinstance(a, str) for a in assumptions):
        raise err("assumptions", "must be a list of strings")
    dj = raw.get("default_jobs", 100)
    if isinstance(dj, bool) or not isinstance(dj, int) or dj < 1:
        raise err("default_jobs", f"must be an integer >= 1, got {dj!r}")
    start = _parse_date(raw["start"], "start", err)
    arr = _check_keys(
        raw.get("arrival") or {"kind": "uniform", "window_days": 1},
        {"kind", "window_days", "spacing_min"},
        "arrival",
        err,
        ("kind",),
    )
    if arr["kind"] not in ("uniform", "sequential"):
        raise err("arrival.kind", f"must be 'uniform' or 'sequential', got {arr['kind']!r}")
    for k in ("window_days", "spacing_min"):
        v = arr.get(k, 1)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise err(f"arrival.{k}", f"must be a number > 0, got {v!r}")
    assignment = raw.get("assignment", "shuffled")
    if assignment not in ("shuffled", "listed"):
        raise err("assignment", f"must be 'shuffled' or 'listed', got {assignment!r}")
    templates = _parse_templates(raw["startups"], err)
    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise err("defaults", "must be a mapping (a profile)")

    if not isinstance(raw["cohorts"], list) or not raw["cohorts"]:
        raise err("cohorts", "must be a non-empty list")
    cohorts: list[Cohort] = []
    for i, c in enumerate(raw["cohorts"]):
        w = f"cohorts[{i}]"
        _check_keys(
            c, {"name", "weight", "gpus", "models", "model_prefix", "labels", "profile"}, w, err, ("name", "gpus")
        )
        if not isinstance(c["name"], str) or any(x.name == c["name"] for x in cohorts):
            raise err(f"{w}.name", f"cohort names must be unique strings, got {c['name']!r}")
        wt = c.get("weight", 1)
        if isinstance(wt, bool) or not isinstance(wt, (int, float)) or not wt > 0:
            raise err(f"{w}.weight", f"must be a number > 0, got {wt!r}")
        gpus = parse_dist(c["gpus"], f"{w}.gpus", err)
        models = c.get("models", 1)
        if isinstance(models, bool) or not isinstance(models, int) or models < 1:
            raise err(f"{w}.models", f"must be an integer >= 1, got {models!r}")
        labels = c.get("labels") or {}
        if not isinstance(labels, dict):
            raise err(f"{w}.labels", "must be a mapping of label name to value")
        for k, v in labels.items():
            if k in ("job_id", "gpus", "cohort") or not isinstance(v, (str, int, float, bool)):
                raise err(f"{w}.labels.{k}", "labels are scalars; 'job_id', 'gpus' and 'cohort' are reserved")
        prof = c.get("profile") or {}
        if not isinstance(prof, dict):
            raise err(f"{w}.profile", "must be a mapping")
        cohorts.append(
            Cohort(
                c["name"],
                float(wt),
                gpus,
                models,
                str(c.get("model_prefix", c["name"])),
                dict(labels),
                _deep_merge(defaults, prof),
            )
        )
    label_keys = {k for c in cohorts for k in c.labels}
    for i, c in enumerate(cohorts):
        missing = label_keys - set(c.labels)
        if missing:
            raise err(f"cohorts[{i}].labels", f"every cohort needs the same label names; missing {sorted(missing)}")

    changes: list[Change] = []
    names = [c.name for c in cohorts]
    for i, ch in enumerate(raw.get("changes") or []):
        w = f"changes[{i}]"
        _check_keys(ch, {"name", "from", "until", "cohorts", "patch", "scale", "note"}, w, err, ("name", "from"))
        targets = ch.get("cohorts", names)
        if not isinstance(targets, list) or any(t not in names for t in targets):
            raise err(f"{w}.cohorts", f"must list cohort names from: {', '.join(names)}")
        if isinstance(ch["from"], dict):
            for t in ch["from"]:
                if t not in names:
                    raise err(f"{w}.from.{t}", "not a cohort name")
            starts = {t: _parse_date(d, f"{w}.from.{t}", err) for t, d in ch["from"].items()}
        else:
            d = _parse_date(ch["from"], f"{w}.from", err)
            starts = {t: d for t in targets}
        until = _parse_date(ch["until"], f"{w}.until", err) if ch.get("until") is not None else None
        scale = ch.get("scale") or {}
        if not isinstance(scale, dict) or any(
            isinstance(f, bool) or not isinstance(f, (int, float)) or f < 0 for f in scale.values()
        ):
            raise err(f"{w}.scale", "must map dotted profile paths to factors >= 0")
        patch = ch.get("patch") or {}
        if not isinstance(patch, dict):
            raise err(f"{w}.patch", "must be a mapping (a profile fragment)")
        if not str(ch["name"]).isidentifier():
            raise err(f"{w}.name", "must be an identifier (letters, digits, underscore)")
        changes.append(Change(str(ch["name"]), starts, until, patch, {str(k): float(f) for k, f in scale.items()}))

    sc = Scenario(
        path,
        raw["name"],
        str(raw.get("description", "")).strip(),
        str(raw.get("calibrated_to", "")),
        list(assumptions),
        dj,
        start,
        arr["kind"],
        float(arr.get("window_days", 1)),
        float(arr.get("spacing_min", 1)),
        assignment,
        templates,
        cohorts,
        changes,
        raw,
    )
    # Validate every profile a job can get: each cohort alone and with each change
    # (combinations of changes re-use the same validated fields).
    for ci, c in enumerate(cohorts):
        sc.profile(ci, ())
        active = tuple(j for j, ch in enumerate(changes) if c.name in ch.starts)
        for j in active:
            sc.profile(ci, (j,))
        if active:
            sc.profile(ci, active)
    return sc
