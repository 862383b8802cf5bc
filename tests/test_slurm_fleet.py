"""The bundled Slurm campaign (data/slurm-fleet): real sacct exports and recorder files, checked without Slurm.

These are recorded outputs of a real cluster: they back the importer's checks on
real data; the live cluster itself is tested in ``tests/test_slurm_integration.py``.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
import slurm_oracle  # tests/slurm_oracle.py

from ettcore import bundled
from ettcore.importers.frames import write_import
from ettcore.importers.recorder import collect
from ettcore.importers.slurm import import_sacct
from tools.campaigns.slurm_fleet import plan

FLEET = bundled.SLURM_FLEET


@pytest.fixture(scope="module")
def imports(tmp_path_factory):
    out = {}
    for form in ("sacct.txt", "sacct.json"):
        frames, report = import_sacct([FLEET / form], recorder_dir=FLEET / "recorder", relative_to=FLEET)
        out[form] = (
            frames,
            report,
            write_import(tmp_path_factory.mktemp(form.replace(".", "-")) / "trace", frames, report),
        )
    return out


def test_both_forms_give_the_same_trace(imports):
    (a, _, _), (b, _, _) = imports["sacct.txt"], imports["sacct.json"]
    assert a.attempts.height == 66 and a.jobs.height == 46
    # the causes differ where only the text form says: Slurm 22.05's JSON has no exit codes (every job's is 0), so a
    # FAILED run's user error (a non-zero status) is unknown there; every other column is the same
    assert a.attempts.drop("cause").equals(b.attempts.drop("cause"))
    assert a.spans.equals(b.spans)
    assert a.jobs.equals(b.jobs)
    # by hand from sacct.txt (allocation rows): 2 FAILED 1:0 + 10 REQUEUED 42:0 (RequeueExit) user errors, 4 NODE_FAIL,
    # 6 PREEMPTED, 1 TIMEOUT; 42 COMPLETED and 1 CANCELLED have none
    text, js = a.attempts["cause"].value_counts().sort("cause"), b.attempts["cause"].value_counts().sort("cause")
    assert dict(text.iter_rows()) == {None: 43, "node_failure": 4, "preemption": 6, "time_limit": 1, "user_error": 12}
    assert dict(js.iter_rows())[None] == 43 and dict(js.iter_rows()).get("user_error", 0) < 12


def test_cross_check_against_sacct(imports):
    table, diffs = slurm_oracle.cross_check(FLEET / "sacct.txt", imports["sacct.txt"][2])
    assert not diffs, diffs
    assert all(n == k == 46 for n, k in table.values()), table


def test_every_recorded_span_inside_its_run(imports):
    frames, report, trace = imports["sacct.txt"]
    assert slurm_oracle.spans_outside(trace, FLEET / "sacct.txt") == []
    raw = collect(FLEET / "recorder").spans
    assert slurm_oracle.spans_outside(trace, FLEET / "sacct.txt", tolerance_s=2.0, spans=raw) == []
    facts = report.files[-1].facts
    assert facts["kept"] == raw.height and facts["jobs with spans"] == 46
    assert facts["outside their run beyond the tolerance (dropped)"] == 0


def test_bundled_trace_is_what_the_importer_gives(imports):
    frames, report, trace = imports["sacct.txt"]
    for table in ("attempts", "spans", "jobs"):
        bundled = pl.read_parquet(FLEET / "trace" / f"{table}.parquet")
        assert bundled.equals(pl.read_parquet(trace / f"{table}.parquet")), table
    assert (FLEET / "trace" / "import_report.md").read_text() == report.to_markdown()
    meta = json.loads((FLEET / "trace" / "trace.json").read_text())
    assert meta["synthetic"] is False and meta["measured"] is True


def test_the_campaign_did_what_the_issue_asks(imports):
    frames = imports["sacct.txt"][0]
    rows = slurm_oracle.read_sacct_text(FLEET / "sacct.txt")
    states = [r["State"].split()[0] for j in rows.values() for r in j.rows]
    counts = {s: states.count(s) for s in set(states)}
    assert len(rows) >= 40 and counts["PREEMPTED"] >= 3 and counts["REQUEUED"] >= 5 and counts["NODE_FAIL"] >= 1
    # every NODE_FAIL run of a requeueable job was followed by another run
    for j in rows.values():
        for k, r in enumerate(j.rows):
            if r["State"] == "NODE_FAIL":
                assert k + 1 < len(j.rows), j.job_id
    variants = frames.jobs.group_by("variant").len().sort("variant")
    assert variants.rows() == [("baseline", 23), ("optimized", 23)]
    assert sum(p.array_tasks or 1 for p in plan()) == len(rows) == 46
    # requeued by RequeueExit (their own crash): failures; preempted: preemptions
    reasons = frames.attempts["end_reason"].value_counts().sort("end_reason")
    assert dict(reasons.rows()) == {"completed": 42, "failure": 17, "preemption": 6, "cancelled": 1}


def test_crashed_jobs_resumed_from_their_checkpoint():
    """The training loop's own step log: after the crash at step 350, the next run that trained started at step 301."""
    gt = bundled.slurm_campaign(FLEET).ground_truth
    crashed = {k: v for k, v in gt.items() if v["crashed_at_steps"] == [350]}
    assert len(crashed) == 10
    for name, v in crashed.items():
        runs = sorted(((int(a), r) for a, r in v["attempts"].items()))
        assert runs[0][1]["last_step"] == 350, name
        assert runs[1][1]["first_step"] == 301, name  # checkpoint every 100 steps: resumed from step 300
        assert runs[-1][1]["last_step"] == 600, name


def test_readme_states_the_campaign():
    text = (FLEET / "README.md").read_text()
    c = bundled.slurm_campaign(FLEET)
    rows = slurm_oracle.read_sacct_text(FLEET / "sacct.txt")
    n_rows = sum(len(j.rows) for j in rows.values())
    assert c.slurm_version.split()[-1] in text and f"{len(rows)} real PyTorch training jobs ({n_rows} runs)" in text
    states = [r["State"].split()[0] for j in rows.values() for r in j.rows]
    for s in set(states):
        assert f"{s} {states.count(s)}" in text, s
    assert "$ETT_SLURM_DIR" in c.slurm_config["slurm.conf"] and "/tmp/" not in json.dumps(c.slurm_config)
