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
