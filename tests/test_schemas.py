"""Every ``--json`` answer is one object in one envelope, and follows the JSON Schema shipped in the package.

The answers of every command that prints JSON (``summarize``, ``trend`` fixed and rolling, ``stalls`` and
``stalls --live``, ``opportunities``, ``nodes``, ``validate``) are validated with the ``jsonschema`` library against
``ettcore/schemas/<name>.schema.json`` on the bundled sample (SYNTHETIC), the Slurm campaign (measured), the
multi-node campaign and a fleet store; the schemas are open where users extend the vocabulary (a mapping file's own
component, a jobs table's own label columns).  A schema that does not hold the envelope's keys, or an answer that
leaves one out, fails.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from ettcore import __version__, cli
from ettcore.cli import schemas
from ettcore.config import DATA_DIR, SAMPLE_TRACE

ENVELOPE = ["schema", "command", "ettcore_version", "input", "synthetic", "as_of", "window", "mapping"]
FLEET = DATA_DIR / "slurm-fleet" / "trace"
MULTINODE = DATA_DIR / "slurm-multinode" / "trace"


@pytest.fixture(scope="module")
def where(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("schemas")
    s = d / "fleet.duckdb"
    assert cli.main(["ingest", str(s), str(FLEET)]) == 0
    mapping = d / "mapping.yaml"
    mapping.write_text("phases:\n  - {phase: data_warmup, component: data_loading}\n")
    return {"sample": SAMPLE_TRACE, "fleet": FLEET, "multinode": MULTINODE, "store": s, "mapping": mapping}


ANSWERS = [
    ("summarize", ["summarize", "{t}", "--json"]),
    ("summarize", ["summarize", "{t}", "--json", "--by", "model", "--gpu-hour-price", "2.5", "--mapping", "{m}"]),
    ("summarize", ["summarize", "{t}", "--json", "--since", "2026-01-05T02:00:00Z"]),
    ("trend", ["trend", "{t}", "--json"]),
    ("trend", ["trend", "{t}", "--json", "--every", "hour", "--window", "6h"]),
    ("stalls", ["stalls", "{t}", "--json"]),
    ("stalls-live", ["stalls", "{t}", "--live", "--json"]),
    ("opportunities", ["opportunities", "{t}", "--json", "--gpu-hour-price", "3"]),
    ("nodes", ["nodes", "{t}", "--json", "--mttf-at", "1024"]),
    ("nodes", ["nodes", "{t}", "--json", "--slow"]),
    ("validate", ["validate", "{t}", "--json"]),
]


@pytest.mark.parametrize("input_name", ["sample", "fleet", "multinode", "store"])
@pytest.mark.parametrize("name, argv", ANSWERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(ANSWERS)])
def test_every_answer_follows_its_schema(name, argv, input_name, where, capsys):
    args = [a.format(t=where[input_name], m=where["mapping"]) for a in argv]
    rc = cli.main(args)
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert list(doc)[: len(ENVELOPE)] == ENVELOPE  # the envelope first, in this order
    assert doc["schema"] == {"name": f"ett-{name}", "version": schemas.version(name)}
    assert doc["ettcore_version"] == __version__ and doc["input"]["path"] == str(where[input_name])
    assert doc["synthetic"] is (input_name == "sample")
    schemas.validate(doc)


def test_an_answer_without_its_envelope_or_with_a_wrong_value_fails(where, capsys):
    assert cli.main(["trend", str(SAMPLE_TRACE), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    schemas.validate(doc)
    for broken in (
        {k: v for k, v in doc.items() if k != "synthetic"},
        {**doc, "as_of": "yesterday"},
        {**doc, "buckets": [{**doc["buckets"][0], "nof": "three"}]},
        {**doc, "schema": {"name": "ett-trend", "version": schemas.version("trend") + 1}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            schemas.validate(broken)


def test_every_schema_is_a_valid_draft_2020_12_schema_with_the_envelope():
    assert schemas.names() == ["nodes", "opportunities", "stalls", "stalls-live", "summarize", "trend", "validate"]
    for name in ["defs", "envelope", *schemas.names()]:
        jsonschema.Draft202012Validator.check_schema(schemas.load(name))
    assert schemas.load("envelope")["required"] == ENVELOPE
    for name in schemas.names():
        assert {"$ref": "urn:ettcore:schema:envelope"} in schemas.load(name)["allOf"], name


def test_ett_schema_prints_a_schema_and_lists_them(capsys):
    assert cli.main(["schema"]) == 0
    assert capsys.readouterr().out.split() == schemas.names()
    assert cli.main(["schema", "trend"]) == 0
    assert json.loads(capsys.readouterr().out) == schemas.load("trend")
    assert cli.main(["schema", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err
