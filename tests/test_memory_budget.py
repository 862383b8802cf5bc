"""The default memory budget (ettcore.trace.memory): a fixed budget unless --memory-limit or ETT_MEMORY_LIMIT says
otherwise, never DuckDB's 80 % of the machine."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ettcore.errors import TraceError
from ettcore.trace import load_trace, memory


def setting(trace) -> str:
    return trace.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]


@pytest.fixture
def sample(sample_trace):
    return sample_trace


def test_default_budget_is_three_gigabytes_or_less(sample, monkeypatch):
    monkeypatch.delenv("ETT_MEMORY_LIMIT", raising=False)
    got = memory.limit_bytes(load_trace(sample).con)
    # DuckDB reads 3 GB (2.79 GiB) back as '2.7 GiB' (cut to a tenth); less on a machine with under 3.75 GB
    assert got <= 3e9
    total = memory._machine_bytes()
    if total is None or 0.8 * total >= 3e9:
        assert got >= 2.7 * 2**30


def test_environment_variable_and_argument(sample, monkeypatch):
    monkeypatch.setenv("ETT_MEMORY_LIMIT", "500MB")
    assert setting(load_trace(sample)) == "476.8 MiB"  # 500e6 bytes in MiB, as DuckDB prints it
    assert setting(load_trace(sample, memory_limit="200MB")) == "190.7 MiB"  # the argument wins


def test_a_bad_environment_value_is_named(sample, monkeypatch):
    monkeypatch.setenv("ETT_MEMORY_LIMIT", "lots")
    with pytest.raises(TraceError) as err:
        load_trace(sample)
    assert "ETT_MEMORY_LIMIT" in str(err.value) and "'lots'" in str(err.value)


def test_the_command_takes_the_environment_variable(sample, tmp_path):
    env = {"ETT_MEMORY_LIMIT": "lots", "PATH": "/usr/bin:/bin"}
    res = subprocess.run(
        [sys.executable, "-m", "ettcore.cli", "summarize", str(sample), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert res.returncode == 2
    assert "ETT_MEMORY_LIMIT" in res.stderr and "memory_limit" in res.stderr


@pytest.mark.parametrize(
    "text, want",
    [
        ("3GB", 3e9),
        ("2.7 GiB", 2.7 * 2**30),
        ("500 mb", 5e8),
        ("12", 12.0),
        ("lots", None),
        ("1.2.3GB", None),
        ("5 parsecs", None),
    ],
)
def test_size_bytes(text, want):
    assert memory.size_bytes(text) == want
