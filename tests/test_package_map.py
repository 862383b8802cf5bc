"""One map of the package: the ``ettcore/__init__.py`` docstring lists every subpackage and top-level module, one
line each, in the order of the import-linter layers (``pyproject.toml``), and names the data folders beside the code.

:func:`map_problems` compares the map with the files on disk and with the layers contract; the first test runs it on
the tree, the others show it finding a module missing from the map, an entry for a module that is gone, a module
outside the layers, an entry out of layer order and an unnamed data folder.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import ettcore
from ettcore.config import PACKAGE_DIR, PROJECT_ROOT

ENTRY = re.compile(r"^- :mod:`(ettcore\.[A-Za-z_][\w.]*)`\s+\S")
DATA_ENTRY = re.compile(r"^- ``ettcore/([\w-]+)/``\s+\S")
LAYERS_CONTRACT = "Layers: the CLI on top, the trace at the bottom"


def mapped(doc: str) -> tuple[list[str], list[str]]:
    """The modules the map lists (in its order) and the data folders it names."""
    modules = [m.group(1) for line in doc.splitlines() if (m := ENTRY.match(line))]
    folders = [m.group(1) for line in doc.splitlines() if (m := DATA_ENTRY.match(line))]
    return modules, folders


def on_disk(package_dir: Path) -> tuple[set[str], set[str]]:
    """The package's subpackages and top-level modules, and its folders that are not packages (data)."""
    modules, folders = set(), set()
    for path in package_dir.iterdir():
        if path.name in ("__init__.py", "__pycache__"):
            continue
        if path.is_file() and path.suffix == ".py":
            modules.add(f"ettcore.{path.stem}")
        elif path.is_dir() and (path / "__init__.py").is_file():
            modules.add(f"ettcore.{path.name}")
        elif path.is_dir():
            folders.add(path.name)
    return modules, folders


def layers(pyproject: Path) -> list[set[str]]:
    """The layers contract's layers, top first, each the set of its modules (``a | b`` or ``a : b``)."""
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["name"] == LAYERS_CONTRACT]
    return [{m.strip() for m in re.split(r"[|:]", layer)} for layer in contract["layers"]]


def map_problems(doc: str, package_dir: Path, pyproject: Path) -> list[str]:
    """One line for each disagreement between the map, the files and the layers (none when they agree)."""
    modules, folders = mapped(doc)
    disk_modules, disk_folders = on_disk(package_dir)
    layer_of = {m: i for i, layer in enumerate(layers(pyproject)) for m in layer}
    problems = [f"{m} is in the package but not in the map" for m in sorted(disk_modules - set(modules))]
    problems += [f"{m} is in the map but not in the package" for m in sorted(set(modules) - disk_modules)]
    problems += [f"{m} is listed twice in the map" for m in sorted({m for m in modules if modules.count(m) > 1})]
    problems += [f"{m} is in the map but in no layer" for m in modules if m not in layer_of]
    problems += [f"{m} is in a layer but not in the map" for m in sorted(set(layer_of) - set(modules))]
    ranked = [(layer_of[m], m) for m in modules if m in layer_of]
    problems += [
        f"{b} is listed after {a}, but its layer is above" for (i, a), (j, b) in zip(ranked, ranked[1:]) if j < i
    ]
    problems += [f"ettcore/{f}/ is in the package but not in the map" for f in sorted(disk_folders - set(folders))]
    problems += [f"ettcore/{f}/ is in the map but not in the package" for f in sorted(set(folders) - disk_folders)]
    return problems


def test_the_map_lists_every_module_in_layer_order():
    modules, folders = mapped(ettcore.__doc__)
    assert len(modules) >= 20 and len(folders) == 3  # the map was found (a renamed format would read as empty)
    assert map_problems(ettcore.__doc__, PACKAGE_DIR, PROJECT_ROOT / "pyproject.toml") == []


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    """An empty stand-in of the package with the same top-level names, and a copy of pyproject.toml."""
    package = tmp_path / "ettcore"
    package.mkdir()
    for path in PACKAGE_DIR.iterdir():
        if path.name == "__pycache__":
            continue
        if path.is_dir():
            (package / path.name).mkdir()
            if (path / "__init__.py").is_file():
                (package / path.name / "__init__.py").touch()
        else:
            (package / path.name).touch()
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return package, tmp_path / "pyproject.toml"


def test_a_new_module_missing_from_the_map_is_found(tmp_path):
    package, pyproject = _copy(tmp_path)
    assert map_problems(ettcore.__doc__, package, pyproject) == []
    (package / "newthing.py").touch()
    (package / "newpkg").mkdir()
    (package / "newpkg" / "__init__.py").touch()
    (package / "templates").mkdir()
    assert map_problems(ettcore.__doc__, package, pyproject) == [
        "ettcore.newpkg is in the package but not in the map",
        "ettcore.newthing is in the package but not in the map",
        "ettcore/templates/ is in the package but not in the map",
    ]


def test_an_entry_for_a_module_that_is_gone_is_found(tmp_path):
    package, pyproject = _copy(tmp_path)
    (package / "order.py").unlink()
    shutil.rmtree(package / "sql")
    assert map_problems(ettcore.__doc__, package, pyproject) == [
        "ettcore.order is in the map but not in the package",
        "ettcore/sql/ is in the map but not in the package",
    ]


def test_a_module_outside_the_layers_or_out_of_their_order_is_found(tmp_path):
    package, pyproject = _copy(tmp_path)
    pyproject.write_text(pyproject.read_text().replace(' | ettcore._moved",', '",'))
    assert map_problems(ettcore.__doc__, package, pyproject) == ["ettcore._moved is in the map but in no layer"]
    lines = ettcore.__doc__.splitlines()
    cli = next(i for i, line in enumerate(lines) if line.startswith("- :mod:`ettcore.cli`"))
    trace = next(i for i, line in enumerate(lines) if line.startswith("- :mod:`ettcore.trace`"))
    lines[cli], lines[trace] = lines[trace], lines[cli]
    shuffled = "\n".join(lines)
    problems = map_problems(shuffled, package, PROJECT_ROOT / "pyproject.toml")
    assert problems == [
        "ettcore.present is listed after ettcore.trace, but its layer is above",
        "ettcore.cli is listed after ettcore.importers, but its layer is above",
    ]
