"""Causes users own: a user's causes file adds causes to the vocabulary (``ettcore.vocabulary.read_causes_file``),
each in one of the vocabulary's groups (which decide what ``ett nodes``, the MTTF fit and crash loops count) with a
display category of the user's.  Llama 3's Table 5 (``data/reference/llama3-table5.csv``) written as such a file
(``data/reference/llama3-causes.yaml``) is read back with its groups and categories; a bad file is refused with one
line naming the file, the entry and the field.  A fleet store ingested with the file keeps its causes (its
metadata; its Parquet mirror's pointer): the store, and Spark on the trace and on the mirror, give back the trace's
counts by cause and category.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from ettcore import cli
from ettcore.config import PACKAGE_DIR
from ettcore.engines.spark import spark_available
from ettcore.errors import InputError
from ettcore.vocabulary import UNKNOWN_CAUSE, VOCABULARY

DATA = PACKAGE_DIR.parent / "data" / "reference"
LLAMA3 = DATA / "llama3-causes.yaml"


def table5() -> list[dict]:
    """Llama 3's Table 5 as transcribed (component, category, count, cause)."""
    with open(DATA / "llama3-table5.csv", newline="", encoding="utf-8") as f:
        return [{**r, "count": int(r["count"])} for r in csv.DictReader(f)]


def test_llama3_table5_as_a_causes_file():
    rows = table5()
    assert sum(r["count"] for r in rows) == 419  # the paper's unexpected interruptions
    v = VOCABULARY.with_causes(LLAMA3)
    added = [r["cause"] for r in rows]
    # the user's causes after the vocabulary's own, unknown last
    assert v.cause_names == (*[c for c in VOCABULARY.cause_names if c != UNKNOWN_CAUSE], *added, UNKNOWN_CAUSE)
    assert {c: v.category_of[c] for c in added} == {r["cause"]: r["category"] for r in rows}
    assert v.category_of["node_failure"] == VOCABULARY.group("system").label  # a cause of the defaults: its group's
    assert v.group_of["faulty_gpu"] == "hardware" and v.group_of["software_bug"] == "user"
    # the groups decide: GPU and host components count against the node and in the MTTF fit, a software bug neither
    assert "faulty_gpu" in v.node_causes and "faulty_gpu" in v.mttf_causes and "software_bug" not in v.node_causes
    assert "nccl_watchdog_timeout" in v.node_causes and "nccl_watchdog_timeout" not in v.mttf_causes
    assert set(added) <= set(v.crash_causes)
    assert v.cause_colors["nccl_watchdog_timeout"] == VOCABULARY.group("unknown").color  # no colour given: its group's
    assert v.digest != VOCABULARY.digest and VOCABULARY.with_causes(LLAMA3).digest == v.digest
    ids = [r[0] for r in v.cause_rows]
    assert ids == list(range(1, len(v.causes) + 1))


def test_a_category_is_one_row_whoever_names_it(tmp_path):
    """Categories come from one place (``Vocabulary.category_of``): Llama 3's ``Unknown`` (its NCCL watchdog
    timeouts) and the fallback of the built-in ``unknown`` cause (its group's label, ``unknown``) are one category, as
    are a file's ``GPU`` and ``gpu`` and its ``Hardware`` and the ``hardware`` group's label; the file's spelling
    names it.  Expected rows written by hand."""
    from ettcore import metric
    from ettcore.cli.output import cause_record

    v = VOCABULARY.with_causes(LLAMA3)
    assert v.category_of["nccl_watchdog_timeout"] == v.category_of[UNKNOWN_CAUSE] == "Unknown"
    long = pl.DataFrame(
        {"cause": ["nccl_watchdog_timeout", UNKNOWN_CAUSE], "nof": [7, 3], "lost_s": [70.0, 30.0]}
    ).with_columns(lost_gpu_h=pl.col("lost_s") / 3600)
    rows = metric.by_category(metric.every_cause(long, v)).filter(pl.col("category").str.to_lowercase() == "unknown")
    assert rows.select("category", "nof").rows() == [("Unknown", 10)]
    assert cause_record(long, v)["nof_by_category"]["Unknown"] == 10
    assert "unknown" not in cause_record(long, v)["nof_by_category"]

    mine = VOCABULARY.with_causes(
        _file(
            tmp_path,
            [
                {"cause": "xid_79", "group": "hardware", "category": "GPU"},
                {"cause": "hbm_ecc", "group": "hardware", "category": "gpu"},
                {"cause": "psu", "group": "hardware", "category": "Hardware"},
                {"cause": "fw_upgrade", "group": "system", "category": "unplanned_maintenance"},
                {"cause": "reboot", "group": "system", "category": "Unplanned  Maintenance"},
            ],
        )
    )
    got = {c: mine.category_of[c] for c in ("xid_79", "hbm_ecc", "psu", "hardware", "fw_upgrade", "reboot")}
    assert got == {
        "xid_79": "GPU",
        "hbm_ecc": "GPU",
        "psu": "Hardware",
        "hardware": "Hardware",  # the built-in cause, uncategorised: its group's label, spelt as the file spells it
        "fw_upgrade": "unplanned_maintenance",
        "reboot": "unplanned_maintenance",
    }
    assert mine.category_of["node_failure"] == VOCABULARY.group("system").label  # no file category matches it


def _file(tmp_path: Path, causes) -> Path:
    p = tmp_path / "causes.yaml"
    p.write_text(yaml.safe_dump({"causes": causes}), encoding="utf-8")
    return p


@pytest.mark.parametrize(
    "causes, row, field, words",
    [
        ([{"cause": "gpu", "group": "fabric"}], 1, "group", "unknown group 'fabric'"),
        ([{"cause": "gpu", "group": "hardware"}, {"cause": "gpu", "group": "system"}], 2, "cause", "named twice"),
        ([{"cause": "hardware", "group": "hardware"}], 1, "cause", "named twice"),  # a cause of the vocabulary
        ([{"cause": "Faulty GPU", "group": "hardware"}], 1, "cause", "is not a name"),
        ([{"cause": "gpu", "group": "hardware", "color": "red"}], 1, "color", "#rrggbb"),
        ([{"cause": "gpu", "group": "hardware", "owner": "x"}], 1, "owner", "unknown field"),
        ([{"cause": "gpu"}], 1, "group", "missing field"),
        ([{"cause": "gpu", "group": "hardware", "category": 3}], 1, "category", "expected str"),
        ([], None, "causes", "non-empty list"),
    ],
)
def test_a_bad_causes_file_is_one_line(tmp_path, causes, row, field, words):
    path = _file(tmp_path, causes)
    with pytest.raises(InputError) as info:
        VOCABULARY.with_causes(path)
    (p,) = info.value.problems
    assert (p.file, p.row, p.field) == (str(path), row, field)
    assert words in p.message


def test_an_unreadable_causes_file(tmp_path):
    with pytest.raises(InputError) as info:
        VOCABULARY.with_causes(tmp_path / "missing.yaml")
    assert info.value.problems[0].file == str(tmp_path / "missing.yaml")


def _llama3_trace(folder: Path) -> Path:
    """The SYNTHETIC trace of Table 5 (``ettcore.synthetic.table5``): one job of 16,384 GPUs, 419 failures carrying
    Table 5's causes as often as the table counts them, then a completed attempt."""
    from ettcore.synthetic.table5 import write_table5_trace

    return write_table5_trace(folder)


def test_llama3_counts_come_back_by_cause_and_category(tmp_path, monkeypatch):
    from ettcore import metric
    from ettcore.trace import load_trace

    monkeypatch.setenv("ETT_CACHE_DIR", str(tmp_path / "cache"))
    folder = _llama3_trace(tmp_path / "t")
    t = load_trace(folder, causes_file=LLAMA3)
    assert t.synthetic
    got = metric.cause_table(t)
    rows = table5()
    by_cause = dict(zip(got["cause"], got["nof"]))
    assert {r["cause"]: by_cause[r["cause"]] for r in rows} == {r["cause"]: r["count"] for r in rows}
    assert sum(by_cause.values()) == 419  # nothing else: no preemption, no unknown
    want_categories: dict[str, int] = {}
    for r in rows:
        want_categories[r["category"]] = want_categories.get(r["category"], 0) + r["count"]
    by_category = {
        r["category"]: r["nof"] for r in got.group_by("category").agg(pl.col("nof").sum()).iter_rows(named=True)
    }
    assert {k: v for k, v in by_category.items() if v} == want_categories
    assert want_categories == {
        "GPU": 268,
        "Dependency": 56,
        "Network": 35,
        "Unplanned Maintenance": 32,
        "Host": 21,
        "Unknown": 7,
    }
    # the same files without the causes file: the checks refuse the first cause they do not know (the verdict kept
    # for the causes file's vocabulary is not reused)
    with pytest.raises(InputError) as info:
        load_trace(folder)
    assert {p.field for p in info.value.problems} == {"cause"}
    assert "faulty_gpu" in info.value.problems[0].message


def _color_scale(spec: dict) -> dict[str, str]:
    """The colour channel's scale of a one-layer Vega-Lite spec, as domain value -> colour, in the domain's order."""
    scale = spec["encoding"]["color"]["scale"]
    return dict(zip(scale["domain"], scale["range"]))


def test_the_charts_draw_a_user_s_causes_in_the_file_s_order_and_colours():
    """``cause_bars`` and ``category_bars`` given the vocabulary read with Llama 3's causes file (what a trace loaded
    with it carries, ``trace.vocabulary``) order the bars as the file lists the causes and colour each as the file
    says; a cause the file gives no colour takes its group's, as ``ettcore/defaults/causes.yaml`` writes it; a
    category takes the colour of its first cause.  Expected order and colours read from the two YAML files (not from
    ettcore); the frames are given in reverse order, so the order drawn is the file's, not the frame's."""
    from ettcore.config import DEFAULTS_DIR
    from ettcore.present import charts

    written = yaml.safe_load(LLAMA3.read_text(encoding="utf-8"))["causes"]
    groups = yaml.safe_load((DEFAULTS_DIR / "causes.yaml").read_text(encoding="utf-8"))["groups"]
    group_colors = {g["group"]: g["color"] for g in groups}
    want = {c["cause"]: c.get("color", group_colors[c["group"]]) for c in written}
    assert want["nccl_watchdog_timeout"] == group_colors["unknown"] and "color" not in written[8]  # the fallback
    counts = {r["cause"]: r["count"] for r in table5()}
    by_cause = pl.DataFrame(
        {
            "cause": [c["cause"] for c in written],
            "group": [c["group"] for c in written],
            "nof": [counts[c["cause"]] for c in written],
        }
    ).reverse()
    v = VOCABULARY.with_causes(LLAMA3)
    spec = charts.to_v5_spec(
        charts.cause_bars(by_cause, "nof", synthetic=True, chart_title="by cause", color_by="cause", vocabulary=v)
    )
    assert spec["title"] == "SYNTHETIC: by cause"
    assert spec["encoding"]["x"]["sort"] == list(want)  # the file's order
    assert list(_color_scale(spec).items()) == list(want.items())  # and its colours, a colour a cause
    assert spec["encoding"]["color"]["sort"] == list(want)  # the legend in the file's order
    # by group: the groups of the file's causes (and no other), in the groups' order and colours
    spec = charts.to_v5_spec(charts.cause_bars(by_cause, "nof", synthetic=True, chart_title="g", vocabulary=v))
    used = {c["group"] for c in written}
    assert list(_color_scale(spec).items()) == [(g["label"], g["color"]) for g in groups if g["group"] in used]

    first: dict[str, str] = {}  # each category's first cause's colour, in the file's order
    for c in written:
        first.setdefault(c["category"], want[c["cause"]])
    by_category = pl.DataFrame(
        {"category": list(first), "nof": [sum(r["count"] for r in table5() if r["category"] == k) for k in first]}
    ).reverse()
    spec = charts.to_v5_spec(charts.category_bars(by_category, "nof", synthetic=True, chart_title="c", vocabulary=v))
    assert spec["encoding"]["x"]["sort"] == list(first)
    assert list(_color_scale(spec).items()) == list(first.items())
    assert list(first) == ["GPU", "Dependency", "Network", "Unplanned Maintenance", "Host", "Unknown"]


def _want_by_category() -> dict[str, int]:
    """Table 5's counts summed by its categories (from the transcribed CSV, not from ettcore)."""
    want: dict[str, int] = {}
    for r in table5():
        want[r["category"]] = want.get(r["category"], 0) + r["count"]
    return want


def test_llama3_counts_come_back_in_ett_summarize_and_the_export(tmp_path, monkeypatch, capsys):
    """``--causes-file`` on the measuring commands: the SYNTHETIC Llama 3 trace's 419 interruptions come back by
    cause and by category in ``ett summarize`` (JSON and text) and in ``ett export prometheus``."""
    from ettcore import cli

    monkeypatch.setenv("ETT_CACHE_DIR", str(tmp_path / "cache"))
    folder = str(_llama3_trace(tmp_path / "t"))
    rows, by_category = table5(), _want_by_category()

    assert cli.main(["summarize", folder, "--causes-file", str(LLAMA3), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["synthetic"] is True
    fleet = doc["fleet"]
    assert {r["cause"]: fleet["nof_by_cause"][r["cause"]] for r in rows} == {r["cause"]: r["count"] for r in rows}
    assert sum(fleet["nof_by_cause"].values()) == fleet["nof"] == 419
    assert {k: v for k, v in fleet["nof_by_category"].items() if v} == by_category
    (job,) = doc["jobs"]
    assert job["nof_by_cause"]["faulty_gpu"] == 148 and job["nof_by_cause"]["system_memory"] == 2

    assert cli.main(["summarize", folder, "--causes-file", str(LLAMA3)]) == 0
    text = capsys.readouterr().out
    assert "SYNTHETIC" in text
    cause_rows = _table_after(text, "Interruptions by cause")
    want = {r["cause"]: r["count"] for r in rows}
    assert {r[0]: int(r[-3]) for r in cause_rows if r[0] in want} == want
    assert cause_rows[[r[0] for r in cause_rows].index("faulty_gpu")][1] == "GPU"
    category_rows = _table_after(text, "Interruptions by category")
    got = {" ".join(r[:-3]): int(r[-3]) for r in category_rows}
    assert {k: v for k, v in got.items() if v} == by_category

    out = tmp_path / "ett.prom"
    assert cli.main(["export", "prometheus", folder, "--causes-file", str(LLAMA3), "--out", str(out)]) == 0
    lines = set(out.read_text().splitlines())
    assert 'ett_trace_info{trace="' + folder + '",synthetic="true"} 1' in lines
    for r in rows:
        assert f'ett_fleet_interruptions_by_cause{{cause="{r["cause"]}"}} {r["count"]}' in lines
    for category, n in by_category.items():
        assert f'ett_fleet_interruptions_by_category{{category="{category}"}} {n}' in lines
        assert f'ett_model_interruptions_by_category{{model="llama3-405b",category="{category}"}} {n}' in lines


def _table_after(text: str, title: str) -> list[list[str]]:
    """The rows (split on blanks) of the text table printed under the line starting with ``title``."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(title)) + 3  # title, header, rule
    rows = []
    for ln in lines[start:]:
        if not ln.strip():
            break
        rows.append(ln.split())
    return rows


def _without_input(doc: dict) -> dict:
    """An answer less what names the input (its path and kind, and the store's analysis time per source)."""
    return {k: v for k, v in doc.items() if k not in ("input", "as_of")}


def _answer(capsys, *words: str) -> dict:
    assert cli.main([*words, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _series(path: Path) -> set[str]:
    """The samples of an export less those that name the input (``ett_trace_info``) and the comments."""
    return {ln for ln in path.read_text().splitlines() if not ln.startswith(("#", "ett_trace_info"))}


@pytest.fixture
def llama3_store(tmp_path, monkeypatch) -> tuple[str, str, str]:
    """(the SYNTHETIC Llama 3 trace, a store of it ingested with the causes file, the store's Parquet mirror)."""
    monkeypatch.setenv("ETT_CACHE_DIR", str(tmp_path / "cache"))
    folder = str(_llama3_trace(tmp_path / "t"))
    s, mirror = str(tmp_path / "fleet.duckdb"), str(tmp_path / "mirror")
    assert cli.main(["ingest", s, folder, "--causes-file", str(LLAMA3), "--parquet", mirror]) == 0
    return folder, s, mirror


def test_a_store_keeps_its_causes_file(llama3_store, tmp_path, capsys):
    """``ett ingest --causes-file``: the store keeps the causes, and ``summarize``, ``nodes`` and the export on it
    (given no causes file) answer what they answer on the trace with the file: Table 5's counts by cause and by
    category."""
    folder, s, _ = llama3_store
    capsys.readouterr()
    on_trace = _answer(capsys, "summarize", folder, "--causes-file", str(LLAMA3))
    on_store = _answer(capsys, "summarize", s)
    assert on_store["input"]["kind"] == "store" and on_store["synthetic"] is True
    fleet = on_store["fleet"]
    assert {r["cause"]: fleet["nof_by_cause"][r["cause"]] for r in table5()} == {
        r["cause"]: r["count"] for r in table5()
    }
    assert {k: v for k, v in fleet["nof_by_category"].items() if v} == _want_by_category()
    for key in ("nof_by_cause", "nof_by_category", "lost_gpu_h_by_cause"):
        assert fleet.get(key) == on_trace["fleet"].get(key), key
    assert on_store["jobs"][0]["nof_by_cause"] == on_trace["jobs"][0]["nof_by_cause"]
    assert _without_input(_answer(capsys, "nodes", s)) == _without_input(
        _answer(capsys, "nodes", folder, "--causes-file", str(LLAMA3))
    )
    a, b = tmp_path / "store.prom", tmp_path / "trace.prom"
    assert cli.main(["export", "prometheus", s, "--out", str(a)]) == 0
    assert cli.main(["export", "prometheus", folder, "--causes-file", str(LLAMA3), "--out", str(b)]) == 0
    by = [ln for ln in _series(a) if "_interruptions_by_c" in ln]
    assert len(by) > 2 * len(table5()) and set(by) == {ln for ln in _series(b) if "_interruptions_by_c" in ln}
    for category, n in _want_by_category().items():
        assert f'ett_fleet_interruptions_by_category{{category="{category}"}} {n}' in by
    # ett store info lists the causes it keeps, each with its group and category as the file gives them
    assert cli.main(["store", "info", s]) == 0
    info = capsys.readouterr().out.splitlines()
    at = next(i for i, ln in enumerate(info) if ln.startswith("causes: "))
    assert f"{len(table5())} of its first ingest's --causes-file" in info[at]
    listed = [ln.split() for ln in info[at + 3 : at + 3 + len(table5())]]
    want = {c["cause"]: (c["group"], c["category"]) for c in yaml.safe_load(LLAMA3.read_text())["causes"]}
    assert [r[0] for r in listed] == list(want)
    assert {r[0]: (r[1], " ".join(r[2:])) for r in listed} == want


def test_a_store_s_later_ingests_and_reads_keep_its_causes(llama3_store, tmp_path, capsys):
    """A later ingest without the file reads the store's causes; one with other causes is refused in one line; a
    read with a file that lacks a kept cause is refused in one line; one that has every kept cause and more is
    attributed again from the stored rows, with the same counts."""
    folder, s, _ = llama3_store
    capsys.readouterr()
    assert cli.main(["ingest", s, folder]) == 0  # the store's causes: the trace's are known, nothing changed
    assert "1 unchanged" in capsys.readouterr().out
    more = tmp_path / "more.yaml"  # the file's causes and one more
    more.write_text(LLAMA3.read_text() + "  - {cause: flaky_gpu, group: hardware, category: GPU}\n")
    assert cli.main(["ingest", s, folder, "--causes-file", str(more)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--causes-file" in err[0] and "keeps other causes" in err[0], err
    lacking = _file(tmp_path, [{"cause": "flaky_gpu", "group": "hardware"}])
    assert cli.main(["summarize", s, "--causes-file", str(lacking)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lacks causes the store keeps" in err[0] and "faulty_gpu" in err[0], err
    assert cli.main(["summarize", s, "--causes-file", str(more), "--json"]) == 0
    got = capsys.readouterr()
    assert "attributing again" in got.err
    fleet = json.loads(got.out)["fleet"]
    assert fleet["nof_by_cause"]["flaky_gpu"] == 0 and fleet["nof"] == 419
    assert {k: v for k, v in fleet["nof_by_category"].items() if v} == _want_by_category()


def test_a_store_made_before_stores_kept_causes_reads_the_package_s(tmp_path, monkeypatch, capsys):
    """A store whose metadata has no ``causes`` (made before stores kept them) reads the package's causes."""
    import duckdb

    from ettcore.config import SAMPLE_TRACE
    from ettcore.store import db

    monkeypatch.setenv("ETT_CACHE_DIR", str(tmp_path / "cache"))
    s = tmp_path / "old.duckdb"
    assert cli.main(["ingest", str(s), str(SAMPLE_TRACE)]) == 0
    con = duckdb.connect(str(s))
    con.execute("DELETE FROM ett_store WHERE key = 'causes'")
    con.close()
    assert db.vocabulary_at(s).causes == VOCABULARY.causes
    capsys.readouterr()
    doc = _answer(capsys, "summarize", str(s))
    assert list(doc["fleet"]["nof_by_cause"]) == list(VOCABULARY.cause_names)
    assert cli.main(["store", "info", str(s)]) == 0
    assert "causes: the built-in causes (ettcore/defaults/causes.yaml)" in capsys.readouterr().out.splitlines()


@pytest.mark.skipif(not spark_available(), reason="pyspark or Java not installed")
@pytest.mark.spark
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_spark_reads_the_causes_file_and_the_mirror_keeps_it(llama3_store, spark_master, capsys):
    """``--engine spark``: on the trace with ``--causes-file``, and on the store (read through its Parquet mirror,
    whose pointer carries the causes) without it, Table 5's counts by cause and by category, as DuckDB gives them."""
    folder, s, mirror = llama3_store
    capsys.readouterr()
    spark = ["--engine", "spark", "--spark-master", spark_master]
    on_duckdb = _answer(capsys, "summarize", folder, "--causes-file", str(LLAMA3))["fleet"]
    for words in (
        ["summarize", folder, "--causes-file", str(LLAMA3), *spark],
        ["summarize", s, *spark],
        ["summarize", mirror, *spark],
    ):
        doc = _answer(capsys, *words)
        assert doc["input"]["engine"] == "spark", words
        fleet = doc["fleet"]
        assert fleet["nof_by_cause"] == on_duckdb["nof_by_cause"], words
        assert {k: v for k, v in fleet["nof_by_category"].items() if v} == _want_by_category(), words
