"""The layout stays the architecture: import-linter's contracts (pyproject.toml) hold, and they can fail.

``make test`` runs ``lint-imports`` on the tree; these tests run it too, on a copy of the package, once as it is
(every contract kept) and once with a deliberate bad import (the bottom layer importing the CLI), which must break the
layers contract.  A package module never reaches into ``tests/`` (no ``sys.path`` edits, no paths under tests).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ettcore.config import PACKAGE_DIR, PROJECT_ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
needs_import_linter = pytest.mark.skipif(
    not LINT_IMPORTS.is_file(), reason="import-linter is not installed (test extra)"
)


def _copy(tmp_path: Path) -> Path:
    """The package, the checkout's tools (the campaigns, a root package of the contracts) and pyproject.toml copied
    into ``tmp_path`` (import-linter reads the copy, not the installed tree)."""
    for source, name in ((PACKAGE_DIR, "ettcore"), (PROJECT_ROOT / "tools", "tools")):
        shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def _add_bad_import(root: Path, module: str, statement: str) -> None:
    """Append a function holding ``statement`` (an import the contracts forbid) to ``module`` of the copy."""
    path = root / module
    path.write_text(path.read_text() + f"\n\ndef _bad():\n    {statement}\n")


@needs_import_linter
def test_the_contracts_hold_and_a_bad_import_breaks_them(tmp_path):
    root = _copy(tmp_path)
    ok = _lint(root)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "0 broken" in ok.stdout
    _add_bad_import(root, "ettcore/trace/writer.py", "from ettcore.cli import main  # the bottom reaching the top")
    bad = _lint(root)
    assert bad.returncode != 0
    assert "Layers: the CLI on top, the trace at the bottom BROKEN" in bad.stdout
    assert "ettcore.trace.writer -> ettcore.cli" in bad.stdout


# (module of the copy, the forbidden import appended to it, lines lint-imports must print)
FORBIDDEN_IMPORTS = {
    "an importer measuring": (
        "ettcore/importers/frames.py",
        "from ettcore import metric",
        ["Importers and integrations never import presentation, the CLI or the metric BROKEN"],
    ),
    # the layers allow it (the generator sits below the metric); the forbidden contract does not
    "the metric importing the generator": (
        "ettcore/metric/nodes.py",
        "from ettcore.synthetic import lemons",
        [
            "Layers: the CLI on top, the trace at the bottom KEPT",
            "The metric never imports the synthetic generator BROKEN",
            "ettcore.metric.nodes -> ettcore.synthetic.lemons",
        ],
    ),
    # the campaigns import the package, never the other way: an installed ettcore has no tools/ to import
    "the package importing a campaign": (
        "ettcore/bundled.py",
        "from tools.campaigns import live_job",
        [
            "The package never imports the campaigns or any other tool of the checkout BROKEN",
            "ettcore.bundled -> tools.campaigns.live_job",
        ],
    ),
}


@needs_import_linter
@pytest.mark.parametrize("case", sorted(FORBIDDEN_IMPORTS))
def test_a_forbidden_import_breaks_its_contract(tmp_path, case):
    module, statement, expected = FORBIDDEN_IMPORTS[case]
    root = _copy(tmp_path)
    _add_bad_import(root, module, statement)
    bad = _lint(root)
    assert bad.returncode != 0
    missing = [line for line in expected if line not in bad.stdout]
    assert missing == [], bad.stdout


def test_no_package_module_reaches_into_tests():
    """No module of ettcore edits sys.path or names a path under tests/ (the package must not depend on its tests)."""
    offenders = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", None) == "sys":
                offenders.append(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}: sys.path")
            if isinstance(node, ast.Constant) and node.value == "tests":
                offenders.append(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}: 'tests'")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                where = f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}"
                offenders += [f"{where}: import {n}" for n in names if n.split(".")[0] == "tests"]
    assert offenders == []
