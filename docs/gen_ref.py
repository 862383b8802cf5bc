"""The manual's generated reference, written at every build by mkdocs-gen-files (``mkdocs.yml``): it cannot drift.

- ``reference/cli.md``: every ``ett`` command, its usage and options, read off the argparse parser itself
  (:func:`ettcore.cli.build_parser`);
- ``reference/schemas.md``: every JSON Schema of a ``--json`` answer (``ettcore/schemas/*.schema.json``);
- ``reference/prometheus-families.md``: every metric family ``ett export prometheus`` writes, with its type and help
  text, taken from the exporter's own output on the bundled sample (with a price, so the money families show) and
  from its live-hang families;
- ``reference/alert-rules.md``: the alert rules ``ett export prometheus-rules`` writes, at their defaults
  (:func:`ettcore.exporters.alert_rules.rules`);
- ``reference/api/*.md``: the Python API of each package, from its docstrings (mkdocstrings).

Run by ``mkdocs build`` (``make docs``); ``python docs/gen_ref.py OUT_DIR`` writes the same pages into a folder.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ettcore import cli  # noqa: E402
from ettcore.config import SAMPLE_TRACE  # noqa: E402

# The packages whose Python API the reference shows, each on its own page (the public ones; the CLI is on its page).
API_PACKAGES = {
    "ettcore": "The top-level API: load a trace, measure it",
    "ettcore.metric": "The metric: per job, fleet, groups, trends, stalls, hangs",
    "ettcore.engines": "Where the metric runs: DuckDB or Spark",
    "ettcore.store": "The fleet store",
    "ettcore.bundled": "The bundled data sets",
    "ettcore.trace": "Reading, typing and checking a trace",
    "ettcore.importers": "Other tools' logs as traces",
    "ettcore.integrations": "Inside a running job: the recorder and the framework integrations",
    "ettcore.exporters": "Prometheus export and alert rules",
    "ettcore.planning": "Planning, cascade and what-if math",
    "ettcore.vocabulary": "The vocabulary: end reasons, buckets, causes, tables",
    "ettcore.errors": "Input errors",
}


def _cell(text: str | None) -> str:
    return (text or "").replace("%%", "%").replace("|", "\\|").replace("\n", " ").strip()


def commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Each command and sub-command as (words after ``ett``, its parser, its one-line help), depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*words, name), sub, helps.get(name) or ""
                yield from commands(sub, (*words, name))


def options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if isinstance(action, (argparse._SubParsersAction, argparse._HelpAction)):
            continue
        yield action


def option_names(parser: argparse.ArgumentParser) -> set[str]:
    """The long and short flags a parser takes (``--json``, ``-p``)."""
    return {s for a in options(parser) for s in a.option_strings}


def cli_page() -> str:
    parser = cli.build_parser()
    out = [
        "# The `ett` command",
        "",
        "Generated from the `ett` argparse parser (`ettcore.cli.build_parser`) at every build of this manual: every",
        "command, its arguments and options as `ett COMMAND --help` prints them. The measuring options mean the same",
        "in every command ([the measuring options](../cli.md)).",
        "",
    ]
    for words, sub, help_text in commands(parser):
        if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
            out += [f"## ett {' '.join(words)}", "", _cell(help_text or sub.description), ""]
            continue
        out += [f"## ett {' '.join(words)}", ""]
        if sub.description or help_text:
            out += [_cell(sub.description or help_text), ""]
        usage = sub.format_usage().removeprefix("usage: ").strip()
        out += ["```text", usage, "```", "", "| argument | what it does |", "|---|---|"]
        for a in options(sub):
            metavar = f" {a.metavar or a.dest.upper()}" if a.option_strings and a.nargs != 0 else ""
            name = ", ".join(f"`{s}{metavar}`" for s in a.option_strings) or f"`{a.metavar or a.dest}`"
            default = (
                "" if a.default in (None, False, argparse.SUPPRESS) or a.nargs == 0 else f" (default `{a.default}`)"
            )
            help_text = "" if a.help == argparse.SUPPRESS else (a.help or "") % {"default": a.default, "prog": sub.prog}
            if a.choices is not None and not isinstance(a.choices, dict):
                help_text += f" (one of: {', '.join(map(str, a.choices))})"
            out.append(f"| {name} | {_cell(help_text)}{default} |")
        out.append("")
    return "\n".join(out)


def schemas_page() -> str:
    folder = ROOT / "ettcore" / "schemas"
    out = [
        "# JSON output schemas",
        "",
        "Every `--json` answer is the envelope (`envelope.schema.json`) plus the command's own fields; each answer's",
        "JSON Schema is in the package (`ettcore/schemas/`) and printed by `ett schema NAME`. This page is generated",
        "from those files at every build. A change to an answer bumps its schema's version and gets a line in",
        "`CHANGELOG.md`.",
        "",
    ]
    for path in sorted(folder.glob("*.schema.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        name = path.name.removesuffix(".schema.json")
        out += [f"## {name}", ""]
        if doc.get("title") or doc.get("description"):
            out += [_cell(" ".join(filter(None, (doc.get("title"), doc.get("description"))))), ""]
        props = doc.get("properties", {})
        if props:
            required = set(doc.get("required", []))
            out += ["| field | type | required | what it is |", "|---|---|---|---|"]
            for key, spec in props.items():
                kind = spec.get("type") or spec.get("$ref", "") or ("const" if "const" in spec else "")
                if isinstance(kind, list):
                    kind = " or ".join(kind)
                must = "yes" if key in required else ""
                out.append(f"| `{key}` | {_cell(str(kind))} | {must} | {_cell(spec.get('description'))} |")
            out.append("")
        out += [f'??? note "{path.name}"', "", "    ```json"]
        out += ["    " + ln for ln in json.dumps(doc, indent=2).splitlines()]
        out += ["    ```", ""]
    return "\n".join(out)


def _families(lines: Iterator[str] | list[str]) -> dict[str, list[str]]:
    fams: dict[str, list[str]] = {}
    for ln in lines:
        if ln.startswith("# HELP "):
            name, _, text = ln[len("# HELP ") :].partition(" ")
            fams.setdefault(name, ["", ""])[1] = text
        elif ln.startswith("# TYPE "):
            name, _, kind = ln[len("# TYPE ") :].partition(" ")
            fams.setdefault(name, ["", ""])[0] = kind
    return fams


def prometheus_page() -> str:
    from ettcore import load_trace
    from ettcore.exporters import prometheus
    from ettcore.metric import money

    trace = load_trace(SAMPLE_TRACE)
    buf = io.StringIO()
    prometheus.write(trace, buf, prices=money.parse_prices("2.5"), job_series_within_s=None)
    fams = _families(buf.getvalue().splitlines())
    fams |= _families(list(prometheus.live_families(trace)))
    out = [
        "# Prometheus metric families",
        "",
        "Every family `ett export prometheus` writes, with its type and help text, generated at every build by running",
        "the exporter (`ettcore.exporters.prometheus`) on the bundled sample with a price (so the money families show)",
        "and its live hang detection. Labels, units and example queries: [the Prometheus export](../prometheus.md).",
        "",
        "| family | type | help |",
        "|---|---|---|",
    ]
    out += [f"| `{name}` | {kind} | {_cell(text)} |" for name, (kind, text) in sorted(fams.items())]
    return "\n".join(out) + "\n"


def alert_rules_page() -> str:
    from ettcore.exporters import alert_rules

    out = [
        "# Alert rules",
        "",
        "The rules `ett export prometheus-rules` writes at its defaults (`ettcore.exporters.alert_rules.rules`),",
        "generated at every build; every threshold is an option of that command ([the CLI](cli.md)). What to do when",
        "one fires: [the runbook](../runbook.md).",
        "",
    ]
    for rule in alert_rules.rules():
        ann = rule.get("annotations", {})
        out += [f"## {rule['alert']}", "", _cell(ann.get("summary")), ""]
        out += ["```promql", rule["expr"].strip(), "```", ""]
        out += [f"- for: `{rule.get('for', '0s')}`", f"- labels: `{json.dumps(rule.get('labels', {}))}`"]
        if ann.get("runbook_url"):
            out.append(f"- runbook: `{ann['runbook_url']}`")
        out.append("")
    out += ["## The file", "", "```yaml", alert_rules.rules_yaml().rstrip(), "```", ""]
    return "\n".join(out)


def api_pages() -> dict[str, str]:
    pages = {}
    for module, title in API_PACKAGES.items():
        pages[f"reference/api/{module}.md"] = f"# `{module}`: {title}\n\n::: {module}\n"
    return pages


def pages() -> dict[str, str]:
    """Every generated page: its path under docs/ and its Markdown."""
    got: dict[str, Callable[[], str]] = {
        "reference/cli.md": cli_page,
        "reference/schemas.md": schemas_page,
        "reference/prometheus-families.md": prometheus_page,
        "reference/alert-rules.md": alert_rules_page,
    }
    return {path: make() for path, make in got.items()} | api_pages()


def _gen_files() -> None:
    import mkdocs_gen_files

    for path, text in pages().items():
        with mkdocs_gen_files.open(path, "w") as f:
            f.write(text)


if __name__ == "__main__" and len(sys.argv) == 2:
    target = Path(sys.argv[1])
    for path, text in pages().items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_text(text, encoding="utf-8")
elif __name__ == "<run_path>":  # mkdocs-gen-files runs the script with runpy.run_path
    _gen_files()
