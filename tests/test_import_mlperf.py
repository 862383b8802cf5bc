"""The MLPerf importer on the bundled real logs (data/mlperf), against the logs' own numbers.

Expected values come from the logs themselves, read here with a few lines of
plain JSON parsing or with the mlperf-logging package's parser, compliance
checker and result summarizer, never from the importer; one log is worked
out by hand in the comments.
"""

from __future__ import annotations

import io
import json
import logging
import re
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from ettcore import cli
from ettcore.config import DATA_DIR
from ettcore.errors import TraceError
from ettcore.importers.mlperf import import_logs

MLPERF = DATA_DIR / "mlperf"
LOGS = sorted(MLPERF.glob("v*/*/*/*/result_*.txt"))
MS = 1e-3


def job_id_of(path: Path) -> str:
    return "/".join(path.relative_to(MLPERF).with_suffix("").parts)


def ett(argv: list[str]) -> int:
    """Run the ``ett`` command."""
    return cli.main(argv)


def raw_events(path: Path) -> list[dict]:
    """Every parseable ':::MLLOG' event of a file (rank prefixes cut), in file order."""
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        i = line.find(":::MLLOG ")
        if i < 0 or line.lstrip().startswith("+"):
            continue
        try:
            out.append(json.loads(line[i + len(":::MLLOG ") :]))
        except ValueError:
            pass
    return out


def official_start_stop_ms(path: Path) -> tuple[float, float]:
    """run_start/run_stop as the mlperf-logging result summarizer scores a run."""
    from mlperf_logging.compliance_checker import mlp_parser
    from mlperf_logging.result_summarizer import result_summarizer

    ruleset = path.relative_to(MLPERF).parts[0][1:] + ".0"
    loglines, _errors = mlp_parser.parse_file(str(path), ruleset=ruleset)
    return result_summarizer._query_run_start_stop(loglines)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("mlperf") / "trace"
    rc = ett(["import", "mlperf", *map(str, LOGS), "--out", str(out)])
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def summary(imported):
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = ett(["summarize", str(imported), "--json"])
    assert rc == 0
    return {j["job_id"]: j for j in json.loads(buf.getvalue())["jobs"]}


def test_every_bundled_log_is_imported_with_provenance(imported):
    assert len(LOGS) == 33
    meta = json.loads((imported / "trace.json").read_text())
    assert meta["synthetic"] is False
    assert len(meta["source_files"]) == 33
    report = json.loads((imported / "import_report.json").read_text())
    assert [Path(f["file"]).name for f in report["files"]] == [p.name for p in LOGS]
    assert (imported / "import_report.md").read_text().startswith("# Import report (mlperf)")
    manifest = (MLPERF / "MANIFEST.csv").read_text().splitlines()
    assert len(manifest) == 34  # header + one row a bundled log
    for p in LOGS:
        assert str(p.relative_to(MLPERF)) in "\n".join(manifest)


@pytest.mark.parametrize("path", LOGS, ids=job_id_of)
def test_summarize_agrees_with_the_logs_own_intervals(path, summary):
    """wall = run_stop - init_start, plus the time the log shows the job working after run_stop (its last block, epoch
    or eval event: the shutdown tail); TTS between run_start and the first logged training start; productive within the
    timed run."""
    job = summary[job_id_of(path)]
    ev = raw_events(path)
    init_start = min(e["time_ms"] for e in ev if e["key"] == "init_start")
    run_start, run_stop = official_start_stop_ms(path)
    run_stop += _after_stop(path) * 1000
    train_key = "block_start" if any(e["key"] == "block_start" for e in ev) else "epoch_start"
    first_train = min([e["time_ms"] for e in ev if e["key"] == train_key and e["time_ms"] >= run_start] + [run_stop])
    assert job["wall_s"] == pytest.approx((run_stop - init_start) / 1000, abs=2 * MS)
    assert (run_start - init_start) / 1000 - 2 * MS <= job["tts_s"] <= (first_train - init_start) / 1000 + 2 * MS
    assert 0 < job["productive_s"] <= (run_stop - run_start) / 1000 - _after_stop(path) + 2 * MS
    assert job["ett_pct"] == pytest.approx(100 * job["productive_s"] / job["wall_s"], rel=1e-9)
    assert job["nof"] == 0 and job["ttr_total_s"] == 0
    parts = job["productive_s"] + job["tts_s"] + job["ttr_total_s"] + job["in_training_loss_s"] + job["shutdown_tail_s"]
    assert parts == pytest.approx(job["wall_s"], abs=2 * MS)


def test_hand_checked_run_university_of_florida(summary):
    """v5.1 University-of-Florida dlrm_dcnv2 result_0 (45 lines), worked out from its time_ms values.

    init_start 1759854146565, run_start = epoch_start 1759854271313, run_stop 1759854467765.
    Six evaluations inside the one epoch, evaluating epoch_num 0.13..0.79 > 0 (mid-epoch, so training paused):
    294906-304698, 327714-337504, 360351-370116, 392978-402719, 425256-435014, 458018-467765
    = 9792 + 9790 + 9765 + 9741 + 9758 + 9747 = 58593 ms.
    wall = 467765 - 146565 = 321200 ms; TTS = 271313 - 146565 = 124748 ms;
    productive = (467765 - 271313) - 58593 = 137859 ms; ETT% = 137.859 / 321.2 = 42.920%.
    The last evaluation ends at run_stop: it is the shutdown tail (9.747 s); the other five are in-training loss.
    """
    job = summary["v5.1/University-of-Florida/hpg.dgxb200x8.n1/dlrm_dcnv2/result_0"]
    assert job["wall_s"] == pytest.approx(321.200, abs=MS)
    assert job["tts_s"] == pytest.approx(124.748, abs=MS)
    assert job["productive_s"] == pytest.approx(137.859, abs=MS)
    assert job["ett_pct"] == pytest.approx(42.920, abs=0.001)
    assert job["shutdown_tail_s"] == pytest.approx(9.747, abs=MS)
    assert job["in_training_loss_s"] == pytest.approx(58.593 - 9.747, abs=MS)
    assert job["gpus"] == 8


def _union(intervals: list[tuple[float, float]]) -> float:
    total, cur = 0.0, None
    for a, b in sorted(intervals):
        if cur is None or a > cur[1]:
            if cur:
                total += cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    return total + (cur[1] - cur[0] if cur else 0.0)


SINGLE_EPOCH = [
    p
    for p in LOGS
    if (
        lambda ev: (
            not any(e["key"] == "block_start" for e in ev)
            and len({e["metadata"].get("epoch_num") for e in ev if e["key"] == "epoch_start"}) == 1
        )
    )(raw_events(p))
]


@pytest.mark.parametrize("path", SINGLE_EPOCH, ids=job_id_of)
def test_single_epoch_runs_lose_exactly_their_evaluation_time(path, summary):
    """Runs trained as one epoch with evaluations inside (HugeCTR-style DLRM, BERT): the evaluations stop training.

    Expected productive time, from the raw lines: the epoch (earliest start, latest stop over ranks) clipped to
    [run_start, run_stop], less the union of evaluation intervals (each eval_start/eval_stop pair grouped by
    its epoch_num over ranks) that lie inside it.
    """
    ev = raw_events(path)
    run_start, run_stop = official_start_stop_ms(path)
    e0 = max(run_start, min(e["time_ms"] for e in ev if e["key"] == "epoch_start"))
    stops = [e["time_ms"] for e in ev if e["key"] == "epoch_stop"]
    e1 = min(run_stop, max(stops)) if stops else run_stop
    evals: dict = {}
    last = None
    for e in ev:
        if e["key"] in ("eval_start", "eval_stop"):
            # ranks print the same eval with the same epoch_num; a stop without one closes the last start
            k = json.dumps(e["metadata"]["epoch_num"]) if "epoch_num" in e["metadata"] else last
            last = k
            lo, hi = evals.get(k, (None, None))
            if e["key"] == "eval_start":
                lo = e["time_ms"] if lo is None else min(lo, e["time_ms"])
            else:
                hi = e["time_ms"] if hi is None else max(hi, e["time_ms"])
            evals[k] = (lo, hi)
    inside = [
        (max(a, e0), min(b if b is not None else run_stop, e1)) for a, b in evals.values() if a is not None and a < e1
    ]
    expected = ((e1 - e0) - _union([iv for iv in inside if iv[1] > iv[0]])) / 1000
    assert len(SINGLE_EPOCH) >= 15
    assert summary[job_id_of(path)]["productive_s"] == pytest.approx(expected, abs=5 * MS)


def test_concurrent_evaluation_keeps_training_productive(summary, imported):
    """v1.0 Google TPU DLRM: each eval runs while the next block trains (it evaluates the block before).

    Blocks that carry an evaluation are as long as those without (about 1.8 s), so the evaluation ran
    alongside.  Expected productive time: the union of the blocks inside [run_start, run_stop], evaluations
    not subtracted.
    """
    path = MLPERF / "v1.0/Google/tpu-v4-256-TF/dlrm/result_0.txt"
    ev = raw_events(path)
    run_start, run_stop = official_start_stop_ms(path)
    starts = {e["metadata"]["first_epoch_num"]: e["time_ms"] for e in ev if e["key"] == "block_start"}
    stops = {e["metadata"]["first_epoch_num"]: e["time_ms"] for e in ev if e["key"] == "block_stop"}
    blocks = [(max(a, run_start), min(stops[k], run_stop)) for k, a in starts.items() if a < run_stop]
    job = summary["v1.0/Google/tpu-v4-256-TF/dlrm/result_0"]
    assert job["productive_s"] == pytest.approx(_union(blocks) / 1000, abs=MS)
    report = json.loads((imported / "import_report.json").read_text())
    notes = next(f for f in report["files"] if f["file"].endswith("tpu-v4-256-TF/dlrm/result_0.txt"))["notes"]
    assert any("concurrent" in n["what"] and n["count"] == 18 for n in notes)
    assert any(
        n["kind"] == "inferred" and "after run_stop" in n["what"] for n in notes
    )  # two blocks logged after run_stop: the tail


def test_time_to_train_label_is_mlperfs_own_score():
    frames, _ = import_logs(LOGS)
    ttt = dict(zip(frames.jobs["job_id"], frames.jobs["time_to_train_s"]))
    for p in LOGS:
        start, stop = official_start_stop_ms(p)
        assert ttt[job_id_of(p)] == pytest.approx((stop - start) / 1000, abs=MS), p


def test_notebook_fields_are_complete():
    frames, _ = import_logs(LOGS)
    j = frames.jobs
    for col in (
        "benchmark",
        "round",
        "submitter",
        "system",
        "accelerators",
        "gpus",
        "accelerator_model",
        "time_to_train_s",
    ):
        assert j[col].null_count() == 0, col
    row = {r["job_id"]: r for r in j.iter_rows(named=True)}
    # 16 nodes x 8 GPUs, from the system description (no :::SYSJSON line in that log)
    r = row["v3.0/NVIDIA/dgxh100_n16_ngc23.04_merlin_hugectr/dlrm_dcnv2/result_0"]
    assert (r["accelerators"], r["gpus"], r["benchmark"], r["round"]) == (128, 128, "dlrm_dcnv2", "v3.0")
    assert r["accelerators_source"].startswith("system description")
    assert row["v4.0/NVIDIA/eos_n16_ngc24.04_merlin_hugectr/dlrm_dcnv2/result_0"]["accelerators_source"] == "SYSJSON"
    cpu = row["v3.1/Intel/4-nodes-SPR-pytorch/dlrm_dcnv2/result_0"]  # CPU-only: 4 nodes x 0 accelerators
    assert (cpu["accelerators"], cpu["gpus"]) == (0, 4)
    assert sum(1 for b in j["benchmark"] if b.startswith("dlrm")) == 21


def _notes(report, name):
    return next(f for f in report.files if f.file.endswith(name)).notes


def test_real_world_mess_is_reported():
    _, report = import_logs(LOGS)
    intel = _notes(report, "v2.1/Intel/4-nodes-SPR-pytorch/dlrm/result_0.txt")
    assert any(n.kind == "info" and "prefix" in n.what and n.count >= 90 for n in intel)
    assert any(n.kind == "merged" and "init_start" in n.what and n.count == 7 for n in intel)
    nv = _notes(report, "v1.0/NVIDIA/dgxa100_n14_ngc21.05_merlin_hugectr/dlrm/result_0.txt")
    assert (
        sum(n.count for n in nv if n.kind == "merged" and "eval_start" in n.what) == 20 * 13
    )  # 14 ranks print each of 20 evals
    tiny = _notes(report, "v4.0/tinycorp/tinybox_red/resnet/result_0.txt")
    assert any(n.kind == "corrected" and "'run_stop' logged as POINT_IN_TIME" in n.what for n in tiny)
    sd = _notes(report, "v4.0/NVIDIA/eos_n64_ngc24.04_nemo/stable_diffusion/result_0.txt")
    assert any(
        n.kind == "inferred" and "after run_stop" in n.what and 1661 in n.rows for n in sd
    )  # offline evals after run_stop: the tail
    assert any(
        n.kind == "info" and "out of time order" in n.why and 1678 in n.rows for n in sd
    )  # back-dated run_stop, last line
    maxtext = _notes(report, "v4.0/Google/cloud-tpu-v5p-12288-maxtext/gpt3/result_0.txt")
    assert any(n.kind == "inferred" and "'block_stop' without a matching 'block_start'" in n.what for n in maxtext)


# --- the mlperf-logging compliance checker, side by side -------------------------------------------------


def _compliance(path: Path, ruleset: str) -> tuple[bool, list[str]]:
    from mlperf_logging.compliance_checker import mlp_compliance

    logging.disable(logging.CRITICAL)
    try:
        mlp_compliance.enqueued_configs.clear()
        checker = mlp_compliance.make_checker("training", ruleset, False, False)
        ok = checker.check_file(str(path), f"training_{ruleset}/common.yaml")
        return ok, list(checker.overwritable.values()) + list(checker.not_overwritable) + list(
            checker.warnings.values()
        )
    finally:
        logging.disable(logging.NOTSET)


UF = MLPERF / "v5.1/University-of-Florida/hpg.dgxb200x8.n1/dlrm_dcnv2/result_0.txt"


def test_compliance_checker_accepts_every_bundled_log_the_importer_takes():
    for p in LOGS:
        ok, msgs = _compliance(p, p.relative_to(MLPERF).parts[0][1:] + ".0")
        assert ok, (p, msgs[:2])
        # where the checker warns of a repeated once-only key, the importer reports merging or dropping it
        for m in msgs:
            key = re.search(r"EXACTLY_ONE occurrence of '(\w+)'", m)
            if key and key.group(1) in ("init_stop", "run_start", "run_stop"):
                _, report = import_logs([p])
                assert any(key.group(1) in n.what for n in report.files[0].notes), (p, m)


def _mutate(tmp_path: Path, fn) -> Path:
    dst = tmp_path / "v5.1/University-of-Florida/hpg.dgxb200x8.n1/dlrm_dcnv2/result_0.txt"
    dst.parent.mkdir(parents=True)
    dst.write_text("\n".join(fn(UF.read_text().splitlines())) + "\n")
    shutil.copytree(MLPERF / "systems", tmp_path / "systems")
    return dst


def test_checker_and_importer_both_refuse_a_log_without_its_start(tmp_path):
    bad = _mutate(tmp_path, lambda ls: [ln for ln in ls if '"init_start"' not in ln and '"run_start"' not in ln])
    ok, msgs = _compliance(bad, "5.1.0")
    assert not ok and any("init_start" in m for m in msgs)
    with pytest.raises(TraceError) as exc:
        import_logs([bad])
    assert exc.value.problems[0].field == "init_start" and exc.value.problems[0].file == str(bad)


def test_checker_and_importer_both_flag_a_second_run_stop(tmp_path):
    def twice(ls):
        stop = next(ln for ln in ls if '"run_stop"' in ln)
        return ls + [stop.replace('"success"', '"aborted"').replace("1759854467765", "1759854469000")]

    bad = _mutate(tmp_path, twice)
    _ok, msgs = _compliance(bad, "5.1.0")  # the checker warns (EXACTLY_ONE, values all null) rather than fails
    assert any("EXACTLY_ONE occurrence of 'run_stop' but found 2" in m for m in msgs)
    frames, report = import_logs([bad])
    assert any(n.kind == "dropped" and "extra 'run_stop'" in n.what and n.rows == [46] for n in report.files[0].notes)
    assert frames.attempts["end_reason"].to_list() == ["completed"]  # the first (success) run_stop is the run's end


def test_checker_and_importer_both_flag_an_unparseable_line(tmp_path):
    bad = _mutate(tmp_path, lambda ls: ls[:10] + [ls[10][:60]] + ls[11:])  # line 11 cut mid-JSON
    ok, msgs = _compliance(bad, "5.1.0")
    assert not ok and any("parsing errors" in m for m in msgs)
    _, report = import_logs([bad])
    assert any(n.kind == "dropped" and "unparseable JSON" in n.what and n.rows == [11] for n in report.files[0].notes)


# --- bad input ------------------------------------------------------------------------------------------


def test_no_accelerator_count_is_an_error_naming_file_and_field(tmp_path):
    lone = tmp_path / "result_0.txt"
    shutil.copy(UF, lone)  # not under <round>/<submitter>/<system>/..., no systems folder, no :::SYSJSON line
    with pytest.raises(TraceError) as exc:
        import_logs([lone])
    assert exc.value.problems[0].file == str(lone) and exc.value.problems[0].field == "accelerators"


def test_cli_bad_inputs_exit_2_with_one_line_each(tmp_path, capsys):
    not_a_log = tmp_path / "notes.txt"
    not_a_log.write_text("hello\n")
    rc = ett(["import", "mlperf", str(not_a_log), str(tmp_path / "missing.txt"), "--out", str(tmp_path / "t")])
    assert rc == 2
    out = capsys.readouterr()
    lines = [ln for ln in (out.out + out.err).splitlines() if ln.startswith("ett:")]
    assert len(lines) == 2
    assert "notes.txt" in lines[0] and "'key'" in lines[0]
    assert "missing.txt" in lines[1] and "cannot read" in lines[1]
    assert not (tmp_path / "t").exists()


def test_systems_dir_option(tmp_path):
    systems = tmp_path / "sys"
    shutil.copytree(MLPERF / "systems", systems)
    desc = systems / "v5.1/University-of-Florida/hpg.dgxb200x8.n1.json"
    d = json.loads(desc.read_text())
    d["number_of_nodes"] = "2"
    desc.write_text(json.dumps(d))
    frames, _ = import_logs([UF], systems_dir=systems)
    assert frames.jobs["accelerators"].to_list() == [16]
    d["accelerators_per_node"] = "eight"
    desc.write_text(json.dumps(d))
    with pytest.raises(TraceError) as exc:
        import_logs([UF], systems_dir=systems)
    assert exc.value.problems[0].field == "accelerators_per_node" and re.search(
        r"hpg\.dgxb200x8\.n1\.json$", exc.value.problems[0].file
    )


# --- logs as submitters write them ----------------------------------------------------

BERT = MLPERF / "v3.0/NVIDIA/dgxh100_n64_ngc23.04_pytorch/bert/result_0.txt"
RESNET = MLPERF / "v3.0/NVIDIA/dgxh100_n96_ngc23.04_mxnet/resnet/result_0.txt"
SD = MLPERF / "v4.0/NVIDIA/eos_n64_ngc24.04_nemo/stable_diffusion/result_0.txt"
DELL = MLPERF / "v5.0/Dell/1xXE7745x4H200-NVL-141GB/dlrm_dcnv2/result_0.txt"
INTEL = MLPERF / "v2.1/Intel/4-nodes-SPR-pytorch/dlrm/result_0.txt"
TRAIN_FAMILIES = ("block", "epoch", "eval")


def _copy_log(src: Path, dst: Path, keep=lambda line: True) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join(ln for ln in src.read_text().splitlines() if keep(ln)) + "\n")
    return dst


def _summary_of(frames, report, tmp_path: Path, name: str = "t") -> tuple[dict, dict]:
    from ettcore import metric
    from ettcore.importers.frames import write_import
    from ettcore.trace import load_trace

    out = write_import(tmp_path / name, frames, report)
    rows = {r["job_id"]: r for r in metric.job_summary(load_trace(out)).iter_rows(named=True)}
    return rows, json.loads((out / "import_report.json").read_text())


def test_evaluation_results_without_intervals_are_reported():
    """v3.0 NVIDIA BERT logs 16 eval_accuracy results and no eval_start/eval_stop, all inside its one training block:
    the report says so (a warning: their time counts as training, ETT% is an upper bound), not 'evaluations: 0'."""
    _, report = import_logs([BERT])
    f = report.files[0]
    assert "16 results (eval_accuracy) without eval_start/eval_stop" in f.facts["evaluations"]
    warn = [n for n in f.notes if n.kind == "warning" and "eval_accuracy" in n.what]
    assert len(warn) == 1 and warn[0].count == 16 and "upper bound" in warn[0].why


def test_evaluation_results_bounded_by_training_stops_are_attributed(tmp_path):
    """v3.0 NVIDIA ResNet with its eval_start/eval_stop lines removed: each of its 14 eval_accuracy results follows an
    epoch_stop inside a block, so the evaluation is bounded by that stop and the result and attributed as eval.
    Expected from the raw lines: for each result, the last epoch_stop/block_stop after the last epoch_start/block_start
    before it; the importer's eval time is the sum of those bounds, and a few ms off the logged eval intervals."""
    log = _copy_log(
        RESNET,
        tmp_path / RESNET.relative_to(MLPERF),
        keep=lambda ln: '"eval_start"' not in ln and '"eval_stop"' not in ln,
    )
    shutil.copytree(MLPERF / "systems", tmp_path / "systems")
    ev = sorted(raw_events(log), key=lambda e: e["time_ms"])
    bounds = []
    for acc in (e for e in ev if e["key"] == "eval_accuracy"):
        t = acc["time_ms"]
        last_start = max(e["time_ms"] for e in ev if e["key"] in ("epoch_start", "block_start") and e["time_ms"] < t)
        stops = [
            e["time_ms"] for e in ev if e["key"] in ("epoch_stop", "block_stop") and last_start < e["time_ms"] <= t
        ]
        if stops and min(stops) < t - 5:  # (closer than 5 ms: one instant, not a bound)
            bounds.append((min(stops), t))
    assert len(bounds) == 14
    frames, report = import_logs([log])
    evals = frames.spans.filter(frames.spans["phase"] == "eval")
    assert evals.height == 14
    assert sorted(zip((evals["start"] * 1000).round(0), (evals["end"] * 1000).round(0))) == sorted(bounds)
    rows, rep = _summary_of(frames, report, tmp_path)
    logged = import_logs([RESNET])[0].spans
    logged_eval_s = float(
        (logged.filter(logged["phase"] == "eval")["end"] - logged.filter(logged["phase"] == "eval")["start"]).sum()
    )
    assert abs(sum(b - a for a, b in bounds) / 1000 - logged_eval_s) < 14 * 0.05
    acc = rep["files"][0]["time_accounting"][job_id_of(RESNET)]
    assert any(r["category"] == "inferred" and "eval_accuracy" in r["what"] for r in acc["rows"])


def _after_stop(path: Path) -> float:
    """Seconds from run_stop to the last block/epoch/eval event logged after it (0 if none), from the raw lines."""
    ev = raw_events(path)
    _, stop = official_start_stop_ms(path)
    keys = {f"{f}_{edge}" for f in TRAIN_FAMILIES for edge in ("start", "stop")}
    late = [e["time_ms"] for e in ev if e["key"] in keys and e["time_ms"] > stop]
    return (max(late) - stop) / 1000 if late else 0.0


def test_time_after_run_stop_is_the_shutdown_tail(summary, imported):
    """v4.0 NVIDIA Stable Diffusion evaluates checkpoints for 300.0 s after run_stop (blocks and evals logged, their
    results up to 307.6 s): the job held its hardware until the last interval event, so the attempt ends there, the
    time is a shutdown span and the shutdown tail, and the report lists it as time after run_stop (the later result
    lines as time not in the wall)."""
    after = _after_stop(SD)
    assert after == pytest.approx(300.0, abs=0.1)
    job = summary[job_id_of(SD)]
    ev = raw_events(SD)
    init_start = min(e["time_ms"] for e in ev if e["key"] == "init_start")
    _, stop = official_start_stop_ms(SD)
    assert job["wall_s"] == pytest.approx((stop - init_start) / 1000 + after, abs=2 * MS)
    assert (
        job["components"]["shutdown"] == pytest.approx(after, abs=2 * MS) and job["shutdown_tail_s"] >= after - 2 * MS
    )
    report = json.loads((imported / "import_report.json").read_text())
    f = next(f for f in report["files"] if f["file"].endswith(str(SD.relative_to(MLPERF))))
    rows = f["time_accounting"][job_id_of(SD)]["rows"]
    assert sum(r["seconds"] for r in rows if "after run_stop" in r["what"]) == pytest.approx(after, abs=2 * MS)
    assert f["facts"]["after_run_stop_s"] == pytest.approx(after, abs=MS)
    late = f["time_accounting"][job_id_of(SD)]["outside"]
    assert [r["category"] for r in late] == ["after stop"] and late[0]["seconds"] == pytest.approx(307.6, abs=0.1)


def test_a_line_dated_a_day_after_run_stop_is_not_run_time(summary, imported):
    """v2.1 Intel DLRM: its first line (a configuration value) is dated 28.8 h after run_stop.  Only interval events
    extend a run; this one is reported, with its lateness, as after the stop and not in the wall time."""
    job = summary[job_id_of(INTEL)]
    assert job["wall_s"] < 3600
    report = json.loads((imported / "import_report.json").read_text())
    f = next(f for f in report["files"] if f["file"].endswith(str(INTEL.relative_to(MLPERF))))
    outside = f["time_accounting"][job_id_of(INTEL)]["outside"]
    late = [r for r in outside if r["category"] == "after stop"]
    assert late and max(r["seconds"] for r in late) == pytest.approx(103687.6, abs=0.1) and 1 in late[0]["lines"]


def test_system_description_conflict_is_a_warning_and_gpus_overrides(tmp_path, capsys):
    """v5.0 Dell 1xXE7745x4H200: the log's SYSJSON says 1 x 8 accelerators, the published system description (and the
    system's name, x4 H200) 1 x 4.  The published description is used, with a warning in the report and in what
    `ett import` prints; --gpus overrides both."""
    frames, report = import_logs([DELL])
    assert frames.jobs["gpus"].to_list() == [4] and frames.jobs["accelerators"].to_list() == [4]
    assert any(n.kind == "warning" and "8" in n.why and "4" in n.why for n in report.files[0].notes)
    rc = ett(["import", "mlperf", str(DELL), "--out", str(tmp_path / "t")])
    out = capsys.readouterr()
    assert rc == 0 and "warning 1" in out.out and "SYSJSON says 1x8" in out.err
    frames, report = import_logs([DELL], gpus=8)
    assert frames.jobs["gpus"].to_list() == [8]
    assert any(n.kind == "inferred" and "--gpus" in n.why for n in report.files[0].notes)
    frames, _ = import_logs([DELL, UF], gpus={str(DELL): 2})  # --gpus LOG=N: one log only
    assert dict(zip(frames.jobs["job_id"], frames.jobs["gpus"])) == {job_id_of(DELL): 2, job_id_of(UF): 8}


def test_log_outside_the_layout_with_systems_folder(tmp_path):
    """A log in <folder>/<system>/<benchmark>/ (no round): --systems DIR is searched recursively for <system>.json."""
    log = _copy_log(UF, tmp_path / "runs/hpg.dgxb200x8.n1/dlrm_dcnv2/result_0.txt")
    frames, report = import_logs([log], systems_dir=MLPERF / "systems")
    assert frames.jobs["gpus"].to_list() == [8]
    assert report.files[0].facts["accelerators"].endswith("hpg.dgxb200x8.n1.json)")


def test_log_in_the_results_repository_layout(tmp_path):
    """training_results_v5.1/<submitter>/results/<system>/<benchmark>/result_0.txt with
    <submitter>/systems/<system>.json, as the MLCommons repositories hold them: imported without --systems; round,
    submitter and system from the path."""
    root = tmp_path / "training_results_v5.1/University-of-Florida"
    log = _copy_log(UF, root / "results/hpg.dgxb200x8.n1/dlrm_dcnv2/result_0.txt")
    (root / "systems").mkdir()
    shutil.copy(MLPERF / "systems/v5.1/University-of-Florida/hpg.dgxb200x8.n1.json", root / "systems")
    frames, _ = import_logs([log])
    j = frames.jobs.row(0, named=True)
    assert (j["round"], j["submitter"], j["system"], j["gpus"]) == (
        "v5.1",
        "University-of-Florida",
        "hpg.dgxb200x8.n1",
        8,
    )


def test_no_system_description_names_the_paths_tried_and_gpus_imports(tmp_path):
    lone = _copy_log(UF, tmp_path / "lone/result_0.txt")
    with pytest.raises(TraceError) as exc:
        import_logs([lone], systems_dir=tmp_path / "nowhere")
    (p,) = exc.value.problems
    assert (
        p.file == str(lone)
        and p.field == "accelerators"
        and "tried" in p.message
        and str(tmp_path / "nowhere") in p.message
    )
    frames, report = import_logs([lone], gpus=8)
    assert frames.jobs["gpus"].to_list() == [8]


def test_folder_arguments_are_searched_recursively(tmp_path, capsys):
    rc = ett(
        [
            "import",
            "mlperf",
            str(MLPERF / "v5.1"),
            str(MLPERF / "v3.0/NVIDIA/dgxh100_n16_ngc23.04_merlin_hugectr"),
            "--out",
            str(tmp_path / "t"),
        ]
    )
    assert rc == 0, capsys.readouterr()
    meta = json.loads((tmp_path / "t" / "trace.json").read_text())
    assert len(meta["source_files"]) == 5 and all(Path(f).name.startswith("result_") for f in meta["source_files"])
    (tmp_path / "empty").mkdir()
    rc = ett(["import", "mlperf", str(tmp_path / "empty"), "--out", str(tmp_path / "u")])
    err = capsys.readouterr()
    assert rc == 2 and str(tmp_path / "empty") in err.out + err.err and "result_*.txt" in err.out + err.err


def test_time_to_train_and_submission_grouping_in_the_summary(imported, capsys):
    """MLPerf's score is a job field of `ett summarize --json`; result_0 and result_1 of one submission share a
    `submission` label, so their spread can be shown (ettcore.importers.mlperf.submission_spread)."""
    from ettcore.importers.mlperf import submission_spread

    assert ett(["summarize", str(imported), "--json"]) == 0
    jobs = {j["job_id"]: j for j in json.loads(capsys.readouterr().out)["jobs"]}
    for p in LOGS:
        start, stop = official_start_stop_ms(p)
        assert jobs[job_id_of(p)]["labels"]["time_to_train_s"] == pytest.approx((stop - start) / 1000, abs=MS)
    sub = "v3.0/NVIDIA/dgxh100_n16_ngc23.04_merlin_hugectr/dlrm_dcnv2"
    pair = [j for j in jobs.values() if j["labels"]["submission"] == sub]
    assert sorted(j["labels"]["result"] for j in pair) == [0, 1]
    from ettcore import metric
    from ettcore.trace import load_trace

    spread = submission_spread(metric.job_summary(load_trace(imported)))
    row = spread.row(0, named=True)
    assert spread.height == 1 and row["submission"] == sub and row["runs"] == 2
    ttt = sorted(j["labels"]["time_to_train_s"] for j in pair)
    ett_pct = sorted(j["ett_pct"] for j in pair)
    assert (row["time_to_train_min_s"], row["time_to_train_max_s"]) == pytest.approx(tuple(ttt))
    assert (row["ett_min_pct"], row["ett_max_pct"]) == pytest.approx(tuple(ett_pct))


@pytest.mark.parametrize("path", LOGS, ids=job_id_of)
def test_every_second_of_wall_time_is_accounted(path, summary, imported):
    """The import report's time accounting of each run adds up to the wall time `ett summarize` measures; its 'no span'
    row is the metric's unattributed time; what is not from a logged event pair is listed as inferred."""
    job = summary[job_id_of(path)]
    report = json.loads((imported / "import_report.json").read_text())
    f = next(f for f in report["files"] if f["file"].endswith(str(path.relative_to(MLPERF))))
    acc = f["time_accounting"][job_id_of(path)]
    by = {}
    for r in acc["rows"]:
        by[r["category"]] = by.get(r["category"], 0) + r["seconds"]
    assert acc["wall_s"] == pytest.approx(job["wall_s"], abs=2 * MS)
    assert sum(by.values()) == pytest.approx(job["wall_s"], abs=5 * MS)
    assert by.get("no span", 0) == pytest.approx(job["components"]["unattributed"], abs=5 * MS)
    assert set(by) <= {"explicit", "inferred", "no span"}  # one attempt: nothing between attempts
    tail = sum(r["seconds"] for r in acc["rows"] if "after run_stop" in r["what"])
    assert tail == pytest.approx(_after_stop(path), abs=2 * MS)
