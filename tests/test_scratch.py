"""Issue #16 item 8: every scratch relation is named by anon_duck/scratch.py, the cleanup looks
for them where scratch() puts them, and no scratch table survives a run of any fixture job
(temp or main)."""
from __future__ import annotations

import duckdb
import pytest

import anon_duck
import anon_duck.scratch as scratch_names
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.job import load_job
from anon_duck.scratch import PREFIX, drop_scratch, scratch, scratch_tables

from conftest import ALL_JOBS, JOBS, REPO, user_tables

# each of these takes more than 4 s (run, verify and report; 2 shared cores); the rest, real data
# included (up to ~2 s), run in the fast subset
SLOW = {"artuc_informs_uc1.toml", "disassociation_bms.toml", "disassociation_informs.toml", "counterfeit_adult.toml"}
# their reports (the longest part: workloads, reconstructions, query errors) make the scratch
# tables their methods' toy jobs' reports make, checked there; their run and verify are checked
REPORTED_ON_TOYS = {"artuc_informs_uc1.toml", "disassociation_bms.toml", "counterfeit_adult.toml"}


def _leftovers(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every TEMP table of the connection, prefixed or not (a scratch table that lost its prefix
    is exactly what the cleanup would miss), and every ``_ad_`` table of the database (scratch
    written outside TEMP, which the connection's end would not drop either)."""
    temp = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()]
    return sorted(set(temp) | {t for t in user_tables(con) if t.startswith(PREFIX)})


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in SLOW else [])
                                  for p in ALL_JOBS])
def test_no_scratch_table_survives_a_fixture_job(path):
    job = load_job(path)
    with duckdb.connect() as con:
        anon_duck.run(con, job)
        assert _leftovers(con) == []
        anon_duck.verify(con, job)
        if path.name not in REPORTED_ON_TOYS:
            anon_duck.report(con, job)
        assert _leftovers(con) == []


def test_the_cleanup_lists_scratch_tables_only_and_by_group():
    """scratch_tables finds what scratch() named (a group alone when asked), never a table of
    the user's: an unprefixed TEMP table or a ``_ad_`` table in the database itself."""
    with duckdb.connect() as con:
        backend = DuckDBBackend(con)
        for name in ("cf_release", "cf_catalog", "codes"):
            backend.write_table(scratch(name), {"a": [1]})
        con.execute("CREATE TEMP TABLE mine (a INTEGER)")
        con.execute("CREATE TABLE _ad_users_own (a INTEGER)")
        assert scratch_tables(backend) == [scratch("cf_catalog"), scratch("cf_release"), scratch("codes")]
        assert scratch_tables(backend, group="cf_") == [scratch("cf_catalog"), scratch("cf_release")]
        drop_scratch(backend, group="cf_")
        assert scratch_tables(backend) == [scratch("codes")]
        drop_scratch(backend)
        assert sorted(user_tables(con)) == ["_ad_users_own", "mine"]


def test_the_cleanup_looks_where_scratch_puts_tables(monkeypatch):
    """The cleanup's catalog, schema and prefix come from scratch() alone: were scratch tables
    put in the database's main schema under another prefix, the cleanup would find and drop
    them there (it used to look in TEMP whatever scratch() said)."""
    monkeypatch.setattr(scratch_names, "scratch", lambda name: ("memory", "main", "_zz_" + name))
    with duckdb.connect() as con:
        backend = DuckDBBackend(con)
        con.execute("CREATE TABLE _zz_work (a INTEGER)")
        con.execute("CREATE TEMP TABLE _ad_other (a INTEGER)")
        assert scratch_tables(backend) == [("memory", "main", "_zz_work")]
        drop_scratch(backend)
        assert sorted(user_tables(con)) == ["_ad_other"]


def test_scratch_names_are_built_in_one_place():
    """No module but anon_duck/scratch.py (and the backends, which translate it for their
    engine) spells the scratch schema: a hand-built ("temp", "main", ...) tuple is how
    lkc/blowup.py once lost the prefix the cleanup needs."""
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "anon_duck").rglob("*.py")
                 if p.name != "scratch.py" and "backend" not in p.parts and '"temp", "main"' in p.read_text()]
    assert offenders == []
