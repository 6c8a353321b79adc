"""l-diversity (distinct, entropy, recursive (c, l)) and t-closeness (equal and ordered EMD):
the Python verifiers (which render the dbt package's macros) against the definitions computed
in plain Python (tests/privacy_brute.py) on seeded random tables with NULLs in QIs and in the
sensitive column (issue #32 part 2, issue #29 item 11)."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from anon_duck.errors import InputError
from anon_duck.sqlrender import dbt_macros
from anon_duck.verifiers import l_diversity, t_closeness

from conftest import put
from privacy_brute import classes, emd, l_violates, t_violates

SEEDS = range(10)


def _draw(rng: random.Random, numeric: bool) -> list[dict]:
    n = rng.randrange(1, 45)
    pool = [1, 2, 3, 5, 8, None] if numeric else ["flu", "hiv", "copd", "asthma", None]
    rows = [{"a": rng.choice(["x", "y", None]), "b": f"b{rng.randrange(2)}",
             "s": rng.choice(pool[:rng.randrange(2, len(pool) + 1)])} for _ in range(n)]
    if not any(r["s"] is None for r in rows) and rng.random() < 0.5:
        rows[0]["s"] = None
    return rows


def _table(backend, rows: list[dict]) -> None:
    put(backend, "t", {c: [r[c] for r in rows] for c in ("a", "b", "s")})
    if any(isinstance(r["s"], int) for r in rows):       # a numeric sensitive column, NULLs and all
        backend.con.execute("CREATE OR REPLACE TABLE t AS SELECT a, b, CAST(s AS INTEGER) AS s FROM t")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["distinct", "entropy", "recursive"])
def test_l_diversity_equals_its_definition(backend, seed, kind):
    rng = random.Random(seed)
    rows = _draw(rng, numeric=False)
    _table(backend, rows)
    l = rng.randrange(1, 4)
    c = rng.choice([0.5, 1, 1.5, 2, 3]) if kind == "recursive" else None
    groups = classes(rows, ["a", "b"], "s")
    bad = {key for key, counts in groups.items() if l_violates(counts, kind, l, c)}
    res = l_diversity(backend, relation="t", qis=["a", "b"], sensitive="s", l=l, kind=kind, c=c, limit=100)
    assert (res.passed, res.n_violations) == (not bad, len(bad))
    assert {(v["a"], v["b"]) for v in res.violations} == bad
    assert res.detail["min_distinct_sensitive"] == min(len(g) for g in groups.values())
    assert res.detail.get("nulls", {}).get("s", 0) == sum(r["s"] is None for r in rows)
    # the dbt macro the generic test runs lists the same classes
    sql = dbt_macros("duckdb").l_diversity_violations('"t"', ["a", "b"], "s", l, kind=kind, c=c)
    assert {tuple(r[:2]) for r in backend.rows("macro", sql)} == bad


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ordered", [False, True])
def test_t_closeness_equals_the_emd_of_its_definition(backend, seed, ordered):
    rng = random.Random(seed)
    rows = _draw(rng, numeric=ordered)
    _table(backend, rows)
    t = rng.choice([0.0, 0.1, 0.2, 0.35, 0.6])
    groups = classes(rows, ["a", "b"], "s")
    reference = Counter(r["s"] for r in rows)
    want = {key: emd(counts, reference, ordered) for key, counts in groups.items()}
    bad = {key for key, counts in groups.items() if t_violates(counts, reference, t, ordered)}
    res = t_closeness(backend, relation="t", qis=["a", "b"], sensitive="s", t=t, limit=100)   # ordered from the type
    assert res.detail["ordered"] is ordered
    assert (res.passed, res.n_violations) == (not bad, len(bad))
    assert {(v["a"], v["b"]): v["emd"] for v in res.violations} == pytest.approx({k: want[k] for k in bad}, abs=1e-12)
    assert res.detail["max_emd"] == pytest.approx(max(want.values()), abs=1e-12)
    sql = dbt_macros("duckdb").t_closeness_classes('"t"', ["a", "b"], "s", ordered=ordered)
    assert {tuple(r[:2]): r[3] for r in backend.rows("macro", sql)} == pytest.approx(want, abs=1e-12)


def test_t_closeness_against_a_reference_relation(backend):
    """A release that left records out is measured against its input's distribution."""
    put(backend, "t", {"a": ["x", "x", "y", "y"], "b": ["b", "b", "b", "b"], "s": ["flu", "hiv", "flu", "hiv"]})
    put(backend, "ref", {"s": ["flu"] * 6 + ["hiv"] * 2})
    res = t_closeness(backend, relation="t", qis=["a", "b"], sensitive="s", t=0.2, reference="ref")
    assert not res.passed and res.detail["max_emd"] == pytest.approx(0.25)      # 1/2 |.5-.75| * 2
    assert t_closeness(backend, relation="t", qis=["a", "b"], sensitive="s", t=0.2).passed


def test_bad_arguments_name_the_parameter(backend):
    put(backend, "t", {"a": ["x"], "s": ["flu"]})
    with pytest.raises(InputError, match="needs a number c > 0"):
        l_diversity(backend, relation="t", qis=["a"], sensitive="s", l=2, kind="recursive")
    with pytest.raises(InputError, match="kind must be one of"):
        l_diversity(backend, relation="t", qis=["a"], sensitive="s", l=2, kind="alpha")
    with pytest.raises(InputError, match=r"t must be a number in \[0, 1\]"):
        t_closeness(backend, relation="t", qis=["a"], sensitive="s", t=1.5)
