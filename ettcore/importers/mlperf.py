"""Import MLPerf Training result logs (the MLLOG format) as ETT traces.

One result file is one job with one attempt.  The mapping, and every
assumption it rests on (each is also stated, per file, in the import report):

- **Attempt**: from the earliest ``init_start`` (``T0``) to ``run_stop``
  (``T1``), or to the last block, epoch or eval event logged after
  ``run_stop`` (the job still held its hardware: offline evaluations,
  training blocks in flight); that tail is a ``shutdown`` span (stage
  ``after run_stop: ...``), so it is the shutdown tail.  Not taken into it:
  events after a later ``init_start``/``run_start`` or dated more than the
  run's own length after ``run_stop``, and point-in-time lines (configuration
  printed by a post-processing script, a line dated a day later): they are
  reported, with how long after ``run_stop`` they are dated, as time not in
  the trace.  ``run_stop``'s ``status`` gives the end reason: ``success`` ->
  ``completed``, ``aborted`` -> ``cancelled`` (the run stopped without
  reaching its target; not an interruption).  Without ``run_stop`` the log is
  cut short: ``T1`` is the last timing event and the end reason ``failure``.
  So the wall time is the whole run including MLPerf's untimed
  initialisation; MLPerf's own score, time-to-train, is
  ``run_stop - run_start`` (the ``time_to_train_s`` label).
- **Start-up**: ``trainer_init`` from ``init_start`` to ``init_stop``;
  ``data_warmup`` from ``init_stop`` to the first training interval (this
  includes ``run_start``: the first batch is part of the timed run).
- **Training**: ``block_start``/``block_stop`` intervals as ``train`` spans;
  a log without blocks uses ``epoch_start``/``epoch_stop``.  Training cannot
  begin before ``run_start``: earlier starts are clipped to it.  The data
  cursor is the best unit the log gives, checked to grow strictly:
  ``samples_count``, else epochs (``first_epoch_num``/``epoch_count`` or
  ``epoch_num``), else the interval's ordinal.
- **Evaluation**: ``eval_start``/``eval_stop`` intervals as ``eval`` spans.
  An evaluation inside a training interval is *blocking* (training paused:
  the train span is cut around it) when the point it evaluates (its
  ``samples_count`` or ``epoch_num``) lies after the start of that training
  interval, so training must have stopped there to evaluate it.  It is
  *concurrent* when it evaluates a point at or before the interval's start
  (a model state training has already moved past): the train span is kept
  and, per the trace spec, the overlapped time stays productive.  An
  evaluation with no position is taken as blocking.  A log that records
  evaluations only by their result (``eval_accuracy``, no ``eval_start`` or
  ``eval_stop``): where training stopped before a result (an ``epoch_stop``
  or ``block_stop`` after the last training start, more than 5 ms before it),
  the evaluation is the interval from that stop to the result (inferred); a
  result inside a running training interval (or logged with the stop at the
  same instant) cannot be bounded, and a warning says its time counts as
  training (the run's ETT% is an upper bound).
- **Real-world mess**: rank prefixes (``[0] :::MLLOG``, ``host: :::MLLOG``)
  are stripped; the same event printed by several ranks (same key, value and
  metadata apart from ``file``/``lineno``) is merged into one, starts at the
  earliest copy and stops at the latest; events are ordered by timestamp,
  not by line; the key decides whether an event starts or stops an interval
  (a disagreeing ``event_type`` is corrected and reported); a start without
  a stop is closed at the next start of its kind or at ``T1``; a training
  stop without a start starts at the previous training stop or
  ``run_start``; an evaluation stop without a start is dropped; timing events
  with an impossible timestamp (zero, negative, or before ``init_start``) are
  dropped; anything after ``run_stop`` is dropped or clipped.
- **Accelerators**: ``number_of_nodes * accelerators_per_node`` from the
  log's ``:::SYSJSON`` line and the published system description
  ``<system>.json`` (see :func:`_find_system_json` for where it is looked
  for).  When both exist and disagree, the published description is used
  (it is reviewed with the submission) and the conflict is a warning, in the
  report and on ``ett import``'s output.  ``--gpus N`` (every log) or
  ``--gpus LOG=N`` replaces both.  A CPU-only system (0 accelerators per
  node) is given ``gpus = number_of_nodes`` so it still weighs in fleet
  figures; the ``accelerators`` label stays 0.

Round, submitter, system and benchmark come from the path when it follows
one of the results repositories' layouts, ``<round>/<submitter>/<system>/<benchmark>/result_N.txt``
or ``<submitter>/results/<system>/<benchmark>/result_N.txt`` (the log's
``submission_benchmark`` wins for the benchmark), else from the log's
``submission_*`` keys.  ``submission`` (round/submitter/system/benchmark) and
``result`` (N) are labels, so the runs of one submission can be grouped
(:func:`submission_spread`).  A folder given as a log is searched
recursively for ``result_*.txt``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

import polars as pl

from ettcore.causes import Signals, load_cause_map
from ettcore.errors import InputError, Problem
from ettcore.importers.frames import TraceFrames
from ettcore.importers.import_report import EXPLICIT, FileReport, ImportReport
from ettcore.trace.instants import TS_MAX_MS
from ettcore.vocabulary import Vocabulary

TOKEN = ":::MLLOG"
SYSJSON_TOKEN = ":::SYSJSON"
FAMILIES = ("init", "run", "block", "epoch", "eval")
TIMING_KEYS = {f"{f}_{e}" for f in FAMILIES for e in ("start", "stop")}
EXPECTED_TYPE = {"start": "INTERVAL_START", "stop": "INTERVAL_END"}
# metadata that names where a line was printed, not what happened
LOCATION_FIELDS = {"file", "lineno"}
# position fields (the point an interval starts/stops at, or an evaluation evaluates)
POSITION_FIELDS = ("samples_count", "epoch_num", "first_epoch_num")
MIN_VALID_MS = 946_684_800_000  # 2000-01-01: anything earlier is not a real timestamp
STATUS_TO_END_REASON = {"success": "completed", "aborted": "cancelled"}
PATH_RE = re.compile(r"^v\d+\.\d+$")
REPO_RE = re.compile(r"^(?:training_results_)?(v\d+\.\d+)$")
EPS = 1e-9
MIN_EVAL_GAP_S = 0.005  # a training stop closer than this to an evaluation's result is the same instant, not a bound


@dataclass
class Event:
    """One MLLOG line: physical line number, time (s), key, value, metadata, event type."""

    row: int
    t: float
    key: str
    value: object
    metadata: dict
    event_type: str | None
    prefixed: bool

    @property
    def family(self) -> str:
        return self.key.rsplit("_", 1)[0]

    @property
    def edge(self) -> str:
        return self.key.rsplit("_", 1)[1]

    def signature(self) -> str:
        md = {k: v for k, v in (self.metadata or {}).items() if k not in LOCATION_FIELDS}
        return json.dumps([self.key, self.value, md], sort_keys=True, default=str)

    def position(self) -> tuple[str, float] | None:
        for f in POSITION_FIELDS:
            v = (self.metadata or {}).get(f)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                return f, float(v)
        return None


@dataclass
class Interval:
    """A start/stop pair after merging and pairing; rows are the source lines behind it."""

    family: str
    start: float
    stop: float
    start_ev: Event | None
    stop_ev: Event | None
    rows: list[int] = field(default_factory=list)
    how: str | None = None  # the inference behind an interval no start/stop pair gives (None: from its events)


@dataclass
class ParsedLog:
    """What :func:`read_mllog` found in one file."""

    path: Path
    events: list[Event]
    sysjson: dict | None
    sysjson_row: int | None
    lines: int


def read_mllog(path: Path, fr: FileReport) -> ParsedLog:
    """Read the ``:::MLLOG`` and ``:::SYSJSON`` lines of one file.

    Rank prefixes before the token are stripped; a line whose JSON does not
    parse, or lacks ``key`` or a numeric ``time_ms``, is dropped and noted.
    """
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(Problem(str(path), None, None, f"cannot read MLPerf log: {exc}")) from None
    events: list[Event] = []
    sysjson = sysjson_row = None
    bad_json: list[int] = []
    bad_fields: dict[str, list[int]] = {}
    prefixed_rows: list[int] = []
    out_of_range: list[int] = []
    lines = text.splitlines()
    for row, line in enumerate(lines, start=1):
        i = line.find(TOKEN)
        if i < 0:
            j = line.find(SYSJSON_TOKEN)
            if j >= 0 and sysjson is None and not line.lstrip().startswith("+"):
                try:
                    sysjson = json.loads(line[j + len(SYSJSON_TOKEN) :].strip())
                    sysjson_row = row
                except ValueError:
                    fr.note("dropped", "unparseable :::SYSJSON line", "its JSON does not parse", [row])
            continue
        if line.lstrip().startswith("+ echo") or line.lstrip().startswith("+ "):
            continue  # a shell trace echoing a command, not a log line
        body = line[i + len(TOKEN) :].strip()
        if i > 0 and line[:i].strip():
            prefixed_rows.append(row)
        try:
            d = json.loads(body)
        except ValueError:
            bad_json.append(row)
            continue
        if not isinstance(d, dict) or not isinstance(d.get("key"), str):
            bad_fields.setdefault("key", []).append(row)
            continue
        tm = d.get("time_ms")
        if isinstance(tm, bool) or not isinstance(tm, (int, float)) or not math.isfinite(tm):
            bad_fields.setdefault("time_ms", []).append(row)
            continue
        if tm > TS_MAX_MS:
            out_of_range.append(row)
            continue
        md = d.get("metadata")
        events.append(
            Event(
                row,
                tm / 1000.0,
                d["key"],
                d.get("value"),
                md if isinstance(md, dict) else {},
                d.get("event_type"),
                i > 0 and bool(line[:i].strip()),
            )
        )
    if bad_json:
        fr.note(
            "dropped", "MLLOG line with unparseable JSON", "cannot be read (truncated or interleaved output)", bad_json
        )
    for f, rows in bad_fields.items():
        fr.note("dropped", f"MLLOG line without a valid '{f}'", "an event needs a key and a numeric time_ms", rows)
    if out_of_range:
        fr.note(
            "dropped",
            "MLLOG line dated after 2100",
            "time_ms beyond the plausible range of the trace format",
            out_of_range,
        )
    if prefixed_rows:
        fr.note(
            "info", "rank/host prefix before ':::MLLOG'", "prefix stripped; the event is read as usual", prefixed_rows
        )
    if not events:
        raise InputError(Problem(str(path), None, "key", "no ':::MLLOG' event lines found: not an MLPerf result log"))
    return ParsedLog(path, events, sysjson, sysjson_row, len(lines))


def _iso(t: float) -> str:
    """Epoch seconds as an ISO-8601 UTC string with milliseconds."""
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _first_value(events: Iterable[Event], key: str) -> object | None:
    for e in events:
        if e.key == key and e.value not in (None, ""):
            return e.value
    return None


def _path_parts(path: Path) -> dict[str, str] | None:
    """round/submitter/system/benchmark from the path, in either layout of the results repositories:

    - ``<round>/<submitter>/<system>/<benchmark>/result_N.txt`` (as bundled in ``data/mlperf``), or
    - ``<submitter>/results/<system>/<benchmark>/result_N.txt`` (as in the ``training_results_vX.Y`` repositories;
      the round from a folder above named ``vX.Y`` or ``training_results_vX.Y``, else unknown).
    """
    parts = path.resolve().parts
    for k in range(len(parts) - 5, -1, -1):
        if PATH_RE.match(parts[k]):
            if len(parts) - k == 5:
                return {"round": parts[k], "submitter": parts[k + 1], "system": parts[k + 2], "benchmark": parts[k + 3]}
    if len(parts) >= 5 and parts[-4] == "results":
        rnd = next((m.group(1) for q in reversed(parts[:-5]) if (m := REPO_RE.match(q))), None)
        return {"round": rnd, "submitter": parts[-5], "system": parts[-3], "benchmark": parts[-2]}
    return None


def _find_system_json(path: Path, parts: dict | None, systems_dir: Path | None) -> tuple[Path | None, list[str]]:
    """The system description of a log, and every place looked (for the error when there is none).

    The system's name is the path's (``parts``) or, outside both layouts, the folder two levels above the log
    (``<system>/<benchmark>/result_N.txt``).  Looked for: ``<round>/<submitter>/<system>.json`` under ``systems_dir``
    and then any ``<system>.json`` below it; without ``systems_dir``, in each ``systems`` folder above the log (the
    same two ways) and in ``<submitter>/systems/<system>.json`` of the repository layout.  Several matches that
    disagree on the accelerator count are an error.
    """
    system = parts["system"] if parts else path.resolve().parent.parent.name
    rel = Path(parts["round"] or "*") / parts["submitter"] / f"{system}.json" if parts else None
    tried: list[str] = []
    roots: list[Path] = []
    if systems_dir is not None:
        roots = [Path(systems_dir)]
    else:
        log = path.resolve()
        if parts and log.parents[2].name == "results":  # <submitter>/results/<system>/<benchmark>/result_N.txt
            cand = log.parents[3] / "systems" / f"{system}.json"
            tried.append(str(cand))
            if cand.is_file():
                return cand, tried
        roots = [a / "systems" for a in list(log.parents)[:8] if (a / "systems").is_dir()]
    for root in roots:
        if rel is not None and rel.parts[0] != "*":
            cand = root / rel
            tried.append(str(cand))
            if cand.is_file():
                return cand, tried
        tried.append(str(root / "**" / f"{system}.json"))
        found = sorted(p for p in root.rglob(f"{system}.json") if p.is_file()) if root.is_dir() else []
        if parts:  # prefer the submitter's own description
            own = [p for p in found if parts["submitter"] in p.parts]
            found = own or found
        if len(found) > 1:
            counts = {}
            for f in found:
                try:
                    d = json.loads(f.read_text(encoding="utf-8"))
                    counts[f] = (str(d.get("number_of_nodes")), str(d.get("accelerators_per_node")))
                except (OSError, ValueError):
                    counts[f] = None
            if len(set(counts.values())) > 1:
                raise InputError(
                    Problem(
                        str(path),
                        None,
                        "accelerators",
                        "several system descriptions match and disagree on the "
                        f"accelerator count: {', '.join(map(str, found))}; pass --systems DIR or --gpus N",
                    )
                )
        if found:
            return found[0], tried
    if systems_dir is None and not roots:
        tried.append(f"a 'systems' folder in any folder above {path.parent}")
    return None, tried


def _accelerators(desc: dict, source: str) -> tuple[int, int, str | None]:
    """(nodes, accelerators per node, accelerator model) from a system description."""

    def num(field_: str) -> int:
        v = desc.get(field_)
        try:
            n = int(str(v).strip())
        except (TypeError, ValueError):
            raise InputError(
                Problem(source, None, field_, f"system description needs an integer {field_}, got {v!r}")
            ) from None
        if n < 0:
            raise InputError(Problem(source, None, field_, f"{field_} must be >= 0, got {n}"))
        return n

    return num("number_of_nodes"), num("accelerators_per_node"), desc.get("accelerator_model_name")


def _merge_copies(events: list[Event], fr: FileReport) -> list[Event]:
    """Merge copies of one event printed by several ranks (same signature).

    Applies to interval events whose metadata tells them apart (a position or
    other non-location field) and to ``init``/``run`` events, which happen
    once per run.  Starts keep the earliest copy, stops the latest.
    """
    groups: dict[str, list[Event]] = {}
    order: list[str] = []
    for e in events:
        md = {k: v for k, v in e.metadata.items() if k not in LOCATION_FIELDS}
        distinct = bool(md) or e.value not in (None, "") or e.family in ("init", "run")
        sig = e.signature() if distinct else f"row:{e.row}"
        if sig not in groups:
            groups[sig] = []
            order.append(sig)
        groups[sig].append(e)
    out: list[Event] = []
    merged_rows: dict[str, list[int]] = {}
    for sig in order:
        g = groups[sig]
        if len(g) == 1:
            out.append(g[0])
            continue
        keep = min(g, key=lambda e: (e.t, e.row)) if g[0].edge == "start" else max(g, key=lambda e: (e.t, -e.row))
        out.append(keep)
        merged_rows.setdefault(g[0].key, []).extend(e.row for e in g if e is not keep)
    for key, rows in merged_rows.items():
        edge = "earliest" if key.endswith("_start") else "latest"
        fr.note(
            "merged",
            f"repeated '{key}' lines (same value and metadata)",
            f"one event printed by several ranks or twice; kept the {edge} copy",
            rows,
        )
    return out


def _pair(
    events: list[Event], family: str, t_end: float, fr: FileReport, infer_start_at: float | None
) -> list[Interval]:
    """Pair the starts and stops of one family in time order (after merging copies)."""
    evs = sorted((e for e in events if e.family == family), key=lambda e: (e.t, 0 if e.edge == "stop" else 1, e.row))
    out: list[Interval] = []
    open_: Interval | None = None
    last_stop: float | None = None
    unmatched_stop_rows: list[int] = []
    inferred_stop_rows: list[int] = []
    inferred_start_rows: list[int] = []
    for e in evs:
        if e.edge == "start":
            if open_ is not None:
                open_.stop = e.t
                inferred_stop_rows.append(open_.start_ev.row)
                out.append(open_)
            open_ = Interval(family, e.t, math.nan, e, None, [e.row])
        else:
            if open_ is not None:
                open_.stop, open_.stop_ev = e.t, e
                open_.rows.append(e.row)
                out.append(open_)
                open_ = None
                last_stop = e.t
            elif infer_start_at is not None:
                start = max(infer_start_at, last_stop if last_stop is not None else -math.inf)
                if start <= e.t:
                    out.append(Interval(family, start, e.t, None, e, [e.row]))
                    inferred_start_rows.append(e.row)
                    last_stop = e.t
                else:
                    unmatched_stop_rows.append(e.row)
            else:
                unmatched_stop_rows.append(e.row)
    if open_ is not None:
        open_.stop = max(open_.start, t_end)
        inferred_stop_rows.append(open_.start_ev.row)
        out.append(open_)
    if inferred_stop_rows:
        fr.note(
            "inferred",
            f"'{family}_start' without a matching '{family}_stop'",
            f"closed at the next '{family}_start' or at the end of the run",
            inferred_stop_rows,
        )
    if inferred_start_rows:
        fr.note(
            "inferred",
            f"'{family}_stop' without a matching '{family}_start'",
            "started at the previous training stop, or at run_start",
            inferred_start_rows,
        )
    if unmatched_stop_rows:
        fr.note(
            "dropped",
            f"'{family}_stop' without a matching '{family}_start'",
            "no start to pair it with; its length is unknown",
            unmatched_stop_rows,
        )
    return out


def _cursor_unit(train: list[Interval]) -> str:
    """``samples`` or ``epochs`` when every interval gives that position at both ends, else ``ordinal``."""

    def both(iv: Interval, unit: str) -> bool:
        s = iv.start_ev.metadata if iv.start_ev else {}
        if unit == "samples":
            t = iv.stop_ev.metadata if iv.stop_ev else {}
            return isinstance(s.get("samples_count"), (int, float)) and isinstance(t.get("samples_count"), (int, float))
        return isinstance(s.get("first_epoch_num", s.get("epoch_num")), (int, float))

    if train and all(both(iv, "samples") for iv in train):
        return "samples"
    if train and all(both(iv, "epochs") for iv in train):
        return "epochs"
    return "ordinal"


def _cursors(train: list[Interval], unit: str, fr: FileReport) -> tuple[list[tuple[float, float]], str]:
    """Build stage: (cursor_start, cursor_end) per training interval in ``unit``, and the unit used: ordinals when
    ``unit`` does not grow strictly (noted)."""
    cur: list[tuple[float, float]] = []
    if unit == "samples":
        cur = [
            (float(iv.start_ev.metadata["samples_count"]), float(iv.stop_ev.metadata["samples_count"])) for iv in train
        ]
    elif unit == "epochs":
        starts = []
        for iv in train:
            md = iv.start_ev.metadata
            starts.append(float(md.get("first_epoch_num", md.get("epoch_num"))))
        corrected: list[int] = []
        for k, iv in enumerate(train):
            md = iv.start_ev.metadata
            s = starts[k]
            if "epoch_count" in md and isinstance(md["epoch_count"], (int, float)):
                e = s + float(md["epoch_count"])
            else:
                stop_md = iv.stop_ev.metadata if iv.stop_ev else {}
                sv = stop_md.get("epoch_num")
                e = float(sv) if isinstance(sv, (int, float)) and sv > s else s + 1.0
            if k + 1 < len(train) and s < starts[k + 1] < e:
                corrected.append(iv.start_ev.row)
                e = starts[k + 1]
            cur.append((s, e))
        if corrected:
            fr.note(
                "corrected",
                "training interval's epoch_count overruns the next interval's first epoch",
                "cursor end set to the next interval's first epoch",
                corrected,
            )
    ok = all(e > s for s, e in cur) and all(cur[k + 1][0] >= cur[k][1] - EPS for k in range(len(cur) - 1))
    if unit != "ordinal" and not ok:
        fr.note(
            "corrected",
            f"cursor in {unit}",
            f"{unit} do not grow strictly from one training interval to the next; "
            "the interval ordinal is used as the cursor instead",
            [iv.rows[0] for iv in train][:5],
            len(train),
        )
        unit = "ordinal"
    if unit == "ordinal":
        cur = [(float(k), float(k + 1)) for k in range(len(train))]
    return cur, unit


def _eval_position(iv: Interval, unit: str) -> float | None:
    field_ = {"samples": ("samples_count",), "epochs": ("epoch_num", "first_epoch_num")}.get(unit, ())
    for ev in (iv.start_ev, iv.stop_ev):
        if ev is None:
            continue
        for f in field_:
            v = ev.metadata.get(f)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return float(v)
    return None


def _split_train(
    t0: float, t1: float, c0: float, c1: float, cuts: list[tuple[float, float, float | None]]
) -> list[tuple[float, float, float, float]]:
    """Cut the training interval ``[t0, t1]`` (cursor ``c0..c1``) around blocking evaluations.

    ``cuts`` are (start, end, position); the cursor at a cut is the
    evaluation's position when it lies strictly inside the remaining cursor
    range, else linear in training time (the spec's assumption).
    """
    cuts = sorted((max(a, t0), min(b, t1), p) for a, b, p in cuts if b > t0 and a < t1)
    # merge overlapping cuts
    merged: list[list] = []
    for a, b, p in cuts:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b, p])
    pieces_t: list[tuple[float, float]] = []
    t = t0
    for a, b, _ in merged:
        if a > t:
            pieces_t.append((t, a))
        t = max(t, b)
    if t < t1:
        pieces_t.append((t, t1))
    total = sum(b - a for a, b in pieces_t)
    if total <= 0:
        return []
    out = []
    c, done = c0, 0.0
    for k, (a, b) in enumerate(pieces_t):
        done += b - a
        lin = c0 + (c1 - c0) * done / total
        ce = lin
        if k + 1 < len(pieces_t):
            pos = next((p for ca, cb, p in merged if abs(ca - b) < 1e-12), None)
            if pos is not None and c < pos < c1:
                ce = pos
        else:
            ce = c1
        if ce <= c:
            ce = lin if lin > c else c + (c1 - c0) * 1e-9
        out.append((a, b, c, ce))
        c = ce
    return out


@dataclass
class _Submission:
    """Parse stage: where a log comes from (round, submitter, system: the path's, else the log's) and its benchmark."""

    round: str | None
    submitter: object
    system: object
    benchmark: str
    parts: dict[str, str] | None  # the path's parts (None: not one of the results repositories' layouts)

    @property
    def name(self) -> str:
        """round/submitter/system/benchmark, the parts known (the ``submission`` label)."""
        return "/".join(str(x) for x in (self.round, self.submitter, self.system, self.benchmark) if x)


def _submission(path: Path, ev_all: list[Event], fr: FileReport) -> _Submission:
    """Parse stage: round, submitter and system from the path (one of the results repositories' layouts), else from
    the log's ``submission_*`` keys; the benchmark from the log, else the path.  Disagreements are noted; no
    benchmark at all is an input error."""
    parts = _path_parts(path)
    benchmark = _first_value(ev_all, "submission_benchmark")
    if parts is None:
        rnd, submitter = None, _first_value(ev_all, "submission_org")
        system = _first_value(ev_all, "submission_platform")
    else:
        rnd, submitter, system = parts["round"], parts["submitter"], parts["system"]
        if benchmark is None:
            benchmark = parts["benchmark"]
            fr.note("inferred", "benchmark", "the log has no submission_benchmark; taken from the folder name")
        elif str(benchmark) != parts["benchmark"]:
            fr.note("info", "benchmark", f"log says {benchmark!r}, folder says {parts['benchmark']!r}; the log is used")
    if benchmark is None:
        raise InputError(
            Problem(
                str(path),
                None,
                "submission_benchmark",
                "no benchmark: the log has no submission_benchmark and the path is not "
                "<round>/<submitter>/<system>/<benchmark>/result_N.txt",
            )
        )
    org = _first_value(ev_all, "submission_org")
    if parts is not None and org is not None and str(org) != submitter:
        fr.note("info", "submitter", f"log's submission_org is {org!r}; the folder name {submitter!r} is used")
    return _Submission(rnd, submitter, system, str(benchmark), parts)


def _timing_events(ev_all: list[Event], fr: FileReport) -> list[Event]:
    """Parse stage: the timing events (``init``, ``run``, ``block``, ``epoch`` and ``eval`` starts and stops) with a
    possible timestamp, copies printed by several ranks merged.  The key decides start or stop (a disagreeing
    ``event_type`` is corrected); each change is noted."""
    timing = [e for e in ev_all if e.key in TIMING_KEYS]
    wrong_type: dict[tuple[str, str], list[int]] = {}
    no_type: list[int] = []
    for e in timing:
        if e.event_type is None:
            no_type.append(e.row)
        elif e.event_type != EXPECTED_TYPE[e.edge]:
            wrong_type.setdefault((e.key, e.event_type), []).append(e.row)
    for (key, et), rows in wrong_type.items():
        why = f"the key decides: taken as {EXPECTED_TYPE[key.rsplit('_', 1)[1]]}"
        fr.note("corrected", f"'{key}' logged as {et}", why, rows)
    if no_type:
        fr.note("info", "timing events without event_type", "older log format; the key decides start or stop", no_type)
    bad_time = [e.row for e in timing if e.t * 1000 < MIN_VALID_MS]
    if bad_time:
        fr.note(
            "dropped", "timing event with an impossible timestamp", "time_ms is zero or before the year 2000", bad_time
        )
    timing = [e for e in timing if e.t * 1000 >= MIN_VALID_MS]
    back = [b.row for a, b in zip(timing, timing[1:]) if b.t < a.t]
    if back:
        fr.note(
            "info",
            "timing event dated earlier than the line before it",
            "lines are out of time order (several writers, or written late and back-dated); "
            "events are ordered by timestamp",
            back,
        )
    return _merge_copies(timing, fr)


@dataclass
class _Run:
    """Parse stage: the run's instants (epoch seconds) and how it ended."""

    t0: float  # the attempt's start: the earliest init_start, else run_start
    init_stop: float
    run_start: float
    t1: float  # run_stop, else the last timing event
    status: str | None  # run_stop's status
    end_reason: str
    init_stop_logged: bool
    stopped: bool  # run_stop is logged (else the log is cut short)


def _run_start(timing: list[Event], src: str, fr: FileReport) -> tuple[list[Event], dict[str, list[Event]], float]:
    """Parse stage: the run's start T0 (the earliest init_start, else run_start) and its init_stop, run_start and
    run_stop events, each in time order (extra ones noted).  Timing events dated before T0 are dropped (noted).
    Returns (the timing events kept, those events by key, T0)."""

    def times(key: str) -> list[Event]:
        return sorted((e for e in timing if e.key == key), key=lambda e: (e.t, e.row))

    init_starts = times("init_start")
    marks = {key: times(key) for key in ("init_stop", "run_start", "run_stop")}
    if not init_starts and not marks["run_start"]:
        raise InputError(
            Problem(src, None, "init_start", "neither init_start nor run_start is logged: the run's start is unknown")
        )
    if init_starts:
        t0 = init_starts[0].t
    else:
        t0 = marks["run_start"][0].t
        fr.note("inferred", "job start", "no init_start; the attempt starts at run_start")
    for name, evs in marks.items():
        if len(evs) > 1:
            why = f"a run has one {name}; the earliest is used"
            fr.note("dropped", f"extra '{name}'", why, [e.row for e in evs[1:]])
    early = [e.row for e in timing if e.t < t0 - EPS]
    if early:
        fr.note("dropped", "timing event dated before init_start", "back-dated: it cannot belong to this run", early)
        timing = [e for e in timing if e.t >= t0 - EPS]
        marks = {key: [e for e in evs if e.t >= t0] for key, evs in marks.items()}
    return timing, marks, t0


def _run_end(timing: list[Event], run_stops: list[Event], fr: FileReport) -> tuple[float, str | None, str]:
    """Parse stage: (T1, run_stop's status, end reason): run_stop's time, its status success -> completed, aborted
    -> cancelled, anything else completed (noted); without run_stop the log is cut short: its last timing event, a
    failure (noted)."""
    if not run_stops:
        fr.note(
            "inferred",
            "run end",
            "no run_stop: the log is cut short; the attempt ends at its last timing event, as a failure",
        )
        return max(e.t for e in timing), None, "failure"
    status = str(run_stops[0].metadata.get("status", "")).lower() or None
    end_reason = STATUS_TO_END_REASON.get(status or "", None)
    if end_reason is None:
        end_reason = "completed"
        why = f"run_stop status {status!r} is not success/aborted; taken as completed"
        fr.note("inferred", "end reason", why, [run_stops[0].row])
    return run_stops[0].t, status, end_reason


def _run(timing: list[Event], src: str, fr: FileReport) -> tuple[list[Event], _Run]:
    """Parse stage: the run's instants: T0 (:func:`_run_start`); init_stop and run_start, each taken from the other
    when not logged, init_stop no later than run_start (noted); T1 and the end reason (:func:`_run_end`).  A run_stop
    before run_start is an input error.  Returns (the timing events kept, the run)."""
    timing, marks, t0 = _run_start(timing, src, fr)
    init_stops, run_starts, run_stops = marks["init_stop"], marks["run_start"], marks["run_stop"]
    run_start = run_starts[0].t if run_starts else None
    init_stop = init_stops[0].t if init_stops else None
    if init_stop is None:
        init_stop = run_start if run_start is not None else t0
        fr.note("inferred", "init_stop", "not logged; taken as run_start")
    if run_start is None:
        run_start = init_stop
        fr.note("inferred", "run_start", "not logged; taken as init_stop")
    if init_stop > run_start:
        fr.note(
            "corrected",
            "init_stop after run_start",
            "initialisation cannot end after the timed run starts; init_stop set to run_start",
            [init_stops[0].row] if init_stops else None,
        )
        init_stop = run_start
    t1, status, end_reason = _run_end(timing, run_stops, fr)
    if t1 < run_start:
        raise InputError(
            Problem(src, run_stops[0].row if run_stops else None, "run_stop", "run_stop is before run_start")
        )
    return timing, _Run(t0, init_stop, run_start, t1, status, end_reason, bool(init_stops), bool(run_stops))


class _Tail(NamedTuple):
    """Build stage: the attempt's end (run_stop, or the last interval event logged after it: the job still held its
    hardware), the families logged in that tail, and the lines dated later (time not in the trace)."""

    end: float
    families: set[str]
    late_lines: list


def _tail(timing: list[Event], ev_all: list[Event], run: _Run, fr: FileReport) -> _Tail:
    """Build stage: the run's tail after run_stop (:func:`_after_stop`); none for a log without run_stop."""
    if not run.stopped:
        return _Tail(run.t1, set(), [])
    return _Tail(*_after_stop(timing, ev_all, run.t0, run.t1, fr))


@dataclass
class _Intervals:
    """Build stage: the run's training intervals (blocks, else epochs) and evaluations."""

    train_family: str
    train: list[Interval]
    evals: list[Interval]
    logged_evals: int  # evaluation intervals logged that start before run_stop
    results: int  # evaluation results logged without any eval_start/eval_stop
    bounded: int  # of those, the evaluations bounded by a training stop


def _intervals(timing: list[Event], ev_all: list[Event], run: _Run, fr: FileReport) -> _Intervals:
    """Build stage: starts and stops paired into intervals (:func:`_pair`): training (blocks; epochs when the log has
    no blocks) and evaluations, with those a log gives only by their result (:func:`_evaluations_without_intervals`).
    """
    block_iv = _pair(timing, "block", run.t1, fr, infer_start_at=run.run_start)
    epoch_iv = _pair(timing, "epoch", run.t1, fr, infer_start_at=run.run_start)
    eval_iv = _pair(timing, "eval", run.t1, fr, infer_start_at=None)
    if block_iv:
        train_family, train = "block", block_iv
        if epoch_iv:
            why = "the log has blocks; blocks are the train spans, epochs are not used"
            fr.note("info", "epoch intervals", why, count=len(epoch_iv))
    else:
        train_family, train = "epoch", epoch_iv
    fr.facts["train_intervals"] = f"{len(train)} x {train_family}"
    logged = len([iv for iv in eval_iv if iv.start < run.t1])
    results, bounded = _evaluations_without_intervals(timing, ev_all, eval_iv, run.run_start, run.t1, fr)
    return _Intervals(train_family, train, eval_iv + bounded, logged, results, len(bounded))


def _clip_to_run(ivs: _Intervals, run: _Run, t_end: float, fr: FileReport) -> _Intervals:
    """Build stage: training clipped to [run_start, run_stop], evaluations cut at run_stop; intervals starting at or
    after run_stop are left out (their time is the shutdown tail when the job went on logging, ``t_end`` > run_stop).
    Each change noted."""
    t1 = run.t1
    after = [iv.rows[0] for iv in ivs.train + ivs.evals if iv.start >= t1]
    if after and t_end > t1:
        fr.note(
            "inferred",
            "interval starting at or after run_stop",
            "the run's clock stopped at run_stop, the job went on: "
            "kept as the shutdown tail (a shutdown span from run_stop to the last interval event)",
            after,
        )
    elif after:
        why = "not taken as part of the run (see the time accounting)"
        fr.note("dropped", "interval starting at or after run_stop", why, after)
    train = [iv for iv in ivs.train if iv.start < t1]
    evals = [iv for iv in ivs.evals if iv.start < t1]
    clipped_end = [iv.rows[0] for iv in train + evals if iv.stop > t1]
    if clipped_end:
        why = "cut at run_stop" + (" (the rest is the shutdown tail)" if t_end > t1 else "")
        fr.note("clipped", "interval running past run_stop", why, clipped_end)
    early_train = [iv.rows[0] for iv in train if iv.start < run.run_start]
    if early_train:
        why = "training cannot start before the timed run; started at run_start"
        fr.note("clipped", f"'{ivs.train_family}_start' before run_start", why, early_train)
    for iv in train:
        iv.start, iv.stop = max(iv.start, run.run_start), min(iv.stop, t1)
    for iv in evals:
        iv.stop = min(iv.stop, t1)
    return replace(ivs, train=_without_overlap([iv for iv in train if iv.stop > iv.start], fr), evals=evals)


def _without_overlap(train: list[Interval], fr: FileReport) -> list[Interval]:
    """Build stage: training intervals in time order, each started no earlier than the previous one's stop
    (noted); those left empty are dropped."""
    train.sort(key=lambda iv: iv.start)
    overlap = []
    for k in range(1, len(train)):
        if train[k].start < train[k - 1].stop:
            overlap.append(train[k].rows[0])
            train[k].start = train[k - 1].stop
    if overlap:
        why = "train spans of a job cannot overlap; started at the previous stop"
        fr.note("clipped", "training interval overlapping the previous one", why, overlap)
    return [iv for iv in train if iv.stop > iv.start]


def _span(
    job_id: str, phase: str, start: float, end: float, stage: str | None, how: str, cursor: tuple = (None, None)
) -> dict:
    """A span row of the run's one attempt; ``how``: :data:`EXPLICIT` or the inference behind it."""
    return dict(
        job_id=job_id,
        attempt=0,
        phase=phase,
        start=start,
        end=end,
        stage=stage,
        cursor_start=cursor[0],
        cursor_end=cursor[1],
        how=how,
    )


def _eval_spans(
    job_id: str, ivs: _Intervals, cursors: list[tuple[float, float]], unit: str, fr: FileReport
) -> tuple[list[dict], list[list[tuple]], tuple[int, int]]:
    """Build stage: the ``eval`` spans, and for each training interval the evaluations that block it (start, end,
    position).  An evaluation of a point after the interval's start (or of no known point) paused training: it
    blocks; one of a point training had passed ran beside it (concurrent).  Both counted and noted; returns (spans,
    cuts by training interval, (blocking, concurrent))."""
    spans: list[dict] = []
    cuts: list[list[tuple]] = [[] for _ in ivs.train]
    n_block = n_conc = 0
    for iv in ivs.evals:
        if iv.stop <= iv.start:
            continue
        spans.append(_span(job_id, "eval", iv.start, iv.stop, None, _how(iv, "evaluation")))
        pos = _eval_position(iv, unit)
        for k, tv in enumerate(ivs.train):
            if iv.stop <= tv.start or iv.start >= tv.stop:
                continue
            if pos is not None and pos <= cursors[k][0] + EPS:
                n_conc += 1
            else:
                cuts[k].append((iv.start, iv.stop, pos))
                n_block += 1
    if n_block:
        fr.note(
            "inferred",
            "evaluation inside a training interval: blocking",
            "it evaluates a point after the interval's start (or gives no position), so training paused: "
            "the train span is cut around it",
            count=n_block,
        )
    if n_conc:
        fr.note(
            "inferred",
            "evaluation inside a training interval: concurrent",
            "it evaluates a point training had already passed, so training went on; "
            "the overlap stays productive (trace spec, section 5)",
            count=n_conc,
        )
    return spans, cuts, (n_block, n_conc)


def _train_spans(
    job_id: str, ivs: _Intervals, cursors: list[tuple[float, float]], cuts: list[list[tuple]]
) -> list[dict]:
    """Build stage: a ``train`` span (stage: the family) for each piece of each training interval outside its
    blocking evaluations, the cursor shared out by :func:`_split_train`."""
    return [
        _span(job_id, "train", a, b, ivs.train_family, _how(tv, "training interval"), (c0, c1))
        for k, tv in enumerate(ivs.train)
        for a, b, c0, c1 in _split_train(tv.start, tv.stop, cursors[k][0], cursors[k][1], cuts[k])
    ]


def _startup_and_tail_spans(job_id: str, run: _Run, ivs: _Intervals, tail: _Tail) -> list[dict]:
    """Build stage: ``trainer_init`` (init_start to init_stop), ``data_warmup`` (init_stop to the first training
    interval) and the ``shutdown`` tail after run_stop."""
    how = EXPLICIT if run.init_stop_logged else "initialisation with an inferred end (no init_stop: run_start)"
    spans = [_span(job_id, "trainer_init", run.t0, run.init_stop, "init_start..init_stop", how)]
    first_train = min((iv.start for iv in ivs.train), default=run.t1)
    if first_train > run.init_stop:
        how = "init_stop to the first training interval, taken as data warm-up (the log does not say what ran)"
        stage = "init_stop..first_" + ivs.train_family
        spans.append(_span(job_id, "data_warmup", run.init_stop, first_train, stage, how))
    if tail.end > run.t1:
        families = ", ".join(sorted(tail.families))
        how = "after run_stop: the job went on logging " + families + " intervals (kept as the shutdown tail)"
        spans.append(_span(job_id, "shutdown", run.t1, tail.end, "after run_stop: " + families, how))
    return spans


def _job_row(
    path: Path,
    job_id: str,
    sub: _Submission,
    run: _Run,
    tail: _Tail,
    ev_all: list[Event],
    acc: _Accelerators,
    unit: str,
) -> dict:
    """Build stage: the ``jobs`` row of the run, with its labels (MLPerf's time to train, the submission, ...)."""
    m = re.fullmatch(r"result_(\d+)", path.stem)
    return dict(
        job_id=job_id,
        model=sub.benchmark,
        gpus=int(acc.gpus),
        benchmark=sub.benchmark,
        round=sub.round,
        submitter=sub.submitter,
        system=sub.system,
        division=_first_value(ev_all, "submission_division"),
        accelerators=int(acc.accelerators),
        nodes=None if acc.nodes is None else int(acc.nodes),
        accelerators_per_node=None if acc.per_node is None else int(acc.per_node),
        accelerator_model=acc.model,
        accelerators_source=acc.source,
        run_status=run.status,
        time_to_train_s=(run.t1 - run.run_start) if run.stopped else None,
        init_s=run.init_stop - run.t0,
        after_run_stop_s=tail.end - run.t1,
        cursor_unit=unit,
        submission=sub.name,
        result=int(m.group(1)) if m else None,
        source_file=path.name,
        synthetic=False,
    )


def _note_run(
    fr: FileReport,
    job_id: str,
    sub: _Submission,
    run: _Run,
    tail: _Tail,
    ivs: _Intervals,
    acc: _Accelerators,
    evals_blocking: tuple[int, int],
    attempt: dict,
    spans: list[dict],
) -> None:
    """Note stage: the run's facts (submission, accelerators, instants, evaluations), the lines dated after its end
    (time not in the trace) and its time accounting."""
    fr.job_ids.append(job_id)
    n_block, n_conc = evals_blocking
    evals = f"{ivs.logged_evals} logged intervals ({n_block} blocking overlaps, {n_conc} concurrent overlaps)"
    if ivs.results:
        evals += (
            f"; {ivs.results} results (eval_accuracy) without eval_start/eval_stop: {ivs.bounded} bounded by "
            f"training stops, {ivs.results - ivs.bounded} inside training (counted as training)"
        )
    if acc.nodes is not None:
        accelerators = f"{acc.accelerators} ({acc.nodes} nodes x {acc.per_node}, from {acc.source})"
    else:
        accelerators = f"{acc.accelerators} (from {acc.source})"
    fr.facts.update(
        {
            "job_id": job_id,
            "benchmark": sub.benchmark,
            "round": sub.round,
            "submitter": sub.submitter,
            "system": sub.system,
            "accelerators": accelerators,
            "init_start": _iso(run.t0),
            "init_stop": _iso(run.init_stop),
            "run_start": _iso(run.run_start),
            "run_stop": _iso(run.t1) if run.stopped else None,
            "wall_s (init_start to the attempt's end)": round(tail.end - run.t0, 3),
            "after_run_stop_s": round(tail.end - run.t1, 3),
            "time_to_train_s (run_stop - run_start)": round(run.t1 - run.run_start, 3) if run.stopped else None,
            "run_status": run.status,
            "end_reason": run.end_reason,
            "evaluations": evals,
        }
    )
    for category, what, seconds, rows in tail.late_lines:
        fr.outside(job_id, category, what, seconds, rows)
    fr.account([attempt], spans)


def import_log(
    path: str | Path, systems_dir: str | Path | None, fr: FileReport, gpus_override: int | None = None
) -> tuple[dict, list[dict], dict]:
    """Import one result log: returns (attempt row, span rows, jobs row) with times in epoch seconds.

    Parse (:func:`read_mllog`, :func:`_submission`, :func:`_timing_events`, :func:`_run`), build (:func:`_tail`,
    :func:`_intervals`, :func:`_clip_to_run`, :func:`_cursors`, :func:`_eval_spans`, :func:`_train_spans`,
    :func:`_startup_and_tail_spans`, :func:`_accelerator_count`, :func:`_job_row`) and note (:func:`_note_run`);
    every stage notes what it dropped, merged, inferred, corrected or clipped in ``fr``, the file's note collector.
    """
    path = Path(path)
    log = read_mllog(path, fr)
    sub = _submission(path, log.events, fr)
    timing, run = _run(_timing_events(log.events, fr), str(path), fr)
    tail = _tail(timing, log.events, run, fr)
    ivs = _clip_to_run(_intervals(timing, log.events, run, fr), run, tail.end, fr)
    cursors, unit = _cursors(ivs.train, _cursor_unit(ivs.train), fr)
    fr.facts["cursor_unit"] = unit
    job_id = f"{sub.name}/{path.stem}"
    spans, cuts, evals_blocking = _eval_spans(job_id, ivs, cursors, unit, fr)
    spans += _train_spans(job_id, ivs, cursors, cuts) + _startup_and_tail_spans(job_id, run, ivs, tail)
    spans = [sp for sp in spans if sp["end"] > sp["start"]]
    acc = _accelerator_count(path, str(path), log, sub.parts, systems_dir, gpus_override, fr)
    attempt = dict(job_id=job_id, attempt=0, start=run.t0, end=tail.end, end_reason=run.end_reason)
    _note_run(fr, job_id, sub, run, tail, ivs, acc, evals_blocking, attempt, spans)
    return attempt, spans, _job_row(path, job_id, sub, run, tail, log.events, acc, unit)


def _how(iv: Interval, what: str) -> str:
    """:data:`EXPLICIT` for an interval both of whose ends are logged, else the inference behind it."""
    if iv.how is not None:
        return iv.how
    if iv.start_ev is not None and iv.stop_ev is not None:
        return EXPLICIT
    inferred = (
        "start (the previous stop or run_start)" if iv.start_ev is None else "stop (the next start or the run end)"
    )
    return f"{what} with an inferred {inferred}"


def _after_stop(
    timing: list[Event], ev_all: list[Event], t0: float, t1: float, fr: FileReport
) -> tuple[float, set[str], list]:
    """The end of the run's tail after run_stop ``t1``, and the families logged in it.

    Interval events (block, epoch, eval) after run_stop show the job still working, with its hardware: the run's
    attempt lasts to the last of them.  Not taken: events after a later init_start or run_start (another run), or
    dated more than the run's own length after run_stop; and point-in-time events (configuration lines printed by a
    post-processing script, a line dated a day later), which only say when a line was written.  Everything logged
    after the tail is reported as time after the stop, not in the wall time.
    """
    later_run = min(
        (e.t for e in timing if e.family in ("init", "run") and e.edge == "start" and e.t > t1 + EPS), default=math.inf
    )
    limit = min(later_run, t1 + (t1 - t0))
    late = [e for e in timing if e.family in ("block", "epoch", "eval") and e.t > t1 + EPS]
    kept = [e for e in late if e.t < limit]
    t_end = max([t1] + [e.t for e in kept])
    for e in late:
        if e.t >= limit:
            why = (
                "after a later init_start/run_start"
                if e.t >= later_run
                else "more than the run's own length after run_stop"
            )
            fr.note("dropped", "interval event long after run_stop", f"{why}: not taken as part of this run", [e.row])
    beyond = [e for e in ev_all if e.t > t_end + EPS]
    late_lines = []
    if beyond:
        worst = max(beyond, key=lambda e: e.t)
        fr.note(
            "info",
            "lines dated after the run's end",
            f"up to {worst.t - t1:,.1f} s after run_stop; point events (or interval events not "
            "taken) only say when a line was written: not in the wall time",
            [e.row for e in beyond],
        )
        late_lines = [
            (
                "after stop",
                f"{len(beyond)} line(s) dated after the run's end, the latest this long after run_stop",
                worst.t - t1,
                [e.row for e in beyond],
            )
        ]
    return t_end, {e.family for e in kept}, late_lines


def _evaluations_without_intervals(
    timing: list[Event], ev_all: list[Event], eval_iv: list[Interval], run_start: float, t1: float, fr: FileReport
) -> tuple[int, list[Interval]]:
    """Evaluations a log records only by their result (``eval_accuracy``), with no eval_start/eval_stop at all.

    An evaluation's result is logged when it ends.  Where training had stopped before it (an epoch_stop or
    block_stop after the last epoch/block start before the result), the evaluation is bounded by that stop and the
    result: an ``eval`` interval, inferred.  Otherwise (the result falls inside a running training interval, or
    the stop is within :data:`MIN_EVAL_GAP_S` of it: two log lines of one instant, too short to hold an
    evaluation, so it ran elsewhere) its time cannot be told from training: a warning, as ETT% then counts it as
    training.  Returns (results, bounded).
    """
    if eval_iv or any(e.family == "eval" for e in timing):
        return 0, []
    accs = [
        e
        for e in ev_all
        if e.key == "eval_accuracy" and e.t * 1000 >= MIN_VALID_MS and run_start - EPS <= e.t <= t1 + EPS
    ]
    if not accs:
        return 0, []
    accs = _merge_copies(accs, fr)
    train_ev = sorted((e for e in timing if e.family in ("block", "epoch")), key=lambda e: e.t)
    bounded, inside = [], []
    for acc in sorted(accs, key=lambda e: e.t):
        starts = [e.t for e in train_ev if e.edge == "start" and e.t < acc.t - EPS]
        last_start = max(starts, default=run_start)
        stops = [e.t for e in train_ev if e.edge == "stop" and last_start < e.t <= acc.t + EPS]
        if stops and min(stops) < acc.t - MIN_EVAL_GAP_S:
            bounded.append(
                Interval(
                    "eval",
                    min(stops),
                    acc.t,
                    None,
                    acc,
                    [acc.row],
                    how="evaluation bounded by the last training stop before its result (eval_accuracy) and the result",
                )
            )
        else:
            inside.append(acc.row)
    if bounded:
        fr.note(
            "inferred",
            "evaluation without eval_start/eval_stop, bounded",
            "its result (eval_accuracy) follows a training stop: the evaluation is taken to run from that stop to "
            "the result",
            [iv.rows[0] for iv in bounded],
        )
    if inside:
        fr.note(
            "warning",
            "evaluation results (eval_accuracy) without eval_start/eval_stop inside training",
            "the log does not say how long these evaluations took, and no training stop bounds them: their time "
            "counts as training, so this run's ETT% is an upper bound",
            inside,
        )
    return len(accs), bounded


class _Accelerators(NamedTuple):
    """The accelerators of one run, and where the count comes from."""

    nodes: int | None
    per_node: int | None
    model: str | None
    source: str
    accelerators: int
    gpus: int  # the run's weight


def _logged_accelerators(
    path: Path, src: str, log: ParsedLog, parts: dict | None, systems_dir, fr: FileReport
) -> tuple[tuple, list[str]]:
    """Parse stage: ((nodes, accelerators per node, model, source), every place the system description was looked
    for), from the log's :::SYSJSON line and the published system description (all None when neither gives them).
    When both exist and disagree, the published description (reviewed with the submission) is used and the
    conflict is a warning."""
    nodes = per_node = acc_model = acc_src = None
    if log.sysjson is not None:
        try:
            nodes, per_node, acc_model = _accelerators(log.sysjson, f"{src}, line {log.sysjson_row} (:::SYSJSON)")
            acc_src = "SYSJSON"
        except InputError as exc:
            fr.note("dropped", ":::SYSJSON line", f"unusable: {exc}", [log.sysjson_row])
    sys_file, tried = _find_system_json(path, parts, Path(systems_dir) if systems_dir is not None else None)
    if sys_file is not None:
        try:
            desc = json.loads(sys_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(
                Problem(str(sys_file), None, None, f"system description is not valid JSON: {exc}")
            ) from None
        d_nodes, d_per, d_model = _accelerators(desc, str(sys_file))
        if acc_src is None:
            nodes, per_node, acc_model, acc_src = d_nodes, d_per, d_model, f"system description {sys_file.name}"
        elif (d_nodes, d_per) != (nodes, per_node):
            fr.note(
                "warning",
                "accelerators",
                f"SYSJSON says {nodes}x{per_node}, {sys_file.name} says {d_nodes}x{d_per}: the published system "
                f"description is used ({d_nodes * d_per} accelerators); pass --gpus to override",
                [log.sysjson_row],
            )
            nodes, per_node, acc_model, acc_src = (
                d_nodes,
                d_per,
                d_model or acc_model,
                f"system description {sys_file.name}",
            )
    return (nodes, per_node, acc_model, acc_src), tried


def _accelerator_count(
    path: Path, src: str, log: ParsedLog, parts: dict | None, systems_dir, gpus_override: int | None, fr: FileReport
) -> _Accelerators:
    """Build stage: (nodes, accelerators per node, model, source, accelerators, gpus) of one log.

    The count the log and its system description give (:func:`_logged_accelerators`); ``gpus_override`` (--gpus)
    replaces it.  A CPU-only system (0 accelerators per node) weighs as its number of nodes.  No count at all is an
    input error listing every place looked.
    """
    (nodes, per_node, acc_model, acc_src), tried = _logged_accelerators(path, src, log, parts, systems_dir, fr)
    if gpus_override is not None:
        before = (
            f"{nodes * per_node} from {acc_src}"
            if acc_src is not None
            else "no accelerator count in the log or a system description"
        )
        fr.note("inferred", "gpus", f"--gpus {gpus_override} given: used instead of {before}")
        return _Accelerators(nodes, per_node, acc_model, "--gpus", gpus_override, gpus_override)
    if acc_src is None:
        raise InputError(
            Problem(
                src,
                log.sysjson_row,
                "accelerators",
                "no :::SYSJSON line and no system description found (tried: "
                + "; ".join(tried)
                + "); pass --systems DIR holding <round>/<submitter>/<system>.json, or --gpus N",
            )
        )
    accelerators = nodes * per_node
    gpus = accelerators
    if accelerators == 0:
        gpus = max(1, nodes)
        fr.note(
            "inferred",
            "gpus",
            f"CPU-only system (0 accelerators per node); gpus set to number_of_nodes = {gpus} for weighting",
        )
    return _Accelerators(nodes, per_node, acc_model, acc_src, accelerators, gpus)


def expand_logs(paths: Sequence[str | Path]) -> list[Path]:
    """The log files named by ``paths``: a file as it is, a folder searched recursively for ``result_*.txt`` (its
    ``systems`` folders skipped), in sorted order; a folder without any is an error naming it."""
    out: list[Path] = []
    problems = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(
                f for f in p.rglob("result_*.txt") if f.is_file() and "systems" not in f.relative_to(p).parts
            )
            if not found:
                problems.append(
                    Problem(
                        str(p), None, None, "folder holds no MLPerf result log (result_*.txt, searched recursively)"
                    )
                )
            out += found
        else:
            out.append(p)
    if problems:
        raise InputError(problems)
    return list(dict.fromkeys(out))


def import_logs(
    paths: Sequence[str | Path],
    systems_dir: str | Path | None = None,
    gpus: int | dict[str, int] | None = None,
    cause_mapping: str | Path | None = None,
    causes_file: str | Path | None = None,
    vocabulary: Vocabulary | None = None,
) -> tuple[TraceFrames, ImportReport]:
    """Import MLPerf result logs: one job a file (a folder: every ``result_*.txt`` below it).

    Returns the trace frames and the import report.  ``gpus`` overrides the accelerator count: one number for every
    log, or ``{log path: number}`` for some (``--gpus N`` / ``--gpus LOG=N``).

    The ``jobs`` frame carries what a notebook on the runs needs: ``benchmark``,
    ``round``, ``submitter``, ``system``, ``accelerators`` (and ``gpus``, the
    weight), ``accelerator_model``, ``run_status``, ``time_to_train_s``
    (MLPerf's score, ``run_stop - run_start``), ``init_s``, ``after_run_stop_s``,
    ``submission`` (round/submitter/system/benchmark: the runs of one submission)
    and ``result`` (N of ``result_N.txt``).  Raises
    :class:`~ettcore.errors.InputError` for a file that cannot be a run
    (unreadable, no events, no start, no accelerator count) or when two files
    give the same job id.

    A run's cause, when it is an interruption (a log cut short: no ``run_stop``), is decided by the cause mapping
    (``cause_mapping``: a user's rules before the shipped ones, docs/causes.md), the ``run_stop`` status as its
    reason text; a log says nothing of why it stopped, so the shipped rules give ``unknown``.  ``causes_file`` (a
    user's causes file) or ``vocabulary`` (one read before): the causes the mapping's rules may name beside the
    package's (:func:`ettcore.causes.load_cause_map`).
    """
    for n in [gpus] if not isinstance(gpus, dict) else gpus.values():
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise InputError(Problem("--gpus", None, "gpus", f"must be an integer >= 1, got {n!r}"))
    logs = expand_logs(paths)
    if isinstance(gpus, dict):
        by_path = {Path(k).resolve(): v for k, v in gpus.items()}
        unknown = [k for k in gpus if Path(k).resolve() not in {p.resolve() for p in logs}]
        if unknown:
            raise InputError([Problem("--gpus", None, "gpus", f"{k} is not one of the logs imported") for k in unknown])
    cause_map = load_cause_map(cause_mapping, causes_file, vocabulary)
    report = ImportReport("mlperf")
    attempts, spans, jobs = [], [], []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for p in logs:
        fr = report.add_file(str(p))
        override = by_path.get(p.resolve()) if isinstance(gpus, dict) else gpus
        try:
            a, s, j = import_log(p, systems_dir, fr, override)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if j["job_id"] in seen:
            problems.append(
                Problem(str(p), None, "job_id", f"job id {j['job_id']!r} already imported from {seen[j['job_id']]}")
            )
            continue
        seen[j["job_id"]] = str(p)
        a["cause"] = cause_map.classify(Signals("mlperf", a["end_reason"], reason=j.get("run_status")))
        if a["cause"] is not None:
            fr.facts["interruption cause"] = a["cause"]
        attempts.append(a)
        spans.extend(s)
        jobs.append(j)
    if problems:
        raise InputError(problems)
    metadata = {
        "synthetic": False,
        "source": "MLPerf Training result logs (MLLOG)",
        "importer": "ettcore.importers.mlperf",
        "source_files": [str(p) for p in logs],
    }
    return TraceFrames.from_rows(attempts, spans, jobs, metadata), report


def submission_spread(summary: pl.DataFrame) -> pl.DataFrame:
    """One row a submission with several runs (the ``submission`` label of :func:`import_logs`): how many runs, and
    the smallest, median and largest ETT%, time to train and wall time, with the spread (max - min)."""
    runs = summary.filter(pl.col("submission").is_not_null())
    return (
        runs.group_by("submission", "benchmark")
        .agg(
            pl.len().alias("runs"),
            pl.col("gpus").first(),
            pl.col("ett_pct").min().alias("ett_min_pct"),
            pl.col("ett_pct").median().alias("ett_median_pct"),
            pl.col("ett_pct").max().alias("ett_max_pct"),
            pl.col("time_to_train_s").min().alias("time_to_train_min_s"),
            pl.col("time_to_train_s").median().alias("time_to_train_median_s"),
            pl.col("time_to_train_s").max().alias("time_to_train_max_s"),
            pl.col("wall_s").min().alias("wall_min_s"),
            pl.col("wall_s").max().alias("wall_max_s"),
        )
        .filter(pl.col("runs") > 1)
        .with_columns(
            (pl.col("ett_max_pct") - pl.col("ett_min_pct")).alias("ett_spread_pct"),
            (pl.col("time_to_train_max_s") - pl.col("time_to_train_min_s")).alias("time_to_train_spread_s"),
        )
        .sort("submission")
    )
