"""Issue #20 item 3: every release publishes analyst views over its own tables; verify checks
them, export writes them, and every query of docs/analyst.md gives the documented rows."""
from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest
import sqlglot
from sqlglot import exp

import anon_duck
from anon_duck.api import view_name
from anon_duck.errors import InputError
from anon_duck.job import load_job
from anon_duck.methods import get_method

from conftest import JOBS

ANALYST = Path(__file__).resolve().parents[1] / "docs" / "analyst.md"
EXAMPLE = re.compile(r"```sql\n-- job: (\S+)\n(.*?)```\n```text\n(.*?)```", re.S)
TOYS = ["toy_fulldomain", "lkc_toy", "counterfeit_toy", "artuc_toy", "disassociation_toy", "disassociation_cba_toy",
        "longitudinal_toy"]


@pytest.fixture(scope="module")
def released():
    """One fresh database per toy job, with its release published."""
    out = {}
    for toy in TOYS:
        con = duckdb.connect()
        anon_duck.run(con, load_job(JOBS / f"{toy}.toml"))
        out[toy] = con
    return out


@pytest.mark.parametrize("toy", TOYS)
def test_views_read_only_the_release_tables_and_verify(released, toy):
    con, job = released[toy], load_job(JOBS / f"{toy}.toml")
    names = [view_name(job.release.name, v) for v in get_method(job.method).views]
    assert names[0] == job.release.name
    listed = {r[0] for r in con.execute(f"SELECT value FROM \"{job.release.name}_meta\" WHERE key = 'table'").fetchall()}
    for name in names:
        (sql,) = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [name]).fetchone()
        definition = sqlglot.parse_one(sql, read="duckdb").expression      # CREATE VIEW name AS <this>
        read = {t.name for t in definition.find_all(exp.Table)} - {c.alias_or_name for c in definition.find_all(exp.CTE)}
        assert read and read <= listed, (name, read - listed)
        assert con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] > 0
    views = anon_duck.verify(con, job)[-1]
    assert views.name == "analyst_views" and views.passed and views.detail["views"] == names


def test_a_tampered_or_missing_view_fails_verify(released):
    con, job = released["artuc_toy"], load_job(JOBS / "artuc_toy.toml")
    con.execute('ALTER VIEW artuc_toy RENAME TO artuc_toy_kept')
    try:
        con.execute('CREATE VIEW artuc_toy AS SELECT * FROM artuc_toy_kept WHERE record > 0')
        check = anon_duck.verify(con, job)[-1]
        assert not check.passed and check.violations[0]["view"] == "artuc_toy" and "differ" in check.violations[0]["problem"]
        con.execute("DROP VIEW artuc_toy_codes")
        assert {v["view"] for v in anon_duck.verify(con, job)[-1].violations} == {"artuc_toy", "artuc_toy_codes"}
    finally:
        anon_duck.run(con, job)          # republished: the views come back, replaced
    con.execute("DROP VIEW artuc_toy_kept")
    assert anon_duck.verify(con, job)[-1].passed


def test_a_user_table_named_like_the_view_is_never_overwritten(tmp_path):
    con = duckdb.connect()
    con.execute("CREATE TABLE lkc_toy AS SELECT 1 AS mine")
    with pytest.raises(InputError, match="would overwrite table 'lkc_toy'"):
        anon_duck.run(con, load_job(JOBS / "lkc_toy.toml"))
    assert con.execute("SELECT * FROM lkc_toy").fetchall() == [(1,)]


def test_export_writes_the_views(released, tmp_path):
    con, job = released["disassociation_toy"], load_job(JOBS / "disassociation_toy.toml")
    files = {f.name for f in anon_duck.export(con, job, tmp_path / "out.csv")}
    assert {"toy_dis.csv", "toy_dis_terms.csv"} <= files
    exported = tmp_path / "out.csv" / "toy_dis.csv"
    assert duckdb.connect().execute(f"SELECT count(*) FROM read_csv('{exported}')").fetchone() == \
        con.execute("SELECT count(*) FROM toy_dis").fetchone()


def test_every_query_of_the_analyst_guide_gives_its_documented_rows(released):
    examples = EXAMPLE.findall(ANALYST.read_text())
    assert len(examples) >= 8 and {job for job, _, _ in examples} == set(TOYS)
    for job, sql, rows in examples:
        got = [repr(tuple(r)) for r in released[job].execute(sql).fetchall()]
        assert got == rows.strip().splitlines(), sql
