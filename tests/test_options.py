"""One set of measuring options: every measuring command, with every option, on a trace folder and on a fleet store.

Each cell of the table below is either ``A`` (the option applies: the command runs and the option's effect shows in
what it prints) or ``R`` (the command refuses it: exit 2 and one line on stderr naming the flag and why).  The table
is written here by hand, from what the issue asks of each command; the test runs every cell and holds the commands
to it.  The effects checked:

- ``--mapping`` adds a component (``data_loading``): the answer's ``mapping.components`` (the export: its series);
- ``--causes-file`` (Llama 3's Table 5 as a user's causes file): a trace whose failure names one of its causes
  (``faulty_gpu``, category GPU) is refused without it and measured with it: ``summarize`` counts it by cause and by
  category, ``nodes`` counts it against the node, the export writes its ``cause`` and ``category`` series; a store
  of that trace ingested with it keeps its causes: measured the same with it and without it;
- ``--as-of``, ``--since``, ``--until``: the answer's ``as_of`` / ``window`` (the export: its timestamps);
- ``--exclude``: the window's exclusions list what they took out (the export: the excluded GPU-seconds);
- ``--skip-invalid``: a trace with one bad job is refused without it and measured with it;
- ``--memory-limit``: 1KB runs DuckDB out of memory, said in one line; 2GB runs;
- ``--temp-directory``: a file is refused, naming the flag; a folder runs;
- ``--gpu-hour-price``, ``--currency``: the answer's money (the export: the cost series and their currency);
- ``--slow-tolerance`` (``summarize``, ``trend``; ``nodes`` with ``--slow``): the answer's ``slow.tolerance`` (the
  export: ``ett_export_slow_tolerance``);
- ``--engine spark`` with ``--spark-master`` (the Spark tests' ``spark://`` master, the project's cluster of
  ``tools/spark/start.sh``): the answer says it ran on Spark, on that master (one run for both cells: Spark plans the
  metric's queries slowly, many seconds a command on 2 cores).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ettcore import cli
from ettcore.cli import measure_options
from ettcore.config import PACKAGE_DIR, SAMPLE_TRACE
from ettcore.engines.spark import spark_available

COMMANDS = ("summarize", "trend", "stalls", "opportunities", "nodes", "export prometheus", "validate")
# fmt: off
# option:          summarize trend stalls opportunities nodes export validate
TABLE = {
    "engine":         "A A R A R R A",
    "spark_master":   "A A R A R R A",  # (with --engine spark; alone it is refused everywhere)
    "mapping":        "A A A A A A A",
    "causes_file":    "A A A A A A A",
    "as_of":          "A A A A A A R",
    "since":          "A A A A A A R",
    "until":          "A A A A A A R",
    "exclude":        "A A A A A A R",
    "skip_invalid":   "A A A A A A R",  # (a store refuses it: it holds checked rows)
    "memory_limit":   "A A A A A A A",
    "temp_directory": "A A A A A A A",
    "gpu_hour_price": "A R R A R A R",
    "currency":       "A R R A R A R",
    "slow_tolerance": "A A R R A A R",  # (with nodes --slow)
}
# fmt: on
ON_A_STORE = {  # cells where a store differs from a trace
    ("skip_invalid", c): "R" for c in COMMANDS
} | {("engine", "validate"): "R", ("spark_master", "validate"): "R"}  # a store's problems are read from its file
LLAMA3 = PACKAGE_DIR.parent / "data" / "reference" / "llama3-causes.yaml"  # a user's causes file (docs/causes.md)
VALUES = {
    "mapping": "{dir}/mapping.yaml",
    "causes_file": str(LLAMA3),
    "as_of": "2026-01-05T12:00:00Z",
    "since": "2026-01-05T02:00:00Z",
    "until": "2026-01-05T20:00:00Z",
    "exclude": "{dir}/exclude.csv",
    "memory_limit": "2GB",
    "temp_directory": "{dir}/spill",
    "gpu_hour_price": "2.5",
    "currency": "EUR",
    "slow_tolerance": "0.5",
}
REFUSED_MASTER = "spark://127.0.0.1:7077"  # what --spark-master is given where it is refused before any use
spark_cell = [
    pytest.mark.skipif(not spark_available(), reason="pyspark or Java not installed"),
    pytest.mark.spark,
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
]


def test_the_table_names_every_option_and_the_commands_refuse_what_it_says():
    """The table covers every measuring option, and each command's registered refusals are exactly its R cells."""
    assert set(TABLE) == {o.dest for o in measure_options.OPTIONS}
    assert set(COMMANDS) == set(measure_options.MEASURING)
    parser = cli.build_parser()
    for i, command in enumerate(COMMANDS):
        words = command.split()
        args = parser.parse_args([*words, "x"])
        refused = {d for d, row in TABLE.items() if row.split()[i] == "R"}
        assert set(args.measure_refusals) == refused, command


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("options")
    (d / "mapping.yaml").write_text("phases:\n  - {phase: data_warmup, component: data_loading}\n")
    (d / "exclude.csv").write_text("start,end,reason\n2026-01-05T03:00:00Z,2026-01-05T04:00:00Z,maintenance\n")
    (d / "spill").mkdir()
    (d / "a-file").write_text("not a folder\n")
    bad = d / "bad"
    shutil.copytree(SAMPLE_TRACE, bad)
    with open(bad / "attempts.csv", "a") as f:  # a job whose only attempt ends with an unknown end reason
        f.write("worked-example-bad,1,2026-01-05T00:00:00Z,2026-01-05T01:00:00Z,exploded\n")
    with open(bad / "jobs.csv", "a") as f:
        f.write("worked-example-bad,ranker-a,8,ads\n")
    user = d / "user-causes"  # the sample, its first failure caused by a faulty GPU (a cause of the Llama 3 file)
    shutil.copytree(SAMPLE_TRACE, user)
    rows = (user / "attempts.csv").read_text().splitlines()
    rows = [f"{rows[0]},cause", *(f"{r},{'faulty_gpu' if k == 0 else ''}" for k, r in enumerate(rows[1:]))]
    assert rows[1].endswith("failure,faulty_gpu"), rows[1]
    (user / "attempts.csv").write_text("\n".join(rows) + "\n")
    s = d / "fleet.duckdb"
    assert cli.main(["ingest", str(s), str(SAMPLE_TRACE), "--parquet", str(d / "mirror")]) == 0
    kept = d / "user-causes.duckdb"  # a store of that trace, which keeps the causes file's causes
    assert cli.main(["ingest", str(kept), str(user), "--causes-file", str(LLAMA3)]) == 0
    return {"dir": d, "trace": SAMPLE_TRACE, "store": s, "bad": bad, "user_causes": user, "user_causes_store": kept}


def _run(capsys, command: str, where: Path, *extra: str) -> tuple[int, str, str]:
    words = command.split()
    fmt = [] if command == "export prometheus" else ["--json"]
    rc = cli.main([*words, str(where), *fmt, *extra])
    got = capsys.readouterr()
    return rc, got.out, got.err


def _refused(rc: int, err: str, flag: str) -> None:
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and flag in lines[0], err


def _flag(option: str) -> str:
    return measure_options.FLAG_OF[option]


def _cells():
    for option in TABLE:
        for command in COMMANDS:
            for kind in ("trace", "store"):
                # --engine spark and --spark-master apply together: one Spark run covers both cells (see the test)
                if option == "spark_master" and _expected(option, command, kind) == "A":
                    continue
                spark = option == "engine" and _expected(option, command, kind) == "A"
                yield pytest.param(
                    option,
                    command,
                    kind,
                    id=f"{option}-{command.replace(' ', '-')}-{kind}",
                    marks=spark_cell if spark else [],
                )


def _expected(option: str, command: str, kind: str) -> str:
    cell = TABLE[option].split()[COMMANDS.index(command)]
    return ON_A_STORE.get((option, command), cell) if kind == "store" else cell


@pytest.fixture
def spark_if_needed(request, option, command, kind):
    """The master of the Spark tests' session (conftest.spark_session: on the project's cluster, its heap and
    settings), for the cells that run Spark (the spark-marked ones); None for the others, a refused --engine among
    them: a session started there would be a second application on the cluster, waiting for its memory."""
    return (
        request.getfixturevalue("spark_master")
        if option == "engine" and _expected(option, command, kind) == "A"
        else None
    )


@pytest.mark.parametrize("option, command, kind", list(_cells()))
def test_cell(option, command, kind, inputs, capsys, spark_if_needed):
    where, flag = inputs[kind], _flag(option)
    value = VALUES.get(option, "").format(dir=inputs["dir"])
    if kind == "trace" and option == "skip_invalid":
        where = inputs["bad"]
    if option == "causes_file":
        where = inputs["user_causes" if kind == "trace" else "user_causes_store"]
    if _expected(option, command, kind) == "R":  # the option alone
        alone = {"engine": [flag, "spark"], "skip_invalid": [flag]}.get(option, [flag, value or REFUSED_MASTER])
        rc, _, err = _run(capsys, command, where, *alone)
        _refused(rc, err, flag)
        return
    given = {  # the option with what it needs
        "engine": [flag, "spark", "--spark-master", spark_if_needed],
        "spark_master": ["--engine", "spark", flag, spark_if_needed],
        "skip_invalid": [flag],
        "currency": ["--gpu-hour-price", "2.5", flag, value],
        "slow_tolerance": ["--slow", flag, value] if command == "nodes" else [flag, value],
    }.get(option, [flag, value])
    export = command == "export prometheus"
    if option == "skip_invalid":  # refused without it, measured with it
        rc, _, err = _run(capsys, command, where)
        assert rc == 2 and "exploded" in err, err
    if option == "causes_file":  # a trace: refused without it (validate: the cause is its problem), measured with it
        rc, out, err = _run(capsys, command, where)
        if kind == "trace":
            assert rc == 2 and "faulty_gpu" in (out if command == "validate" else err), (out, err)
        else:  # a store keeps the causes it was ingested with: measured without it as with it
            assert rc == 0, err
            if export:
                _export_effect(option, out)
            else:
                _json_effect(option, command, kind, json.loads(out), None)
    if option == "memory_limit":  # a budget too small for anything: DuckDB runs out, said in one line
        rc, _, err = _run(capsys, command, where, flag, "1KB")
        _refused(rc, err, "memory")
    if option == "temp_directory":  # a spill folder that is a file
        rc, _, err = _run(capsys, command, where, flag, str(inputs["dir"] / "a-file"))
        _refused(rc, err, flag)
    rc, out, err = _run(capsys, command, where, *given)
    assert rc == (2 if command == "validate" and option == "skip_invalid" else 0), err
    if export:
        _export_effect(option, out)
    else:
        _json_effect(option, command, kind, json.loads(out), spark_if_needed)


def _json_effect(option: str, command: str, kind: str, doc: dict, master: str | None) -> None:
    if option == "mapping":
        assert "data_loading" in doc["mapping"]["components"]
    elif option == "as_of":
        assert doc["as_of"] == VALUES["as_of"]
    elif option in ("since", "until"):
        assert doc["window"][option] == VALUES[option]
    elif option == "exclude":
        (ex,) = doc["window"]["exclusions"]
        assert ex["reason"] == "maintenance" and ex["wall_gpu_h"] > 0
    elif option == "skip_invalid" and command != "validate":
        assert doc["input"]["path"].endswith("bad")
    elif option == "causes_file" and command == "summarize":
        assert doc["fleet"]["nof_by_cause"]["faulty_gpu"] == 1 and doc["fleet"]["nof_by_category"]["GPU"] == 1
    elif option == "causes_file" and command == "nodes":
        assert "faulty_gpu" in doc["causes"]  # a cause of the hardware group: counted against the node
    elif option == "causes_file" and command == "validate":
        assert doc["problems"] == []
    elif option in ("engine", "spark_master"):
        assert doc["input"]["engine"] == "spark" and doc["input"]["spark_master"] == master
    elif option == "gpu_hour_price":
        assert doc["money"]["gpu_hour_price"] == 2.5
    elif option == "currency":
        assert doc["money"]["currency"] == "EUR"
    elif option == "slow_tolerance":
        assert doc["slow"]["tolerance"] == 0.5


def _export_effect(option: str, text: str) -> None:
    if option == "mapping":
        assert 'component="data_loading"' in text
    elif option == "causes_file":
        assert 'ett_fleet_interruptions_by_cause{cause="faulty_gpu"} 1' in text
        assert 'ett_fleet_interruptions_by_category{category="GPU"} 1' in text
    elif option == "as_of":
        assert "ett_as_of_timestamp_seconds 1767614400" in text
    elif option == "since":
        assert "ett_window_start_timestamp_seconds 1767578400" in text
    elif option == "until":
        assert "ett_window_end_timestamp_seconds 1767643200" in text
    elif option == "exclude":
        fleet = next(ln for ln in text.splitlines() if ln.startswith("ett_fleet_excluded_gpu_seconds "))
        assert float(fleet.split()[1]) > 0
    elif option == "gpu_hour_price":
        assert 'currency="USD"' in text
    elif option == "currency":
        assert 'currency="EUR"' in text and 'currency="USD"' not in text
    elif option == "slow_tolerance":
        assert "\nett_export_slow_tolerance 0.5\n" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_spark_master_alone_is_refused(command, inputs, capsys):
    rc, _, err = _run(capsys, command, inputs["trace"], "--spark-master", REFUSED_MASTER)
    _refused(rc, err, "--spark-master")


@pytest.mark.parametrize("command", ["summarize", "opportunities", "export prometheus"])
def test_currency_without_a_price_is_refused(command, inputs, capsys):
    rc, _, err = _run(capsys, command, inputs["trace"], "--currency", "EUR")
    _refused(rc, err, "--currency")
