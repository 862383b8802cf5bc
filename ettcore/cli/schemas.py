"""The JSON Schemas of the ``--json`` answers, shipped in the package (``ettcore/schemas/*.schema.json``).

Every ``ett COMMAND --json`` answer is one object: the envelope (``envelope.schema.json``: ``schema``, ``command``,
``ettcore_version``, ``input``, ``synthetic``, ``as_of``, ``window``, ``mapping``), then the command's own fields.
Its ``schema`` key names the schema it follows and its version; the version lives in the schema file alone
(:func:`version`), and a change that breaks an answer bumps it (and gets a line in ``CHANGELOG.md``).  The schemas are
open where users extend the vocabulary: components, labels and causes are names a user may add.
``ett schema NAME`` prints one; :func:`validate` checks an answer against its schema (``jsonschema``).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from ettcore.config import SCHEMA_DIR

SUFFIX = ".schema.json"
SHARED = ("defs", "envelope")  # not an answer's schema: what the answers' schemas refer to


def names() -> list[str]:
    """The answers' schemas (``summarize``, ``trend``, ...)."""
    return sorted(p.name[: -len(SUFFIX)] for p in SCHEMA_DIR.glob(f"*{SUFFIX}") if p.name[: -len(SUFFIX)] not in SHARED)


@lru_cache(maxsize=None)
def load(name: str) -> dict[str, Any]:
    """The schema ``name`` (``summarize``, ``envelope``, ...) as a dict."""
    return json.loads((SCHEMA_DIR / f"{name}{SUFFIX}").read_text(encoding="utf-8"))


def version(name: str) -> int:
    """The version of answer schema ``name``: the ``const`` its ``schema.version`` property holds."""
    return int(load(name)["properties"]["schema"]["properties"]["version"]["const"])


def header(name: str) -> dict[str, Any]:
    """The ``schema`` key of an answer that follows ``name``."""
    return {"name": f"ett-{name}", "version": version(name)}


def validate(doc: dict[str, Any]) -> None:
    """Check ``doc`` against the schema its ``schema.name`` names (``jsonschema.ValidationError`` if it does not
    follow it)."""
    import jsonschema
    from referencing import Registry, Resource

    registry = Registry().with_resources((load(n)["$id"], Resource.from_contents(load(n))) for n in (*SHARED, *names()))
    name = doc["schema"]["name"].removeprefix("ett-")
    jsonschema.Draft202012Validator(load(name), registry=registry).validate(doc)
