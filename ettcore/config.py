"""Project paths, in one place.

Every path the package, the notebooks and the tests use is derived here from
the location of this file, never from the working directory.  The environment
variable ``ETT_PROJECT_ROOT`` overrides the root (for an installed copy used
against a checkout elsewhere).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = Path(os.environ.get("ETT_PROJECT_ROOT", PACKAGE_DIR.parent)).resolve()

SQL_DIR = PACKAGE_DIR / "sql"
SCHEMA_DIR = PACKAGE_DIR / "schemas"  # the JSON Schemas of every `ett ... --json` answer
# the vocabulary, phases and cause rules (ettcore.vocabulary); $ETT_DEFAULTS_DIR: a folder of the same files instead
DEFAULTS_DIR = Path(os.environ.get("ETT_DEFAULTS_DIR") or PACKAGE_DIR / "defaults").resolve()

DATA_DIR = PROJECT_ROOT / "data"
SAMPLE_TRACE = DATA_DIR / "sample"
SCENARIO_DIR = DATA_DIR / "scenarios"
GENERATED_DIR = DATA_DIR / "generated"
NOTEBOOK_DIR = PROJECT_ROOT / "notebooks"
REPORT_DIR = PROJECT_ROOT / "reports"
