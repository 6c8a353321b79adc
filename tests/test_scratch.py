"""Issue #16 item 8: every scratch relation is named by anon_duck/scratch.py, and no scratch
table survives a run of any fixture job (the cleanup finds them by their prefix)."""
from __future__ import annotations

import duckdb
import pytest

import anon_duck
from anon_duck.job import load_job

from conftest import JOBS, REPO

# artuc_informs_uc2..uc9 differ from uc1 only in their utility constraints (the same code path,
# 10-15 s each): uc1 stands for them
ALL_JOBS = [p for p in sorted(JOBS.glob("*.toml")) if not p.name.startswith("artuc_informs_uc") or
            p.name == "artuc_informs_uc1.toml"]
# each of these takes more than a few seconds; the rest run in the fast subset
SLOW = {"artuc_informs_uc1.toml", "disassociation_bms.toml", "disassociation_informs.toml",
        "disassociation_cba_informs.toml", "lkc_adult.toml", "lkc_adult_full.toml", "longitudinal_mimic.toml",
        "counterfeit_adult.toml", "adult_fulldomain.toml"}


def _temp_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every TEMP table of the connection, prefixed or not: a scratch table that lost its prefix
    is exactly what the cleanup would miss."""
    return [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()]


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in SLOW else [])
                                  for p in ALL_JOBS])
def test_no_scratch_table_survives_a_fixture_job(path):
    job = load_job(path)
    with duckdb.connect() as con:
        anon_duck.run(con, job)
        assert _temp_tables(con) == []
        anon_duck.verify(con, job)
        anon_duck.report(con, job)
        assert _temp_tables(con) == []


def test_scratch_names_are_built_in_one_place():
    """No module but anon_duck/scratch.py (and the backends, which translate it for their
    engine) spells the scratch schema: a hand-built ("temp", "main", ...) tuple is how
    lkc/blowup.py once lost the prefix the cleanup needs."""
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "anon_duck").rglob("*.py")
                 if p.name != "scratch.py" and "backend" not in p.parts and '"temp", "main"' in p.read_text()]
    assert offenders == []
