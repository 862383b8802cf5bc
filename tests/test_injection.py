"""Hostile values as job ids, labels, phases, paths and options: treated as data, or refused.

Values like ``x'); DROP TABLE spans; --``, ``../../etc/passwd`` and glob
patterns (``*``, ``**/*.parquet``, ``[a-z]``) are put where users put text:
job ids, models, label values and label column names, phase names (through a
mapping file), trace and mapping paths, ``--by``, ``--as-of``, ``--every``,
notebook parameters and importer options.  Each must come back unchanged as
data, or be refused with a clear error; no value may reach SQL text (checked by
recording every statement DuckDB is given), and no path may be expanded as a
glob.  All traces here are SYNTHETIC (the bundled sample, renamed).
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from ettcore import metric
from ettcore.cli import main
from ettcore.config import SAMPLE_TRACE
from ettcore.errors import TraceError
from ettcore.trace import Trace, load_trace

MARK = "Zq9MARK"  # a marker no SQL text of the project contains
HOSTILE = [
    f"x'); DROP TABLE spans; --{MARK}",
    f"{MARK}'; SELECT * FROM read_csv('/etc/passwd'); --",
    f"../../etc/passwd{MARK}",
    f"*{MARK}",
    f"**/*.parquet{MARK}",
    f"[a-z]{MARK}",
    f'{MARK}"; DROP VIEW clean_spans; --',
    f"{MARK}$1 ? :name",
    f"{MARK} UNION SELECT 1",
]
HOSTILE_NAMES = [
    "x'); DROP TABLE spans; --",
    "*",
    "**/*.parquet",
    "[a-z]",
    "../../etc/passwd",
    'a"b',
    "select",
    "group",
    "Ünïcode 列",
]
SAMPLE_JOBS = ["sample-preempted", "sample-running", "sample-startup-failure", "worked-example"]


def _renamed_sample(
    folder: Path,
    ids: dict[str, str],
    models: dict[str, str] | None = None,
    teams: dict[str, str] | None = None,
    extra_label_columns: list[str] | None = None,
) -> Path:
    """The sample trace with job ids, models and teams replaced (CSV, written with a proper CSV writer)."""
    folder.mkdir(parents=True)
    for name in ("jobs", "attempts", "spans"):
        df = pl.read_csv((SAMPLE_TRACE / f"{name}.csv").read_bytes(), infer_schema=False)
        df = df.with_columns(pl.col("job_id").replace(ids))
        if name == "jobs":
            if models:
                df = df.with_columns(pl.col("model").replace(models))
            if teams:
                df = df.with_columns(pl.col("team").replace(teams))
            for k, col in enumerate(extra_label_columns or []):
                df = df.with_columns(
                    pl.col("job_id").map_elements(lambda j, k=k: f"g{k}-{len(j) % 3}", return_dtype=pl.Utf8).alias(col)
                )
        df.write_csv(folder / f"{name}.csv")
    shutil.copy(SAMPLE_TRACE / "trace.json", folder / "trace.json")
    return folder


@pytest.fixture(scope="module")
def baseline() -> pl.DataFrame:
    return metric.job_summary(load_trace(SAMPLE_TRACE)).sort("job_id")


class RecordingConnection:
    """Wraps a DuckDB connection and records the text of every statement it is given."""

    def __init__(self, con: duckdb.DuckDBPyConnection, log: list[str]):
        self._con, self._log = con, log

    def _record(self, query):
        self._log.append(str(query))

    def execute(self, query, *args, **kwargs):
        self._record(query)
        return self._con.execute(query, *args, **kwargs)

    def sql(self, query, *args, **kwargs):
        self._record(query)
        return self._con.sql(query, *args, **kwargs)

    def query(self, query, *args, **kwargs):
        self._record(query)
        return self._con.query(query, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._con, name)


@pytest.fixture
def sql_log(monkeypatch) -> list[str]:
    """Every SQL text the code under test sends to DuckDB during the test."""
    log: list[str] = []
    real = duckdb.connect

    def connect(*args, **kwargs):
        return RecordingConnection(real(*args, **kwargs), log)

    monkeypatch.setattr(duckdb, "connect", connect)
    return log


# ----------------------------------------------------------------------------- values are data


def test_hostile_job_ids_models_and_labels_are_data(tmp_path, baseline, sql_log):
    ids = dict(zip(SAMPLE_JOBS, HOSTILE))
    models = {"ranker-a": HOSTILE[4], "ranker-b": HOSTILE[5], "ranker-c": HOSTILE[6]}
    teams = {"ads": HOSTILE[7], "feed": HOSTILE[8], "search": HOSTILE[3]}
    trace = load_trace(_renamed_sample(tmp_path / "t", ids, models, teams))
    jobs = metric.job_summary(trace).sort("job_id")
    assert sorted(jobs["job_id"].to_list()) == sorted(ids.values())
    # same numbers as the sample, job by job, under the new names
    expect = baseline.with_columns(
        pl.col("job_id").replace(ids), pl.col("model").replace(models), pl.col("team").replace(teams)
    ).sort("job_id")
    assert_frame_equal(jobs.select(expect.columns), expect)
    groups = metric.fleet_summary(trace, by="team")
    assert sorted(groups["team"].to_list()) == sorted(set(teams.values()))
    by_model = metric.fleet_summary(trace, by="model")
    assert sorted(by_model["model"].to_list()) == sorted(set(models.values()))
    l2 = metric.l2_matrix(trace)
    assert set(l2["job_id"].unique().to_list()) == set(ids.values())
    # nothing was dropped and the tables the values name still exist
    assert trace.sql("SELECT count(*) AS n FROM clean_spans")["n"][0] == 47
    assert trace.accounting["spans"] == {"read": 47, "used": 47, "rejected": 0, "rejected_by_reason": {}}
    # no value ever reached SQL text: they travelled as data
    assert sql_log, "the recorder saw no SQL: the test would prove nothing"
    leaked = [q for q in sql_log if MARK in q]
    assert not leaked, leaked[0][:500]


def test_hostile_label_column_names_group_by_data(tmp_path):
    """Label *column names* are identifiers from the file: quoted, usable with --by, never executed."""
    folder = _renamed_sample(tmp_path / "t", {}, extra_label_columns=HOSTILE_NAMES)
    trace = load_trace(folder)
    assert set(HOSTILE_NAMES) <= set(trace.labels)
    # label value = g<k>-<len(job_id) % 3>: worked-example and sample-running -> 2, the other two -> 1
    for k, col in enumerate(HOSTILE_NAMES):
        groups = metric.fleet_summary(trace, by=col).sort(col)
        assert groups[col].to_list() == [f"g{k}-1", f"g{k}-2"], (col, groups)
        assert groups["jobs"].to_list() == [2, 2]
    assert trace.sql("SELECT count(*) AS n FROM clean_spans")["n"][0] == 47
    jobs = metric.job_summary(trace)
    for col in HOSTILE_NAMES:
        assert col in jobs.columns


def test_hostile_phase_names_through_a_mapping(tmp_path, baseline, sql_log):
    """A user phase named like an injection is mapped like any phase, and its time lands in its component."""
    folder = _renamed_sample(tmp_path / "t", {})
    spans = pl.read_csv(folder / "spans.csv", infer_schema=False)
    hostile_phase = HOSTILE[0]
    spans = spans.with_columns(pl.col("phase").replace({"trainer_init": hostile_phase}))
    spans.write_csv(folder / "spans.csv")
    mapping = tmp_path / "mapping.json"
    mapping.write_text(
        json.dumps(
            {"phases": [{"phase": hostile_phase, "component": "trainer_init"}], "owners": {"trainer_init": HOSTILE[1]}}
        )
    )
    with pytest.raises(TraceError) as info:  # without the mapping the phase is unknown: refused, named
        load_trace(folder)
    assert any(p.field == "phase" and hostile_phase in p.message for p in info.value.problems)
    trace = load_trace(folder, mapping=mapping)
    jobs = metric.job_summary(trace).sort("job_id")
    assert_frame_equal(jobs.select(baseline.columns), baseline)
    l2 = metric.l2_matrix(trace)
    assert hostile_phase in l2["phase"].to_list()
    assert HOSTILE[1] in l2["owner"].to_list()
    assert not [q for q in sql_log if MARK in q]


# ----------------------------------------------------------------------------- options are validated


@pytest.fixture(scope="module")
def sample() -> Trace:
    return load_trace(SAMPLE_TRACE)


@pytest.mark.parametrize("value", HOSTILE_NAMES + ["team; DROP TABLE spans", "model) --", ""])
def test_by_refuses_unknown_columns(sample, value):
    with pytest.raises(TraceError) as info:
        metric.fleet_summary(sample, by=value)
    assert info.value.problems[0].field == "by"
    assert sample.sql("SELECT count(*) AS n FROM clean_spans")["n"][0] == 47
    assert metric.fleet_summary(sample, by="team")["jobs"].sum() == 4  # the trace still answers


@pytest.mark.parametrize("value", HOSTILE + ["inf", "-inf", "nan", "1e400", "2026-01-05T01:00:00Z'; --", "", " "])
def test_as_of_refuses_non_times(value):
    with pytest.raises(TraceError) as info:
        load_trace(SAMPLE_TRACE, as_of=value)
    p = info.value.problems[0]
    assert (p.file, p.field) == ("--as-of", "as_of")


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 1e300, -5])
def test_as_of_refuses_non_finite_numbers(value):
    with pytest.raises(TraceError):
        load_trace(SAMPLE_TRACE, as_of=value)


@pytest.mark.parametrize("value", ["week'; DROP TABLE spans; --", "*", "days", "DAY"])
def test_trend_every_refused(sample, value):
    with pytest.raises(TraceError) as info:
        metric.trend(sample, every=value)
    assert info.value.problems[0].field == "every"


def test_cli_options_exit_2_not_traceback(capsys):
    """Through the `ett` command: every hostile option ends in exit status 2 and a one-line message."""
    cases = [
        ["summarize", str(SAMPLE_TRACE), "--by", HOSTILE[0]],
        ["summarize", str(SAMPLE_TRACE), "--as-of", HOSTILE[1]],
        ["summarize", str(SAMPLE_TRACE), "--as-of", "inf"],
        ["summarize", str(SAMPLE_TRACE), "--mapping", "../../etc/passwd"],
        ["trend", str(SAMPLE_TRACE), "--as-of", "[a-z]"],
        ["summarize", "**/*.parquet"],
        ["validate", "../../etc/passwd"],
    ]
    for argv in cases:
        capsys.readouterr()
        assert main(argv) == 2, argv
        out = capsys.readouterr()
        assert out.out == "" and out.err and "Traceback" not in out.err, (argv, out)
        assert len(out.err.strip().splitlines()) == 1, (argv, out.err)
    capsys.readouterr()  # a bucket that is neither a calendar bucket nor a duration: one line naming --every
    assert main(["trend", str(SAMPLE_TRACE), "--every", "day'; DROP TABLE spans; --"]) == 2
    err = capsys.readouterr().err
    assert "--every" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


# ----------------------------------------------------------------------------- paths are never globs


def _parquet_copy(dst: Path, gpus: int | None = None) -> Path:
    dst.mkdir(parents=True)
    for name in ("jobs", "attempts", "spans"):
        df = pl.read_csv((SAMPLE_TRACE / f"{name}.csv").read_bytes(), infer_schema=False)
        if name == "jobs" and gpus is not None:
            df = df.with_columns(pl.lit(gpus).alias("gpus"))
        df.write_parquet(dst / f"{name}.parquet")
    return dst


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_trace_folder_with_glob_characters_reads_itself(tmp_path, fmt):
    """A folder named ``t[1]`` is that folder, not ``t1``; ``t*`` is not every sibling."""
    _parquet_copy(tmp_path / "t1", gpus=111)
    _parquet_copy(tmp_path / "t2", gpus=222)
    for name, gpus in (("t[1]", 1), ("t*", 2), ("t?", 3), ("t{1,2}", 4)):
        folder = _parquet_copy(tmp_path / name, gpus=gpus)
        if fmt == "csv":
            for table in ("jobs", "attempts", "spans"):
                # (pyarrow, not pl.read_parquet: Polars would expand the path as a glob too)
                pl.from_arrow(pq.read_table(folder / f"{table}.parquet")).write_csv(folder / f"{table}.csv")
                (folder / f"{table}.parquet").unlink()
        trace = load_trace(folder)
        jobs = metric.job_summary(trace)
        assert jobs["gpus"].to_list() == [gpus] * 4, name
        files = set(trace.sql("SELECT DISTINCT _file FROM raw_spans")["_file"].to_list())
        assert files == {str(folder / f"spans.{fmt}")}, files
        assert trace.accounting["spans"]["read"] == 47


def test_part_files_with_glob_characters_are_read_once(tmp_path):
    folder = _parquet_copy(tmp_path / "t")
    spans = pl.read_parquet(folder / "spans.parquet")
    (folder / "spans.parquet").unlink()
    (folder / "spans").mkdir()
    names = ["a.parquet", "*.parquet", "[ab].parquet", "b.parquet"]
    for k, name in enumerate(names):
        spans[k::4].write_parquet(folder / "spans" / name)
    trace = load_trace(folder)
    assert trace.accounting["spans"]["read"] == 47
    counts = trace.sql("SELECT _file, count(*) AS n FROM raw_spans GROUP BY _file")
    assert sorted(Path(f).name for f in counts["_file"].to_list()) == sorted(names)
    assert_frame_equal(
        metric.job_summary(trace).sort("job_id"), metric.job_summary(load_trace(SAMPLE_TRACE)).sort("job_id")
    )


def test_mapping_path_is_not_a_glob(tmp_path, monkeypatch):
    """``--mapping '*.yaml'`` does not pick up a.yaml; a file literally named ``[a].yaml`` is read as itself."""
    (tmp_path / "a.yaml").write_text("phases:\n  - {phase: my_phase, component: trainer_init}\n")
    monkeypatch.chdir(tmp_path)
    for pattern in ("*.yaml", "[a].yaml", "**/*.yaml", "?.yaml"):
        with pytest.raises(TraceError) as info:
            load_trace(SAMPLE_TRACE, mapping=pattern)
        assert "cannot read mapping file" in info.value.problems[0].message
    (tmp_path / "[a].yaml").write_text("owners:\n  pt2_compile: Literal owner\n")
    trace = load_trace(SAMPLE_TRACE, mapping=tmp_path / "[a].yaml")
    assert "Literal owner" in metric.l2_matrix(trace)["owner"].to_list()


def test_mapping_pointing_at_a_system_file_is_refused():
    with pytest.raises(TraceError) as info:
        load_trace(SAMPLE_TRACE, mapping="/etc/passwd")
    assert info.value.problems[0].file == "/etc/passwd"


# ----------------------------------------------------------------------------- notebook parameters


def test_notebook_string_parameters_arrive_verbatim():
    """papermill writes ``-p`` strings into the parameters cell as Python literals: a value never becomes code."""
    from papermill.translators import PythonTranslator

    from ettcore.present import report

    values = HOSTILE + [
        '"); import os; os.system("echo pwned") #',
        "\\\"); open('/tmp/x','w') #",
        "\n__import__('os')\n",
        "'''",
        '"""',
    ]
    for v in values:
        coerced = report.coerce(v, "str", "job")
        code = PythonTranslator.codify({"job": coerced, "trace": coerced})
        tree = ast.parse(code)
        assigns = [n for n in tree.body if isinstance(n, ast.Assign)]
        assert len(assigns) == 2 and len(tree.body) == 2, code  # nothing but the two assignments
        for a in assigns:
            assert isinstance(a.value, ast.Constant) and a.value.value == v, code


@pytest.mark.parametrize(
    "value,type_name", [("1; import os", "int"), ("nan'); --", "float"), ("maybe", "bool"), ("[a-z]", "int")]
)
def test_notebook_typed_parameters_refuse_text(value, type_name):
    from ettcore.present import report

    with pytest.raises(TraceError) as info:
        report.coerce(value, type_name, "jobs")
    assert info.value.problems[0].field == "jobs"


def test_notebooks_build_no_sql_from_text():
    """No notebook formats SQL text (f-strings, %, .format, +) in a call to .sql/.execute/.query."""
    from ettcore.config import NOTEBOOK_DIR

    notebooks = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    if not notebooks:
        pytest.skip("no notebooks yet")
    offenders = []
    for nb in notebooks:
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell["cell_type"] != "code":
                continue
            src = "".join(cell["source"])
            try:
                tree = ast.parse(
                    "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))
                )
            except SyntaxError:
                offenders.append((nb.name, "unparsable cell"))
                continue
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("sql", "execute", "query")
                    and node.args
                ):
                    q = node.args[0]
                    dynamic = isinstance(q, (ast.JoinedStr, ast.BinOp)) or (
                        isinstance(q, ast.Call) and isinstance(q.func, ast.Attribute) and q.func.attr == "format"
                    )
                    if dynamic:
                        offenders.append((nb.name, ast.unparse(q)[:120]))
    assert not offenders, offenders


# ----------------------------------------------------------------------------- importer options


def _mlperf_log(root: Path, name: str = "result_0.txt") -> Path:
    from ettcore.config import DATA_DIR

    rel = Path("v5.1/University-of-Florida/hpg.dgxb200x8.n1/dlrm_dcnv2")
    (root / rel).mkdir(parents=True, exist_ok=True)
    dst = root / rel / name
    shutil.copyfile(DATA_DIR / "mlperf" / rel / "result_0.txt", dst)
    return dst


def test_import_log_paths_are_not_globs(tmp_path, capsys):
    from ettcore.config import DATA_DIR

    log = _mlperf_log(tmp_path / "logs")
    systems = str(DATA_DIR / "mlperf" / "systems")
    pattern = str(log.parent / "result_*.txt")
    capsys.readouterr()
    assert main(["import", "mlperf", pattern, "--systems", systems, "--out", str(tmp_path / "o1")]) == 2
    err = capsys.readouterr().err
    assert pattern in err and not (tmp_path / "o1").exists()
    # a file literally named with glob characters is read as itself
    odd = _mlperf_log(tmp_path / "logs", "result_[0]*.txt")
    assert main(["import", "mlperf", str(odd), "--systems", systems, "--out", str(tmp_path / "o2")]) == 0, (
        capsys.readouterr().err
    )
    meta = json.loads((tmp_path / "o2" / "trace.json").read_text())
    assert meta["source_files"] == [str(odd)]


def test_import_out_and_systems_are_literal(tmp_path, capsys):
    log = _mlperf_log(tmp_path / "logs")
    out = tmp_path / HOSTILE[0]  # a folder named like an injection is just a folder
    capsys.readouterr()
    rc = main(["import", "mlperf", str(log), "--systems", str(tmp_path / "*"), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc in (0, 2) and "Traceback" not in err
    if rc == 0:  # the log's own :::SYSJSON line gave the accelerators; '*' was not expanded into a folder
        assert out.is_dir() and metric.job_summary(load_trace(out)).height == 1
    else:
        assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["logs"] + ([out.name] if rc == 0 else []))


def test_import_goodput_hostile_job_name_and_gpus(tmp_path, capsys):
    src = tmp_path / "entries.jsonl"
    t0 = 1_767_571_200.0
    job = HOSTILE[0]
    entries = (
        [{"job_name": job, "job_start_time": t0}]
        + [{"job_name": job, "step_count": k, "step_start_time": t0 + 10 + 5 * k} for k in range(5)]
        + [{"job_name": job, "job_end_time": t0 + 40}]
    )
    src.write_text("".join(json.dumps(e) + "\n" for e in entries))
    with pytest.raises(SystemExit) as info:
        main(["import", "goodput", str(src), "--gpus", "8; DROP TABLE spans", "--out", str(tmp_path / "o")])
    assert info.value.code == 2 and not (tmp_path / "o").exists()
    capsys.readouterr()
    assert main(["import", "goodput", str(src), "--gpus", "8", "--out", str(tmp_path / "o")]) == 0, (
        capsys.readouterr().err
    )
    jobs = metric.job_summary(load_trace(tmp_path / "o"))
    assert jobs["job_id"].to_list() == [job] and jobs["gpus"].to_list() == [8]
    assert jobs["productive_s"][0] == pytest.approx(30.0)  # steps 0-4 from +10 to +35, the last to job end +40


# ----------------------------------------------------------------------------- other commands' options


def test_opportunities_options_validated(capsys):
    """`ett opportunities`: a hostile --comparable is refused naming it;
    non-finite --cut/--days are refused by argparse."""
    capsys.readouterr()
    assert main(["opportunities", str(SAMPLE_TRACE), "--comparable", HOSTILE[0]]) == 2
    err = capsys.readouterr().err
    assert "comparable" in err and "Traceback" not in err
    for opt, value in (
        ("--cut", "nan"),
        ("--cut", "inf"),
        ("--cut", "1e400"),
        ("--days", "nan"),
        ("--days", "inf"),
        ("--days", "0"),
    ):
        with pytest.raises(SystemExit) as info:
            main(["opportunities", str(SAMPLE_TRACE), opt, value])
        assert info.value.code == 2, (opt, value)
