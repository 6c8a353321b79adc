"""The PostgreSQL bench cases (benchmarks/postgres_cases.py) at a toy scale: each finds what its
DuckDB twin finds on the same data (the verifier's violations and smallest class, the floor's
value), and the floor's count is the verifier's, so the two time the same work."""
from __future__ import annotations

import pytest

from benchmarks import postgres_cases
from benchmarks.cases import CASES, FLOORS, PEERS

SCALE = 0.01


@pytest.fixture(scope="module", autouse=True)
def _server():
    pytest.importorskip("pgserver", reason="pgserver is not installed: pip install -e '.[postgres-test]'")
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[postgres-test]'")


@pytest.mark.parametrize("name", ["verify_k_postgres", "verify_k_postgres_floor", "verify_km_postgres",
                                  "verify_km_postgres_floor"])
def test_a_postgres_case_finds_what_its_duckdb_twin_finds(name):
    assert CASES[name] is getattr(postgres_cases, name)
    mine, twin = CASES[name](SCALE), CASES[PEERS[name]](SCALE)
    figures = [k for k in ("rows", "violations", "min_class", "value") if k in twin]
    assert len(figures) >= 2 and {k: mine[k] for k in figures} == {k: twin[k] for k in figures}
    assert mine["seconds"] > 0


def test_the_km_floor_counts_the_verifiers_violations():
    assert FLOORS["verify_km_postgres_floor"] == "verify_km_postgres"
    assert CASES["verify_km_postgres_floor"](SCALE)["value"] == CASES["verify_km_postgres"](SCALE)["violations"]
