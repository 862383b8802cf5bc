"""The project's Prometheus alerting rules (``ett export prometheus-rules``; shipped as
``tools/monitoring/rules/ett.rules.yml``, which is this module's output with the defaults).

:data:`THRESHOLDS` is the one list of the rules' parameters: each has a command-line flag, a documented default and
a range; a value out of range is an :class:`~ettcore.errors.InputError` naming the flag.  :data:`RULES` is the one
list of the rules; each names its runbook section (``docs/runbook.md``).  Label values never reach the rule text: the
rules match metric names and fixed label names only, and the annotations print label values through Prometheus'
templates at evaluation time, so a hostile job id cannot break a rule (``tests/test_alert_rules.py`` runs them with
one through ``promtool test rules``).

The metrics are those of ``docs/prometheus.md``; the slow-job rule reads ``ett_job_slow_seconds`` (slow time counted
after the fact); the crash-loop rule reads ``ett_job_crash_loop_restarts`` (the crash loop a job is in now,
:func:`ettcore.metric.restarts.open_crash_loops`); the restart-storm rule reads
``ett_fleet_restart_storm_interruptions_total`` by the ``--storm-by`` label (the storms the export found); the
hung-job rule reads the live hang detection's ``ett_job_hung`` (built on the ``hangs`` branch); the stale-export rule
reads node_exporter's ``node_textfile_mtime_seconds``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

import yaml

from ettcore.errors import InputError, Problem

_DURATION = re.compile(r"^(\d+)(s|m|h|d)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_TEXTFILE = re.compile(r"^[A-Za-z0-9_.-]+\.prom$")


def duration_seconds(text: str) -> int | None:
    """A Prometheus duration of one unit (``30s``, ``5m``, ``6h``, ``1d``) in seconds, None when not one."""
    m = _DURATION.match(str(text))
    return int(m.group(1)) * _UNIT_S[m.group(2)] if m else None


@dataclass(frozen=True)
class Threshold:
    """One parameter of the rules: its name (``--<name>`` with dashes), default, what it means and its check."""

    name: str
    default: Any
    help: str
    check: Callable[[Any], str | None]  # an error message, or None when valid
    kind: type = float

    @property
    def flag(self) -> str:
        return "--" + self.name.rstrip("_").replace("_", "-")


def _ratio(v: Any) -> str | None:
    return None if isinstance(v, float) and 0 < v < 1 else "an ETT ratio strictly between 0 and 1 (0.8 = 80%)"


def _positive(limit: float) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        ok = isinstance(v, float) and math.isfinite(v) and 0 < v <= limit
        return None if ok else f"a number > 0 and <= {limit:g}"

    return check


def _duration(lo_s: int, hi_s: int) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        s = duration_seconds(v)
        ok = s is not None and lo_s <= s <= hi_s
        return None if ok else f"a duration such as 30s, 5m, 6h or 1d, from {lo_s} s to {hi_s // 86400} d"

    return check


def _for(v: Any) -> str | None:
    return None if v == "0s" or _duration(1, 86400)(v) is None else "a duration from 0s to 1d (5m)"


def _textfile(v: Any) -> str | None:
    return None if isinstance(v, str) and _TEXTFILE.match(v) else "a file name ending in .prom (letters, digits, ._-)"


def _label_name(v: Any) -> str | None:
    ok = isinstance(v, str) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", v) and not v.startswith("__")
    return None if ok else "a Prometheus label name (letters, digits and _, not first a digit nor __)"


def _url(v: Any) -> str | None:
    return None if isinstance(v, str) and v and not any(c in v for c in "\n\r\"'{}") else "a URL or path"


THRESHOLDS: tuple[Threshold, ...] = (
    Threshold("ett_below", 0.8, "fleet or model ETT ratio below which the ETT alerts fire", _ratio),
    Threshold(
        "ett_range",
        "6h",
        "the range ETT% is measured over (increase() of the counters)",
        _duration(10, 30 * 86400),
        str,
    ),
    Threshold(
        "interruptions_per_hour",
        5.0,
        "interruptions of one interruption cause in the last hour that make a burst",
        _positive(1e6),
    ),
    Threshold(
        "crash_loop_restarts",
        2.0,
        "restarts of the crash loop a job is in now (ett_job_crash_loop_restarts) from which it alerts",
        _positive(1e6),
    ),
    Threshold(
        "storm_interruptions",
        5.0,
        "interruptions in restart storms of one --storm-by group (or of the fleet), of any cause, within "
        "--storm-window that alert (give ett export prometheus the same --storm-interruptions)",
        _positive(1e6),
    ),
    Threshold(
        "storm_window",
        "1h",
        "the window of a restart storm (increase() of the counters; give ett export prometheus the same)",
        _duration(10, 86400),
        str,
    ),
    Threshold(
        "storm_by",
        "partition",
        "the label of the export's restart-storm series (ett export prometheus --storm-by); an export without "
        "--storm-by writes none and alerts for the whole fleet",
        _label_name,
        str,
    ),
    Threshold(
        "pending_over",
        "30m",
        "a running job still starting (TTS) for longer than this alerts",
        _duration(1, 30 * 86400),
        str,
    ),
    Threshold(
        "recovering_over", "30m", "a job recovering (TTR) for longer than this alerts", _duration(1, 30 * 86400), str
    ),
    Threshold(
        "slow_over",
        "1h",
        "a job whose slow time (seconds beyond its ideal pace, ett_job_slow_seconds) exceeds this alerts",
        _duration(1, 30 * 86400),
        str,
    ),
    Threshold(
        "stale_after",
        "15m",
        "the export's textfile older than this alerts (its refresher is dead)",
        _duration(1, 7 * 86400),
        str,
    ),
    Threshold("for_", "5m", "how long a condition must hold before its alert fires", _for, str),
    Threshold("textfile", "ett.prom", "the export's file name in node_exporter's textfile folder", _textfile, str),
    Threshold("runbook", "docs/runbook.md", "where the runbook is (each alert links a section of it)", _url, str),
)
DEFAULTS: dict[str, Any] = {t.name: t.default for t in THRESHOLDS}


def check(values: dict[str, Any], source: str = "ett export prometheus-rules") -> dict[str, Any]:
    """The parameters with defaults filled in; a value out of range raises an InputError naming its flag."""
    out = dict(DEFAULTS)
    for t in THRESHOLDS:
        v = values.get(t.name)
        if v is None:
            continue
        if t.kind is float:
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise InputError(Problem(t.flag, None, t.name.rstrip("_"), f"not a number: {v!r}")) from None
        why = t.check(v)
        if why:
            raise InputError(Problem(t.flag, None, t.name.rstrip("_"), f"{why}; got {v!r}"))
        out[t.name] = v
    return out


def _owner(expr: str) -> str:
    """``expr`` (per job) with the job's owner label joined from ``ett_job_owner`` ('unknown' where none)."""
    return f"({expr}) * on (job_id, model) group_left (owner) ett_job_owner"


def rules(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The alerting rules with the given parameters (defaults for the others), in :data:`RULES` order."""
    p = check(values or {})
    book = p["runbook"]
    rng, below = p["ett_range"], p["ett_below"]
    job_text = "job {{ $labels.job_id }} (model {{ $labels.model }}, owner {{ $labels.owner }})"
    # a PromQL string literal holds the regex: its backslashes doubled
    textfile_re = ("(.*/)?" + re.escape(p["textfile"])).replace("\\", "\\\\")
    stale_s = duration_seconds(p["stale_after"])
    by = p["storm_by"]  # a label name (checked): the rule reads it as a label, never as a value

    def rule(name: str, expr: str, summary: str, section: str, severity: str = "warning") -> dict[str, Any]:
        return {
            "alert": name,
            "expr": expr,
            "for": p["for_"],
            "labels": {"severity": severity, "source": "ettcore"},
            "annotations": {"summary": summary, "runbook_url": f"{book}#{section}"},
        }

    wall = f"increase(ett_fleet_wall_gpu_seconds_total[{rng}])"
    prod = f"increase(ett_fleet_productive_gpu_seconds_total[{rng}])"
    mwall = f"sum by (model) (increase(ett_model_wall_gpu_seconds_total[{rng}]))"
    mprod = f"sum by (model) (increase(ett_model_productive_gpu_seconds_total[{rng}]))"
    top_owner = (
        '{{ with query "topk(1, sum by (owner) (increase(ett_fleet_lost_gpu_seconds_total['
        + rng
        + ']))) > 0" }}{{ with first . }}{{ label "owner" . }}{{ end }}{{ end }}'
    )
    return [
        rule(
            "EttJobHung",
            _owner("max by (job_id, model, first_stopped_rank, first_stopped_node) (ett_job_hung) == 1"),
            f"{job_text} is hung: no progress past its stall threshold; rank {{{{ $labels.first_stopped_rank }}}} "
            "on node {{ $labels.first_stopped_node }} stopped first",
            "job-hung",
            "critical",
        ),
        rule(
            "EttFleetEttBelow",
            f"({prod} / {wall}) < {below}",
            f"fleet ETT% over the last {rng} is {{{{ $value | humanizePercentage }}}}, below {100 * below:g}%; "
            f"the owner losing most: {top_owner}",
            "ett-below",
        ),
        rule(
            "EttModelEttBelow",
            f"({mprod} / {mwall}) < {below}",
            f"ETT% of model {{{{ $labels.model }}}} over the last {rng} is {{{{ $value | humanizePercentage }}}}, "
            f"below {100 * below:g}%",
            "ett-below",
        ),
        rule(
            "EttInterruptionBurst",
            f"sum by (cause) (increase(ett_fleet_interruptions_by_cause_total[1h])) >= {p['interruptions_per_hour']:g}",
            "{{ $value | humanize }} interruptions by {{ $labels.cause }} in the last hour "
            f"(a burst is {p['interruptions_per_hour']:g} or more)",
            "interruption-burst",
        ),
        rule(
            "EttCrashLoop",
            _owner(f"ett_job_crash_loop_restarts >= {p['crash_loop_restarts']:g}"),
            f"{job_text} is in a crash loop: {{{{ $value }}}} restarts crashed again from the same checkpoint, no "
            f"progress saved (an alert from {p['crash_loop_restarts']:g})",
            "crash-loop",
        ),
        rule(
            "EttRestartStorm",
            f"sum by ({by}) (increase(ett_fleet_restart_storm_interruptions_total[{p['storm_window']}])) "
            f">= {p['storm_interruptions']:g}",
            f"{{{{ $value | humanize }}}} interruptions in a restart storm "
            f"{{{{ with $labels.{by} }}}}in {by} {{{{ . }}}}{{{{ else }}}}across the fleet{{{{ end }}}} in the last "
            f"{p['storm_window']} (an alert from {p['storm_interruptions']:g}, of any cause)",
            "restart-storm",
        ),
        rule(
            "EttJobPendingTooLong",
            _owner(f"ett_job_pending_seconds > {duration_seconds(p['pending_over'])}"),
            f"{job_text} has been starting for {{{{ $value | humanizeDuration }}}} without training "
            f"(Time to Start over {p['pending_over']})",
            "pending-too-long",
        ),
        rule(
            "EttJobRecoveryTooLong",
            _owner(f"ett_job_recovering_seconds > {duration_seconds(p['recovering_over'])}"),
            f"{job_text} has been recovering for {{{{ $value | humanizeDuration }}}} "
            f"(Time to Recover over {p['recovering_over']})",
            "recovery-too-long",
        ),
        rule(
            "EttExportStale",
            f'(time() - node_textfile_mtime_seconds{{file=~"{textfile_re}"}}) > {stale_s}'
            f' or (absent(node_textfile_mtime_seconds{{file=~"{textfile_re}"}}) * {stale_s + 1})',
            f"the ETT export {p['textfile']} was last written {{{{ $value | humanizeDuration }}}} ago (or is "
            f"missing): its refresher is dead; the other ETT alerts read its last values",
            "export-stale",
        ),
        *_slow_rules(p, rule, job_text),
    ]


def _slow_rules(p: dict[str, Any], rule: Callable[..., dict[str, Any]], job_text: str) -> list[dict[str, Any]]:
    """The slow-time rule: a job whose slow time (docs/metric.md, "Slow time") exceeds ``--slow-over``."""
    return [
        rule(
            "EttJobSlowTooLong",
            _owner(f"ett_job_slow_seconds > {duration_seconds(p['slow_over'])}"),
            f"{job_text} has lost {{{{ $value | humanizeDuration }}}} to steps slower than its ideal pace "
            f"(slow time over {p['slow_over']})",
            "job-slow",
        )
    ]


RULE_NAMES: tuple[str, ...] = tuple(r["alert"] for r in rules())
"""The alerts, in file order (each has a section in docs/runbook.md)."""


def rules_yaml(values: dict[str, Any] | None = None) -> str:
    """The rules file: one group ``ettcore``, with a header naming the parameters it was made with."""
    p = check(values or {})
    head = ["# ettcore's alerting rules (docs/runbook.md). Generated by: ett export prometheus-rules", "# Parameters:"]
    head += [f"#   {t.flag} {p[t.name]}  ({t.help}; default {t.default})" for t in THRESHOLDS]
    doc = {"groups": [{"name": "ettcore", "rules": rules(p)}]}
    body = yaml.safe_dump(doc, sort_keys=False, width=1000, allow_unicode=True)
    return "\n".join(head) + "\n" + body
