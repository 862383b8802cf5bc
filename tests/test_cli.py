"""The `ett` command: help for every subcommand, --version, and text/CSV output."""

from __future__ import annotations

import argparse

import pytest

from ettcore import __version__, cli


def _subcommands() -> list[str]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def test_every_plugin_is_registered():
    names = _subcommands()
    for expected in ("summarize", "trend", "validate", "opportunities", "import", "synth", "from-recorder", "live-job"):
        assert expected in names


@pytest.mark.parametrize("argv", [["--help"]] + [[c, "--help"] for c in _subcommands()])
def test_help_renders(argv, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_version(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert capsys.readouterr().out.strip() == f"ett {__version__}"


def test_summarize_text_and_csv(sample_trace, capsys):
    assert cli.main(["summarize", str(sample_trace), "--by", "model"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SYNTHETIC trace")
    assert "worked-example" in out and "By model:" in out and "Fleet (GPU-time weighted):" in out
    assert cli.main(["summarize", str(sample_trace), "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("job_id,model,gpus,status") and len(lines) == 5


def test_trend_csv(sample_trace, capsys):
    assert cli.main(["trend", str(sample_trace), "--every", "month", "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("bucket_start,ett_pct") and lines[1].startswith("2026-01-01,")


def test_unknown_by_is_exit_2(sample_trace, capsys):
    assert cli.main(["summarize", str(sample_trace), "--by", "nope"]) == 2
    assert "unknown grouping column" in capsys.readouterr().err


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_summarize_json_is_the_same_text_through_a_byte_buffer(sample_trace, encoding):
    """The jobs of `summarize --json` are written to a UTF-8 stream's byte buffer, and as text to any other stream:
    both give the same JSON, non-ASCII labels included."""
    import io
    import json

    import polars as pl

    from ettcore import metric
    from ettcore.trace import load as trace_mod

    jobs = metric.job_summary(trace_mod.load_trace(sample_trace))
    jobs = jobs.with_columns(pl.Series("note", ['Zürich · 東京 "q"'] * jobs.height))
    head, tail = {"trace": "t"}, {"fleet": None}
    as_text = io.StringIO()
    cli.write_summary_json(head, jobs, tail, out=as_text, labels=["note"])
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, write_through=False)
    cli.write_summary_json(head, jobs, tail, out=stream, labels=["note"])
    stream.flush()
    assert raw.getvalue().decode(encoding) == as_text.getvalue()
    doc = json.loads(as_text.getvalue())
    assert [j["labels"]["note"] for j in doc["jobs"]] == ['Zürich · 東京 "q"'] * jobs.height
    assert [j["job_id"] for j in doc["jobs"]] == jobs["job_id"].to_list()


def test_summarize_json_blocks_keep_job_order_when_encoded_in_parallel(sample_trace):
    """Chunks encoded by several threads come back in job order: with one job a chunk, every job is a block of its
    own, and the blocks are the jobs in order, the same as one worker's."""
    import json

    from ettcore import metric
    from ettcore.trace import load as trace_mod

    jobs = metric.job_summary(trace_mod.load_trace(sample_trace))
    assert jobs.height >= 3
    for as_bytes in (False, True):
        one = list(cli.job_json_blocks(jobs, chunk=1, workers=1, as_bytes=as_bytes))
        many = list(cli.job_json_blocks(jobs, chunk=1, workers=3, as_bytes=as_bytes))
        assert many == one
        assert [json.loads(b)["job_id"] for b in many] == jobs["job_id"].to_list()


def _table_one_value_at_a_time(rows: list[dict], columns: list[str], digits: int) -> str:
    """The terminal table built the plain way, a Python string a value: the oracle for cli.format_table."""
    from datetime import date, datetime

    def cell(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:,.{digits}f}"
        if isinstance(v, datetime):
            return v.isoformat() + "Z"
        if isinstance(v, date):
            return v.isoformat()
        return str(v)

    body = [[cell(r[c]) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths)), "  ".join("-" * w for w in widths)]
    return "\n".join(lines + ["  ".join(v.rjust(w) for v, w in zip(b, widths)) for b in body])


@pytest.mark.parametrize("digits", [0, 1, 2, 3])
def test_terminal_tables_format_every_value_as_python_does(digits):
    """format_table formats whole columns (floats by DuckDB's format): every cell must read as Python's own
    formatting gives it, thousands separators, rounding ties, -0, NaN, infinities, nulls and non-ASCII included."""
    import math
    import random
    from datetime import date, datetime

    import polars as pl

    rng = random.Random(7)
    floats = [
        0.25,
        0.35,
        2.5,
        -0.0,
        1234567.25,
        -1234.55,
        math.nan,
        math.inf,
        -math.inf,
        1e20,
        0.05,
        999.95,
        None,
        5e-324,
        -0.04,
        0.125,
        1.0005,
    ]
    floats += [rng.uniform(-1e7, 1e7) for _ in range(400)]
    floats += [rng.choice([0.5, 1.5, 2.25, -3.75, 0.125]) * 10 ** rng.randint(-3, 7) for _ in range(400)]
    n = len(floats)
    df = pl.DataFrame(
        {
            "seconds": floats,
            "count": [rng.choice([None, 0, 1, -22, 3333, 10**12]) for _ in range(n)],
            "name": [rng.choice([None, "Zürich", "東京 x", "a", ""]) for _ in range(n)],
            "flag": [rng.choice([None, True, False]) for _ in range(n)],
            "day": [rng.choice([None, date(2026, 1, 2)]) for _ in range(n)],
            "at": [
                rng.choice([None, datetime(2026, 1, 2, 3, 4, 5), datetime(2026, 1, 2, 3, 4, 5, 123)]) for _ in range(n)
            ],
            "single": pl.Series(
                [None if v is None or not math.isfinite(v) or abs(v) > 1e30 else v for v in floats], dtype=pl.Float32
            ),
        }
    )
    cols = df.columns
    assert cli.format_table(df, cols, digits) == _table_one_value_at_a_time(df.to_dicts(), cols, digits)
    assert cli.format_table(df.head(0), cols, digits) == _table_one_value_at_a_time([], cols, digits)
    # written in blocks: the same text, each block ending a line
    blocks = list(cli.table_blocks(df, cols, digits, chunk=37))
    assert len(blocks) == 1 + math.ceil(n / 37) and all(b.endswith("\n") for b in blocks)
    assert "".join(blocks)[:-1] == _table_one_value_at_a_time(df.to_dicts(), cols, digits)
