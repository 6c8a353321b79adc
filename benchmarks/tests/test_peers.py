"""Our verifiers and risk measures agree with the peers the bench measures them against
(pycanon's k-anonymity and l-diversity) on seeded random tables. Peers come with the bench
extra (`pip install -e ".[bench]"`): pycanon pins an old numpy, so the product's test
environment does not install it and these tests skip there, saying so."""
from __future__ import annotations

import random

import duckdb
import pytest

from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.verifiers import k_anonymity, l_diversity

anonymity = pytest.importorskip("pycanon.anonymity", reason="pycanon (a bench peer) is not installed: "
                                                            "pip install -e '.[bench]'")
pd = pytest.importorskip("pandas")

QIS = ["a", "b", "c"]


def _table(rng: random.Random) -> list[tuple]:
    return [(rng.choice("xyz"), rng.randrange(3), rng.choice("pq"), rng.choice("uvw"))
            for _ in range(rng.randrange(1, 60))]


@pytest.mark.parametrize("seed", range(20))
def test_k_and_l_agree_with_pycanon(seed):
    rng = random.Random(seed)
    rows = _table(rng)
    con = duckdb.connect()
    con.execute("CREATE TABLE p (a VARCHAR, b INTEGER, c VARCHAR, s VARCHAR)")
    con.executemany("INSERT INTO p VALUES (?, ?, ?, ?)", rows)
    backend = DuckDBBackend(con)
    df = pd.DataFrame(rows, columns=[*QIS, "s"])
    k = k_anonymity(backend, relation="p", qis=QIS, k=1).detail["min_class_size"]
    l = l_diversity(backend, relation="p", qis=QIS, sensitive="s", l=1).detail["min_distinct_sensitive"]
    assert k == anonymity.k_anonymity(df, QIS)
    assert l == anonymity.l_diversity(df, QIS, ["s"])
