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

    from ettcore import metric, trace as trace_mod

    jobs = metric.job_summary(trace_mod.load_trace(sample_trace))
    jobs = jobs.with_columns(pl.Series("note", ["Zürich · 東京 \"q\""] * jobs.height))
    head, tail = {"trace": "t"}, {"fleet": None}
    as_text = io.StringIO()
    cli.write_summary_json(head, jobs, tail, out=as_text, labels=["note"])
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, write_through=False)
    cli.write_summary_json(head, jobs, tail, out=stream, labels=["note"])
    stream.flush()
    assert raw.getvalue().decode(encoding) == as_text.getvalue()
    doc = json.loads(as_text.getvalue())
    assert [j["labels"]["note"] for j in doc["jobs"]] == ["Zürich · 東京 \"q\""] * jobs.height
    assert [j["job_id"] for j in doc["jobs"]] == jobs["job_id"].to_list()
