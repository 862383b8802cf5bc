"""The manual and the README name only commands and options the ``ett`` parser has.

Every ``ett COMMAND ... --option`` written in code (an inline code span or a fenced block) of ``README.md``,
``CONTRIBUTING.md`` and ``docs/**/*.md`` must name a command of :func:`ettcore.cli.build_parser` and options that
command takes, so a renamed or removed option fails here, not in a reader's terminal.  The command tree is read the
way the generated CLI reference reads it (``docs/gen_ref.py``).  The site itself is built with ``mkdocs build
--strict`` by ``make docs`` (part of ``make test``): a broken link or a missing page fails it.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from ettcore import cli

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _gen_ref():
    spec = importlib.util.spec_from_file_location("gen_ref", ROOT / "docs" / "gen_ref.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN_REF = _gen_ref()
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
SPAN = re.compile(r"`([^`\n]+)`")
ETT = re.compile(r"(?:^|[\s/(])ett(?![\w.-])((?:\s+[^\s]+)*)")  # `ett ...`, `.venv/bin/ett ...`
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")


def _code(text: str) -> list[tuple[int, str]]:
    """Each line of a fenced block and each inline code span outside them, with its line number."""
    found: list[tuple[int, str]] = []
    for block in FENCE.finditer(text):
        first = text.count("\n", 0, block.start()) + 1
        found += [(first + i, ln) for i, ln in enumerate(block.group(0).splitlines()[1:-1], start=1)]
    outside = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for i, ln in enumerate(outside.splitlines(), start=1):
        found += [(i, span) for span in SPAN.findall(ln)]
    return found


def _invocations(code: str) -> list[list[str]]:
    """The words after each ``ett`` of a line of code, up to a comment, a pipe to another program, ``;`` or ``&&``."""
    code = re.split(r"\s#|;|&&|\|\s*(?=[a-z])", code)[0]
    return [m.group(1).split() for m in ETT.finditer(code)]


def named_options(pages: list[Path]) -> list[tuple[str, tuple[str, ...], list[str]]]:
    """(where, command words, flags) for every ``ett`` command written in code on the pages."""
    tree = {words: sub for words, sub, _ in GEN_REF.commands(cli.build_parser())}
    got = []
    for page in pages:
        if not page.exists():
            continue
        for line, code in _code(page.read_text(encoding="utf-8")):
            for words in _invocations(code):
                if not words or not re.fullmatch(r"[a-z][a-z-]*", words[0]):
                    continue  # `ett`, `ett --version`, `ett COMMAND`: no command named
                command: tuple[str, ...] = ()
                for w in words:
                    if (*command, w) not in tree:
                        break
                    command = (*command, w)
                flags = [f for w in words[len(command) :] for f in FLAG.findall(w)]
                name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
                got.append((f"{name}:{line}", command or (words[0],), flags))
    return got


def unknown(pages: list[Path]) -> list[str]:
    """What the pages name that the parser does not have, one line each."""
    parser = cli.build_parser()
    tree = {words: sub for words, sub, _ in GEN_REF.commands(parser)}
    bad = []
    for where, command, flags in named_options(pages):
        sub = tree.get(command)
        if sub is None:
            bad.append(f"{where}: no command `ett {' '.join(command)}`")
            continue
        missing = sorted(set(flags) - GEN_REF.option_names(sub) - {"-h", "--help"})
        bad += [f"{where}: `ett {' '.join(command)}` has no option {f}" for f in missing]
    return bad


def test_the_pages_name_commands_at_all():
    """The check sees what the pages name: the README's and the manual's examples (a check that saw nothing would
    always pass)."""
    named = named_options(PAGES)
    commands = {c for _, c, _ in named}
    assert {("summarize",), ("trend",), ("ingest",), ("export", "prometheus"), ("report",)} <= commands
    assert any("--gpu-hour-price" in f for _, c, f in named if c == ("summarize",))


def test_every_option_the_docs_name_exists():
    bad = unknown(PAGES)
    assert not bad, "the docs name what the parser lacks:\n" + "\n".join(bad)


def test_a_removed_option_is_caught(tmp_path, monkeypatch):
    """A page naming an option the parser lacks, and a command it lacks, fail with the page and the line."""
    page = tmp_path / "page.md"
    page.write_text("Run\n\n```sh\nett summarize data/sample --no-such-option\n```\n\nor `ett frobnicate --x`.\n")
    assert unknown([page]) == [
        f"{page}:4: `ett summarize` has no option --no-such-option",
        f"{page}:7: no command `ett frobnicate`",
    ]


@pytest.mark.parametrize(
    "code, words",
    [
        (".venv/bin/ett nodes TRACE --json | --csv   # the same", [["nodes", "TRACE", "--json", "|", "--csv"]]),
        ("ett summarize x --json | jq .fleet", [["summarize", "x", "--json"]]),
        ("ett_job_hung", []),
    ],
)
def test_invocations(code, words):
    assert _invocations(code) == words
