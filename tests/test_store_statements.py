"""The fleet store's SQL (ettcore.store.statements): one statement a file in ettcore/sql/store, markers rendered.

A statement names the store's own tables as ``{{name}}`` and repeats a text over columns read from the store's own
schema as ``{{each LIST: TEXT}}`` (a bound parameter cannot name a column); values are bound.  These tests hold the
renderer to quoting whatever a column is called, to refusing text where a name belongs, and every file to one
statement that DuckDB parses; and the store's modules to holding no SQL of their own.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import duckdb
import pytest

from ettcore.config import PACKAGE_DIR, SQL_DIR
from ettcore.store import statements
from ettcore.store.statements import Column, columns_of, render

# column names a source's jobs table may bring as labels: quotes, the renderer's own @ and markers, SQL
HOSTILE = ['a"b', "x@type", "y@n", "{{tables}}", "z'); DROP TABLE t; --", "Mixed Case"]


def test_each_column_is_quoted_typed_and_numbered():
    cols = [Column("job_id", "VARCHAR"), Column('a"b', "BIGINT"), Column("gone", "DOUBLE", present=False)]
    out = render("SELECT {{each c: CAST(@ AS @type) AS c@n}} FROM {{t}}", t="rows_jobs", c=cols)
    assert out == (
        'SELECT CAST("job_id" AS VARCHAR) AS c0, CAST("a""b" AS BIGINT) AS c1, CAST(NULL AS DOUBLE) AS c2 '
        "FROM rows_jobs"
    )


def test_hostile_column_names_hash_like_a_hand_written_query():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (" + ", ".join(f'"{c.replace(chr(34), chr(34) * 2)}" INTEGER' for c in HOSTILE) + ")")
    con.execute("INSERT INTO t VALUES (1, 2, 3, 4, 5, 6), (7, 8, 9, 10, 11, 12)")
    schema = {r[0]: r[1] for r in con.execute("DESCRIBE t").fetchall()}
    assert list(schema) == HOSTILE
    built = render("SELECT sum(hash({{each cols: CAST(@ AS @type)}})::HUGEINT) FROM t", cols=columns_of(schema))
    by_hand = (
        'SELECT sum(hash("a""b", "x@type", "y@n", "{{tables}}", "z\'); DROP TABLE t; --", "Mixed Case")::HUGEINT)'
        " FROM t"
    )
    assert con.execute(built).fetchall() == con.execute(by_hand).fetchall()
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(2,)]  # nothing of a name ran as SQL


def test_columns_of_skips_and_marks_what_a_relation_lacks():
    schema = {"source": "VARCHAR", "Job_ID": "VARCHAR", "gpus": "BIGINT", "team": "VARCHAR"}
    got = columns_of(schema, present=["job_id", "GPUS"], skip=("source",))
    assert got == [Column("Job_ID", "VARCHAR"), Column("gpus", "BIGINT"), Column("team", "VARCHAR", present=False)]
    assert [c.present for c in columns_of(schema)] == [True] * 4


@pytest.mark.parametrize(
    "parts,why",
    [
        ({"t": "rows_jobs; DROP TABLE st.ett_jobs"}, "one of the store's own names"),
        ({"t": 'st."x"'}, "one of the store's own names"),
        ({"t": [Column("a", "INTEGER")]}, "one of the store's own names"),
        ({"t": "rows_jobs", "unused": "x"}, "no marker for unused"),
    ],
)
def test_text_where_a_name_belongs_is_refused(parts, why):
    with pytest.raises(ValueError, match=why):
        render("SELECT 1 FROM {{t}}", **parts)


def test_a_name_where_columns_belong_is_refused():
    with pytest.raises(ValueError, match="needs a list of columns"):
        render("SELECT {{each c: @}}", c="job_id")


def test_the_vocabularys_markers_render_beside_the_stores():
    out = render("SELECT {{each tables: n_@}}, {{each c: @}} FROM {{t}}", t="ett_jobs", c=[Column("x", "INTEGER")])
    assert out == 'SELECT n_jobs, n_attempts, n_spans, n_rank_timing, "x" FROM ett_jobs'
    with pytest.raises(KeyError, match="unknown vocabulary"):
        render("SELECT {{nothing_of_that_name}}")


def _store_files() -> list[Path]:
    return sorted((SQL_DIR / "store").glob("*.sql"))


def _filled(path: Path) -> str:
    """A file's statement with every marker of its own written out (a name, or one column), for parsing."""
    text = path.read_text(encoding="utf-8")
    parts: dict = {}
    for inner in re.findall(r"\{\{(.*?)\}\}", text, re.S):
        each = re.fullmatch(r"\s*each\s+([a-z_]+)\s*:.*", inner, re.S)
        name = each.group(1) if each else inner.strip()
        if name in ("tables", "nof") or not re.fullmatch(r"[a-z_]+", name):
            continue  # the vocabulary's
        parts[name] = [Column("a", "INTEGER")] if each else "spans"
    return render(text, path.name, **parts)


@pytest.mark.parametrize("path", _store_files(), ids=lambda p: p.name)
def test_every_store_file_is_one_statement_duckdb_parses(path):
    text = _filled(path)
    assert text.lstrip().startswith("--"), "a file says what it returns or does, first"
    assert len(duckdb.extract_statements(text)) == 1


def test_every_store_statement_is_run_by_the_store():
    """No file is left behind: each name is run by ettcore.store (the span store's two by ettcore.trace)."""
    code = "\n".join(p.read_text(encoding="utf-8") for p in (PACKAGE_DIR / "store").glob("*.py"))
    named = set(re.findall(r'"([a-z_]+)"', code))
    unused = [
        p.stem for p in _store_files() if p.stem not in named and p.stem not in ("span_store", "train_overlap_suspects")
    ]
    assert unused == []


_SQL_WORD = re.compile(r"\b(SELECT|INSERT|DELETE|UPDATE|CREATE|WITH|ALTER)\b")


def test_the_store_modules_hold_no_sql_of_their_own():
    """Every statement of ettcore/store is a file; the one text left is create_as's wrapper around a query file."""
    found = []
    for path in sorted((PACKAGE_DIR / "store").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(n) is not None
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if _SQL_WORD.search(node.value):
                    found.append((path.name, node.value))
    assert found == [("statements.py", "CREATE OR REPLACE TEMP ")]


def test_create_as_names_only_temporary_relations_of_this_package():
    con = duckdb.connect()
    statements.create_as(con, "VIEW", "ett_x", "SELECT 1 AS one")
    assert con.execute("SELECT * FROM ett_x").fetchall() == [(1,)]
    with pytest.raises(ValueError):
        statements.create_as(con, "VIEW", "x; DROP VIEW ett_x", "SELECT 1")
    with pytest.raises(ValueError):
        statements.create_as(con, "MACRO", "ett_y", "SELECT 1")
