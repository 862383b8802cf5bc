"""``ett nodes``: per-node exposure, shared blame and the Poisson flag on a small hand-written trace.

Trace (hand-written, SYNTHETIC): job A (4 GPUs) ran attempt 0 on n[1-2] for 1 h and failed, attempt 1 on n3 for
1 h and completed; job B (2 GPUs) ran attempt 0 on n1 for 0.5 h, which failed (cause user_error where the cause
column is given), then attempt 1 on n1 for 1 h.

By hand: exposure n1 = 4/2 x 1 + 2 x 0.5 + 2 x 1 = 5 GPU-h, n2 = 4/2 x 1 = 2, n3 = 4 x 1 = 4 (11 in all).
With the cause column, only A's failure counts (unknown): 1/2 on n1 and n2; fleet rate 1/11 per GPU-h; n1 was in
attempts of 4 + 1 + 2 = 7 GPU-h, so expected = 7/11 and p = 1 - exp(-7/11).  Without it, B's failure derives to
unknown and counts too: n1 has 0.5 + 1 = 1.5.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ettcore import cli
from ettcore.errors import InputError
from ettcore.metric.nodes import NodeReport, causes, node_report, poisson_p_value
from ettcore.trace import load_trace

T0 = 1_800_000_000


def _trace(tmp: Path, cause: bool = True, nodes_a0: str = "n[1-2]", cause_b0: str = "user_error") -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "jobs.csv").write_text("job_id,gpus\nA,4\nB,2\n")
    rows = [
        ("A", 0, 0, 3600, "failure", nodes_a0, ""),
        ("A", 1, 3600, 7200, "completed", "n3", ""),
        ("B", 0, 0, 1800, "failure", "n1", cause_b0),
        ("B", 1, 1800, 5400, "completed", "n1", ""),
    ]
    head = "job_id,attempt,start,end,end_reason,nodes" + (",cause" if cause else "")
    lines = [head] + [
        f'{j},{a},{T0 + s},{T0 + e},{r},"{n}"' + (f",{c}" if cause else "") for j, a, s, e, r, n, c in rows
    ]
    (tmp / "attempts.csv").write_text("\n".join(lines) + "\n")
    spans = ["job_id,attempt,phase,start,end,cursor_start,cursor_end"]
    spans += [f"{j},{a},train,{T0 + s},{T0 + e},0,1" for j, a, s, e, *_ in rows]
    (tmp / "spans.csv").write_text("\n".join(spans) + "\n")
    return tmp


def test_exposure_shares_and_test_by_hand(tmp_path):
    rep = node_report(load_trace(_trace(tmp_path)))
    got = {r["node"]: r for r in rep.nodes.iter_rows(named=True)}
    assert {n: got[n]["exposure_gpu_h"] for n in got} == pytest.approx({"n1": 5.0, "n2": 2.0, "n3": 4.0})
    assert {n: got[n]["interruptions"] for n in got} == pytest.approx({"n1": 0.5, "n2": 0.5, "n3": 0.0})
    assert {n: got[n]["involved"] for n in got} == {"n1": 1, "n2": 1, "n3": 0}
    assert got["n1"]["rate_per_1k_gpu_h"] == pytest.approx(100.0)
    assert got["n2"]["rate_per_1k_gpu_h"] == pytest.approx(250.0)
    assert rep.counted == 1 and rep.gpu_h == pytest.approx(11.0)
    assert rep.fleet_rate_per_1k_gpu_h == pytest.approx(1000 / 11)
    assert got["n1"]["expected"] == pytest.approx(7 / 11)
    assert got["n1"]["p_value"] == pytest.approx(1 - math.exp(-7 / 11))
    assert got["n3"]["p_value"] == 1.0
    assert rep.threshold == pytest.approx(0.01 / 3) and rep.flagged == []
    # concentration: n1 and n2 hold half the one shared interruption each, n3 none
    assert rep.concentration(1) == pytest.approx(0.5) and rep.concentration(2) == pytest.approx(1.0)
    assert rep.concentration(10) == pytest.approx(1.0)
    lorenz = rep.lorenz()
    assert lorenz["node"].to_list() == ["n3", "n1", "n2"]
    assert lorenz["node_share"].to_list() == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert lorenz["interruption_share"].to_list() == pytest.approx([0.0, 0.5, 1.0])
    with pytest.raises(InputError):
        rep.concentration(0)


def test_cause_derived_from_end_reason_without_the_column(tmp_path):
    t = load_trace(_trace(tmp_path, cause=False))
    rep = node_report(t)
    got = {r["node"]: r["interruptions"] for r in rep.nodes.iter_rows(named=True)}
    assert got == pytest.approx({"n1": 1.5, "n2": 0.5, "n3": 0.0})
    assert dict(causes(t).iter_rows()) == {
        "preemption": 0,
        "user_error": 0,
        "time_limit": 0,
        "node_failure": 0,
        "infrastructure": 0,
        "hardware": 0,
        "unknown": 2,
    }
    with_column = causes(load_trace(_trace(tmp_path / "c")))
    assert dict(with_column.iter_rows())["user_error"] == 1


def test_poisson_p_value_by_hand():
    assert poisson_p_value(0, 3.0) == 1.0
    assert poisson_p_value(2, 1.0) == pytest.approx(1 - math.exp(-1) * (1 + 1))
    assert poisson_p_value(1, 0.0) == 0.0


@pytest.mark.parametrize(
    "kw, field, words",
    [
        ({"nodes_a0": "n[2-1]"}, "nodes", "reversed range"),
        ({"nodes_a0": "n[1-2"}, "nodes", "without ']'"),
        ({"cause_b0": "cosmic_ray"}, "cause", "unknown cause"),
    ],
)
def test_bad_nodes_and_causes_name_file_row_field(tmp_path, kw, field, words, capsys):
    path = _trace(tmp_path, **kw)
    with pytest.raises(InputError) as e:
        node_report(load_trace(path))
    p = e.value.problems[0]
    assert p.file.endswith("attempts.csv") and p.field == field and words in p.message
    assert p.row == (1 if field == "nodes" else 3)
    assert cli.main(["nodes", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"field '{field}'" in err and "Traceback" not in err


def test_cli_outputs(tmp_path, capsys):
    path = _trace(tmp_path)
    assert cli.main(["nodes", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [n["node"] for n in doc["nodes"]] == ["n1", "n2", "n3"] and doc["counted"] == 1
    assert cli.main(["nodes", str(path), "--csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("node,jobs,attempts,exposure_gpu_h")
    assert cli.main(["nodes", str(path)]) == 0
    out = capsys.readouterr().out
    assert "0 flagged node(s)" in out and "n3" in out
    assert "Concentration: the 3 node(s) with the most hold 100.0% of the interruptions." in out
    assert cli.main(["nodes", str(path), "--alpha", "2"]) == 2
    assert cli.main(["nodes", str(path), "--json", "--worst", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["concentration"]["worst"] == 1 and doc["concentration"]["share"] == pytest.approx(0.5)
    assert [p["node"] for p in doc["concentration"]["lorenz"]] == ["n3", "n1", "n2"]
    assert cli.main(["nodes", str(path), "--worst", "0"]) == 2


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 7.5]), min_size=1, max_size=30), st.integers(1, 40))
def test_concentration_and_lorenz_properties(counts, worst):
    """On SYNTHETIC per-node counts: the worst k hold the k largest counts (a plain sort, written apart), at least
    their proportional share, more as k grows; the Lorenz curve ends at 1 and is convex (fewest first)."""
    nodes = pl.DataFrame(
        {
            "node": [f"n{i:02d}" for i in range(len(counts))],
            "exposure_gpu_h": [1.0] * len(counts),
            "interruptions": counts,
            "flagged": [False] * len(counts),
        }
    )
    rep = NodeReport(nodes, (), 0.01, 0.01, 0.0, 0, 0.0, 0)
    total = sum(counts)
    got = rep.concentration(worst)
    if total == 0:
        assert got is None and rep.lorenz().height == 0
        return
    want = sum(sorted(counts, reverse=True)[:worst]) / total
    assert got == pytest.approx(want)
    assert got >= min(worst, len(counts)) / len(counts) - 1e-12
    assert rep.concentration(worst + 1) >= got - 1e-12
    shares = rep.lorenz()["interruption_share"].to_list()
    assert shares[-1] == pytest.approx(1.0)
    steps = [b - a for a, b in zip([0.0, *shares], shares)]
    assert all(y >= x - 1e-12 for x, y in zip(steps, steps[1:]))
