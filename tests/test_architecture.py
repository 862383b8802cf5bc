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


@needs_import_linter
def test_the_contracts_hold_and_a_bad_import_breaks_them(tmp_path):
    root = _copy(tmp_path)
    ok = _lint(root)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "0 broken" in ok.stdout
    leaf = root / "ettcore" / "trace" / "writer.py"
    bad_import = "\n\ndef _bad():\n    from ettcore.cli import main  # the bottom layer reaching the top\n"
    leaf.write_text(leaf.read_text() + bad_import)
    bad = _lint(root)
    assert bad.returncode != 0
    assert "Layers: the CLI on top, the trace at the bottom BROKEN" in bad.stdout
    assert "ettcore.trace.writer -> ettcore.cli" in bad.stdout


@needs_import_linter
def test_importers_importing_the_metric_break_their_contract(tmp_path):
    root = _copy(tmp_path)
    mod = root / "ettcore" / "importers" / "frames.py"
    mod.write_text(mod.read_text() + "\n\ndef _bad():\n    from ettcore import metric  # an importer measuring\n")
    bad = _lint(root)
    assert bad.returncode != 0
    assert "Importers and integrations never import presentation, the CLI or the metric BROKEN" in bad.stdout


@needs_import_linter
def test_the_metric_importing_the_synthetic_generator_breaks_its_contract(tmp_path):
    """The layers allow it (the generator sits below the metric); the forbidden contract does not."""
    root = _copy(tmp_path)
    mod = root / "ettcore" / "metric" / "nodes.py"
    mod.write_text(mod.read_text() + "\n\ndef _bad():\n    from ettcore.synthetic import lemons  # measuring a fake\n")
    bad = _lint(root)
    assert bad.returncode != 0
    assert "Layers: the CLI on top, the trace at the bottom KEPT" in bad.stdout
    assert "The metric never imports the synthetic generator BROKEN" in bad.stdout
    assert "ettcore.metric.nodes -> ettcore.synthetic.lemons" in bad.stdout


@needs_import_linter
def test_the_package_importing_a_campaign_breaks_its_contract(tmp_path):
    """The campaigns import the package, never the other way: an installed ettcore has no tools/ to import."""
    root = _copy(tmp_path)
    mod = root / "ettcore" / "bundled.py"
    mod.write_text(mod.read_text() + "\n\ndef _bad():\n    from tools.campaigns import live_job  # a campaign\n")
    bad = _lint(root)
    assert bad.returncode != 0
    assert "The package never imports the campaigns or any other tool of the checkout BROKEN" in bad.stdout
    assert "ettcore.bundled -> tools.campaigns.live_job" in bad.stdout


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
