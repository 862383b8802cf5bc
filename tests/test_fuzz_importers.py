"""Fuzzing the importers: mangled MLPerf logs, goodput entries and sacct exports end in a trace or a clear error.

Starting points: two small bundled MLPerf Training result logs (real published
logs, see ``data/mlperf/MANIFEST.csv``), a SYNTHETIC timeline of
ml-goodput-measurement recorder entries written out below, and the real sacct
exports of the bundled Slurm campaign (``data/slurm-fleet``).  Each case mutates
lines (truncated or corrupt JSON, hostile values for times, keys, steps and
metadata, deleted, duplicated and shuffled lines, non-UTF-8 bytes, huge
lines, truncated files) and imports the result.  What a run may end in:

* a :class:`TraceError` whose problems name the source file and, for a line
  problem, a line inside it;
* or a trace, for which: the written folder holds the import report, the
  loader accepts the trace *as written* (an importer never writes a trace the
  loader refuses), every table's rows are all read and used, and every line
  the mutation made unreadable is accounted for in the import report (MLPerf:
  a ``dropped`` note listing it; goodput: an error naming it);
* never any other exception.

``ETT_FUZZ_EXAMPLES`` scales the number of cases, ``ETT_FUZZ_RANDOM=1`` explores
new ones (see ``tests/test_fuzz_loaders.py``).
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_loaders import BAD_INPUTS, HOSTILE_BYTES, HOSTILE_TEXT, fuzz_settings, log_corpus_entries

from ettcore import metric
from ettcore.config import DATA_DIR
from ettcore.errors import TraceError
from ettcore.importers.frames import write_import
from ettcore.importers.goodput import import_entries
from ettcore.importers.import_report import REPORT_JSON, REPORT_MD
from ettcore.importers.mlperf import import_logs
from ettcore.importers.slurm import import_sacct
from ettcore.trace import load_trace

MLPERF_DIR = DATA_DIR / "mlperf"
SYSTEMS = MLPERF_DIR / "systems"
MLPERF_LOGS = [
    "v5.1/University-of-Florida/hpg.dgxb200x8.n1/dlrm_dcnv2/result_0.txt",
    "v4.1/NVIDIA/b200_preview_merlin_hugectr/dlrm_dcnv2/result_0.txt",
]
UNREADABLE_JSON_NOTE = "MLLOG line with unparseable JSON"


def hostile_json_values() -> st.SearchStrategy:
    """Values that go into a JSON document (as JSON text): numbers of every size, text, structures."""
    return st.one_of(
        st.sampled_from(
            [
                "1e300",
                "-1e300",
                "0",
                "-1",
                "1e15",
                "7.3e12",
                "1e-300",
                "NaN",
                "Infinity",
                "-Infinity",
                "null",
                "true",
                "[]",
                "{}",
                "[1, 2]",
                '{"a": null}',
                "4102444800001",
                "946684799999",
                "123456789012345678901234567890",
            ]
        ),
        st.sampled_from(HOSTILE_TEXT).map(json.dumps),
        st.integers(-(2**70), 2**70).map(str),
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
    )


def _check_outcome(run, sources: list[Path], out_dir: Path, lines: dict[Path, int]) -> tuple[str, Any]:
    """Run an import (``run()`` -> frames, report) and check what it ended in."""
    try:
        frames, report = run()
    except TraceError as exc:
        allowed = {str(p) for p in sources}
        for p in exc.problems:
            assert p.file, p
            assert p.file in allowed or p.file.startswith(str(SYSTEMS)) or p.file == "--gpus", (
                f"problem names another file: {p}"
            )
            if p.row is not None and p.file in allowed:
                assert 1 <= p.row <= lines[Path(p.file)], (
                    f"line {p.row} is not in {p.file} ({lines[Path(p.file)]} lines): {p}"
                )
        return "error", exc
    out = write_import(out_dir, frames, report)
    assert (out / REPORT_JSON).is_file() and (out / REPORT_MD).is_file()
    assert json.loads((out / "trace.json").read_text())["synthetic"] in (True, False)
    try:
        trace = load_trace(out)
        jobs = metric.job_summary(trace)
    except TraceError as exc:
        pytest.fail(f"the importer wrote a trace the loader refuses: {[p.line() for p in exc.problems[:5]]}")
    assert jobs.height == frames.jobs.height, "an imported job is missing from the summary"
    for name, df in (("jobs", frames.jobs), ("attempts", frames.attempts), ("spans", frames.spans)):
        acc = trace.accounting[name]
        assert acc["read"] == acc["used"] == df.height and acc["rejected"] == 0, (name, acc)
    return "trace", json.loads((out / REPORT_JSON).read_text())


# ----------------------------------------------------------------------------- MLPerf logs


def _mlperf_copy(rel: str, root: Path) -> Path:
    dst = root / rel
    dst.parent.mkdir(parents=True)
    shutil.copyfile(MLPERF_DIR / rel, dst)
    return dst


def _corrupt_json(line: str, rng: random.Random) -> str:
    """Keep the ':::MLLOG' token, cut the JSON after it (what interleaved output from two ranks looks like)."""
    k = line.index(":::MLLOG") + len(":::MLLOG")
    body = line[k:]
    return line[:k] + body[: rng.randint(2, max(2, len(body) - 2))]


@st.composite
def mlperf_mutation(draw, lines: list[str]) -> tuple[list[str] | bytes, set[int]]:
    """(mutated lines or raw bytes, 1-based numbers of the lines made unreadable JSON)."""
    lines = list(lines)
    rng = random.Random(draw(st.integers(0, 2**32)))
    kind = draw(
        st.sampled_from(
            [
                "corrupt_json",
                "hostile_time",
                "hostile_key",
                "hostile_value",
                "hostile_metadata",
                "delete",
                "duplicate",
                "shuffle",
                "insert_bytes",
                "truncate",
                "huge_line",
                "swap_keys",
            ]
        )
    )
    events = [i for i, line in enumerate(lines) if ":::MLLOG" in line and not line.lstrip().startswith("+")]
    picked = sorted(draw(st.lists(st.sampled_from(events), min_size=1, max_size=4, unique=True)))
    unreadable: set[int] = set()
    if kind == "corrupt_json":
        for i in picked:
            lines[i] = _corrupt_json(lines[i], rng)
            unreadable.add(i + 1)
    elif kind in ("hostile_time", "hostile_key", "hostile_value", "hostile_metadata"):
        field = {
            "hostile_time": "time_ms",
            "hostile_key": "key",
            "hostile_value": "value",
            "hostile_metadata": "metadata",
        }[kind]
        for i in picked:
            k = lines[i].index(":::MLLOG") + len(":::MLLOG")
            try:
                d = json.loads(lines[i][k:])
            except ValueError:
                continue
            if kind == "hostile_metadata" and isinstance(d.get("metadata"), dict) and d["metadata"]:
                sub = draw(
                    st.sampled_from(sorted(d["metadata"]) + ["samples_count", "epoch_num", "first_epoch_num", "status"])
                )
                d["metadata"][sub] = "\x00PLACEHOLDER\x00"
            else:
                d[field] = "\x00PLACEHOLDER\x00"
            lines[i] = (
                lines[i][:k] + " " + json.dumps(d).replace('"\\u0000PLACEHOLDER\\u0000"', draw(hostile_json_values()))
            )
    elif kind == "delete":
        for i in reversed(picked):
            del lines[i]
    elif kind == "duplicate":
        for i in reversed(picked):
            lines.insert(rng.randint(0, len(lines)), lines[i])
    elif kind == "shuffle":
        rng.shuffle(lines)
    elif kind == "swap_keys":  # a start printed as a stop and the other way round
        for i in picked:
            lines[i] = lines[i].replace("_start", "_TMP_").replace("_stop", "_start").replace("_TMP_", "_stop")
    elif kind == "huge_line":
        lines.insert(
            picked[0], ":::MLLOG " + json.dumps({"key": "x" * 200_000, "time_ms": 1.7e12, "value": "y" * 200_000})
        )
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if kind == "insert_bytes":
        k = draw(st.integers(0, len(data)))
        return data[:k] + draw(st.sampled_from(HOSTILE_BYTES + [b"\x00" * 8, b"\r"])) + data[k:], unreadable
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data)))], unreadable
    return lines, unreadable


@fuzz_settings(25)
@given(data=st.data(), which=st.sampled_from(MLPERF_LOGS))
def test_mlperf_mutated_log(data, which):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        path = _mlperf_copy(which, root / "logs")
        original = path.read_text(encoding="utf-8").splitlines()
        mutated, unreadable = data.draw(mlperf_mutation(original))
        path.write_bytes(mutated if isinstance(mutated, bytes) else ("\n".join(mutated) + "\n").encode("utf-8"))
        n_lines = len(path.read_bytes().decode("utf-8", "replace").splitlines())
        got, detail = _check_outcome(
            lambda: import_logs([path], systems_dir=SYSTEMS), [path], root / "out", {path: n_lines}
        )
        if got == "trace" and unreadable:
            notes = [
                n
                for f in detail["files"]
                for n in f["notes"]
                if n["kind"] == "dropped" and n["what"] == UNREADABLE_JSON_NOTE
            ]
            listed = {r for n in notes for r in n["rows"]}
            assert unreadable <= listed, (
                f"corrupt lines {sorted(unreadable)} not all reported as dropped ({sorted(listed)})"
            )


def test_mlperf_corrupt_lines_are_counted_exactly(tmp_path):
    """Accounting: k corrupt event lines -> the 'dropped' count grows by exactly k, naming those lines."""
    path = _mlperf_copy(MLPERF_LOGS[1], tmp_path / "logs")
    _, base = import_logs([path], systems_dir=SYSTEMS)
    base_rows = {r for n in base.files[0].notes if n.what == UNREADABLE_JSON_NOTE for r in n.rows}
    lines = path.read_text(encoding="utf-8").splitlines()
    events = [i for i, line in enumerate(lines) if ":::MLLOG" in line and '"key": "eval_accuracy"' in line]
    assert events, "the chosen log has eval_accuracy lines"
    rng = random.Random(5)
    for i in events[:3]:
        lines[i] = _corrupt_json(lines[i], rng)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, rep = import_logs([path], systems_dir=SYSTEMS)
    notes = [n for n in rep.files[0].notes if n.what == UNREADABLE_JSON_NOTE]
    assert sum(n.count for n in notes) == len(base_rows) + 3
    assert {r for n in notes for r in n.rows} == base_rows | {i + 1 for i in events[:3]}


def test_mlperf_not_a_log(tmp_path):
    for name, content in (
        ("empty.txt", b""),
        ("binary.txt", bytes(range(256)) * 20),
        ("csv.txt", b"a,b\n1,2\n"),
        ("passwd.txt", Path("/etc/hostname").read_bytes() if Path("/etc/hostname").exists() else b"host\n"),
    ):
        p = tmp_path / name
        p.write_bytes(content)
        with pytest.raises(TraceError) as info:
            import_logs([p], systems_dir=SYSTEMS)
        assert info.value.problems[0].file == str(p)


# ----------------------------------------------------------------------------- goodput recorder entries

T0 = 1_767_571_200.0  # 2026-01-05 00:00:00 UTC
GP_JOB = "gp-fuzz"


def goodput_entries() -> list[dict]:
    """A SYNTHETIC recorder timeline: two attempts, start-up phases, steps, an evaluation, a checkpoint save,
    a job end."""
    e: list[dict] = []
    for a, t in ((0, T0), (1, T0 + 400)):
        e += [
            {"job_name": GP_JOB, "job_start_time": t},
            {"job_name": GP_JOB, "tpu_init_start_time": t + 1},
            {"job_name": GP_JOB, "tpu_init_end_time": t + 11},
            {"job_name": GP_JOB, "training_prep_start_time": t + 11},
            {"job_name": GP_JOB, "training_prep_end_time": t + 21},
            {"job_name": GP_JOB, "data_loading_start_time": t + 21},
            {"job_name": GP_JOB, "data_loading_end_time": t + 25},
        ]
        first = 0 if a == 0 else 6
        for k in range(first, first + 10):
            e.append({"job_name": GP_JOB, "step_count": k, "step_start_time": t + 30 + 10 * (k - first)})
        e.append(
            {
                "job_name": GP_JOB,
                "custom_badput_event_type": "eval",
                "custom_badput_event_start_time": t + 140,
                "custom_badput_event_end_time": t + 150,
            }
        )
        e.append(
            {
                "job_name": GP_JOB,
                "step": 8,
                "event_type": "save",
                "checkpoint_manager_blocking_start_time": t + 150,
                "checkpoint_manager_blocking_duration_secs": 3.0,
            }
        )
    e.append({"job_name": GP_JOB, "job_end_time": T0 + 600})
    return e


@st.composite
def goodput_mutation(draw, entries: list[dict]) -> tuple[bytes, set[int]]:
    """(file bytes, 1-based lines made unreadable)."""
    lines = [json.dumps(e) for e in entries]
    rng = random.Random(draw(st.integers(0, 2**32)))
    kind = draw(
        st.sampled_from(
            [
                "hostile_value",
                "hostile_value",
                "delete",
                "duplicate",
                "shuffle",
                "corrupt_json",
                "insert_bytes",
                "truncate",
                "extra_key",
                "wrap_payload",
            ]
        )
    )
    picked = sorted(draw(st.lists(st.integers(0, len(lines) - 1), min_size=1, max_size=3, unique=True)))
    unreadable: set[int] = set()
    if kind == "hostile_value":
        for i in picked:
            d = json.loads(lines[i])
            key = draw(st.sampled_from(sorted(d)))
            d[key] = "\x00PLACEHOLDER\x00"
            lines[i] = json.dumps(d).replace('"\\u0000PLACEHOLDER\\u0000"', draw(hostile_json_values()))
    elif kind == "extra_key":
        for i in picked:
            d = json.loads(lines[i])
            d[
                draw(
                    st.sampled_from(
                        ["x'); DROP TABLE spans; --", "*", "../../etc/passwd", "step_count", "job_end_time"]
                    )
                )
            ] = 1.0
            lines[i] = json.dumps(d)
    elif kind == "wrap_payload":  # as exported from Cloud Logging
        lines = [json.dumps({"jsonPayload": json.loads(line), "severity": "INFO"}) for line in lines]
    elif kind == "delete":
        for i in reversed(picked):
            del lines[i]
    elif kind == "duplicate":
        for i in reversed(picked):
            lines.insert(rng.randint(0, len(lines)), lines[i])
    elif kind == "shuffle":
        rng.shuffle(lines)
    elif kind == "corrupt_json":
        for i in picked:
            lines[i] = lines[i][: rng.randint(1, len(lines[i]) - 1)]
            unreadable.add(i + 1)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if kind == "insert_bytes":
        k = draw(st.integers(0, len(data)))
        data = data[:k] + draw(st.sampled_from(HOSTILE_BYTES + [b"\x00", b"\n{", b"}"])) + data[k:]
    elif kind == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    return data, unreadable


def test_goodput_base_timeline_imports():
    """The unmutated SYNTHETIC timeline imports cleanly (so the fuzz cases start from a valid input)."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "entries.jsonl"
        src.write_text("".join(json.dumps(e) + "\n" for e in goodput_entries()))
        got, _ = _check_outcome(
            lambda: import_entries(src, synthetic=True), [src], Path(d) / "out", {src: len(goodput_entries())}
        )
        assert got == "trace"


@fuzz_settings(25)
@given(data=st.data())
def test_goodput_mutated_entries(data):
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "entries.jsonl"
        raw, unreadable = data.draw(goodput_mutation(goodput_entries()))
        src.write_bytes(raw)
        n_lines = len(raw.decode("utf-8", "replace").splitlines())
        got, detail = _check_outcome(
            lambda: import_entries(src, synthetic=True), [src], Path(d) / "out", {src: n_lines}
        )
        if unreadable:
            assert got == "error", "corrupt lines were imported without a word"
            named = {p.row for p in detail.problems}
            assert unreadable <= named, (
                f"corrupt lines {sorted(unreadable)}; the error names {sorted(r for r in named if r)}"
            )


@pytest.mark.parametrize("gpus", [0, -1, True, 1.5, "8"])
def test_goodput_gpus_option_refused(tmp_path, gpus):
    src = tmp_path / "entries.jsonl"
    src.write_text("".join(json.dumps(e) + "\n" for e in goodput_entries()))
    with pytest.raises(TraceError) as info:
        import_entries(src, gpus=gpus)
    assert info.value.problems[0].field == "gpus"


# ----------------------------------------------------------------------------- regressions found by the fuzzers


@pytest.mark.parametrize("key", ["run_stop", "init_start", "eval_stop"])
@pytest.mark.parametrize("time_ms", ["1e15", "1e300", "7.3e12", "4102444800001", "-5"])
def test_mlperf_out_of_range_times(tmp_path, key, time_ms):
    """A timing event in the year 2201 or 33658: a clear error or a trace the loader accepts, never a traceback."""
    path = _mlperf_copy(MLPERF_LOGS[0], tmp_path / "logs")
    lines = path.read_text(encoding="utf-8").splitlines()
    hits = [i for i, line in enumerate(lines) if f'"key": "{key}"' in line]
    assert hits
    for i in hits:
        k = lines[i].index(":::MLLOG") + len(":::MLLOG")
        d = json.loads(lines[i][k:])
        d["time_ms"] = "\x00T\x00"
        lines[i] = lines[i][:k] + " " + json.dumps(d).replace('"\\u0000T\\u0000"', time_ms)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _check_outcome(lambda: import_logs([path], systems_dir=SYSTEMS), [path], tmp_path / "out", {path: len(lines)})


def test_mlperf_log_cut_after_init_start(tmp_path):
    """A log that stops right after init_start: refused, or a job that shows up in the summary (not silently empty)."""
    path = _mlperf_copy(MLPERF_LOGS[0], tmp_path / "logs")
    lines = path.read_text(encoding="utf-8").splitlines()
    cut = next(i for i, line in enumerate(lines) if '"key": "init_start"' in line)
    path.write_text("\n".join(lines[: cut + 1]) + "\n", encoding="utf-8")
    _check_outcome(lambda: import_logs([path], systems_dir=SYSTEMS), [path], tmp_path / "out", {path: cut + 1})


@pytest.mark.parametrize(
    "key,value",
    [
        ("job_start_time", 1e15),
        ("job_start_time", 1e300),
        ("job_start_time", 0.0),
        ("job_start_time", -1.0),
        ("job_start_time", 7.3e9),
        ("job_end_time", 1e15),
        ("job_end_time", 1e300),
        ("step_count", float("nan")),
        ("step_count", float("inf")),
        ("step_count", 1e15),
        ("step_count", 1e300),
        ("step_start_time", 1e300),
    ],
)
def test_goodput_out_of_range_values(tmp_path, key, value):
    entries = goodput_entries()
    i = [k for k, e in enumerate(entries) if key in e][0]
    entries[i][key] = value
    src = tmp_path / "entries.jsonl"
    src.write_text("".join(json.dumps(e) + "\n" for e in entries))
    _check_outcome(lambda: import_entries(src, synthetic=True), [src], tmp_path / "out", {src: len(entries)})


# ----------------------------------------------------------------------------- the seed corpus of hand-made bad logs


@pytest.mark.parametrize("entry", log_corpus_entries(), ids=lambda e: e["case"])
def test_bad_log_corpus(entry):
    """Each hand-made bad log is refused naming the file, the line and field of tests/bad_inputs/README.md,
    with its message."""
    path = BAD_INPUTS / "logs" / entry["case"]
    with pytest.raises(TraceError) as info:
        if entry["importer"] == "mlperf":
            import_logs([path], systems_dir=None)
        else:
            import_entries(path)
    probs = [p for p in info.value.problems if entry["message"] in p.message]
    assert probs, f"expected {entry['message']!r} among {[p.line() for p in info.value.problems]}"
    assert any(p.file == str(path) and p.row == entry["row"] and p.field == entry["field"] for p in probs), [
        p.line() for p in probs
    ]


# -------------------------------------------------------------------------- sacct exports (real, from data/slurm-fleet)

SLURM_FLEET = DATA_DIR / "slurm-fleet"


@st.composite
def sacct_text_mutation(draw, lines: list[str]) -> tuple[bytes, set[int]]:
    """(mutated export, 1-based lines made duplicates of another line: they must be refused)."""
    lines = list(lines)
    rng = random.Random(draw(st.integers(0, 2**32)))
    kind = draw(
        st.sampled_from(
            [
                "hostile_field",
                "delete",
                "duplicate",
                "shuffle",
                "cut_line",
                "insert_bytes",
                "truncate",
                "drop_column",
                "extra_pipe",
            ]
        )
    )
    picked = sorted(draw(st.lists(st.integers(1, len(lines) - 1), min_size=1, max_size=4, unique=True)))
    duplicated: set[int] = set()
    head = lines[0].split("|")
    if kind == "hostile_field":
        for i in picked:
            f = lines[i].split("|")
            f[draw(st.integers(0, len(f) - 1))] = draw(st.sampled_from(HOSTILE_TEXT)).replace("|", "")
            lines[i] = "|".join(f)
    elif kind == "delete":
        for i in reversed(picked):
            del lines[i]
    elif kind == "duplicate":
        for i in reversed(picked):
            lines.append(lines[i])
            duplicated.add(len(lines))
    elif kind == "shuffle":
        body = lines[1:]
        rng.shuffle(body)
        lines = lines[:1] + body
    elif kind == "cut_line":
        for i in picked:
            lines[i] = lines[i][: rng.randint(0, len(lines[i]))]
    elif kind == "drop_column":
        k = draw(st.integers(0, len(head) - 1))
        lines = ["|".join(f for j, f in enumerate(line.split("|")) if j != k) for line in lines]
    elif kind == "extra_pipe":
        for i in picked:
            lines[i] += "|x"
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if kind == "insert_bytes":
        k = draw(st.integers(0, len(data)))
        return data[:k] + draw(st.sampled_from(HOSTILE_BYTES)) + data[k:], duplicated
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data)))], duplicated
    return data, duplicated


@fuzz_settings(25)
@given(data=st.data())
def test_sacct_text_mutated(data):
    original = (SLURM_FLEET / "sacct.txt").read_text(encoding="utf-8").splitlines()[:30]
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "sacct.txt"
        raw, duplicated = data.draw(sacct_text_mutation(original))
        src.write_bytes(raw)
        n_lines = max(1, len(raw.decode("utf-8", "replace").splitlines()))
        got, detail = _check_outcome(lambda: import_sacct([src], gpus=1), [src], Path(d) / "out", {src: n_lines})
        if duplicated:
            assert got == "error" and any("duplicated row" in p.message for p in detail.problems), (
                "a duplicated row was imported"
            )


@fuzz_settings(15)
@given(data=st.data())
def test_sacct_json_mutated(data):
    doc = json.loads((SLURM_FLEET / "sacct.json").read_text(encoding="utf-8"))
    doc["jobs"] = doc["jobs"][:12]
    kind = data.draw(st.sampled_from(["truncate", "hostile_value", "delete_key"]))
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    if kind != "truncate":
        job = rng.choice(doc["jobs"])
        path = data.draw(
            st.sampled_from(
                [
                    ("job_id",),
                    ("state", "current"),
                    ("time", "start"),
                    ("time", "end"),
                    ("time", "submission"),
                    ("array", "task_id"),
                    ("tres", "allocated"),
                    ("nodes",),
                    ("steps",),
                    ("name",),
                    ("user",),
                    ("het", "job_offset"),
                ]
            )
        )
        holder = job
        for k in path[:-1]:
            holder = holder[k]
        if kind == "delete_key":
            holder.pop(path[-1], None)
        else:
            holder[path[-1]] = json.loads(data.draw(hostile_json_values()))
    text = json.dumps(doc, indent=2)
    if kind == "truncate":
        text = text[: data.draw(st.integers(0, len(text) - 1))]
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "sacct.json"
        src.write_text(text)
        _check_outcome(
            lambda: import_sacct([src], gpus=1), [src], Path(d) / "out", {src: max(1, len(text.splitlines()))}
        )
