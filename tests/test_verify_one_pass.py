"""The one-pass verifiers (#22): k-anonymity and l-diversity answer verdict, summary, NULL
check and bounded listing in one statement; k^m and (k, k^m) profile the records in one
GROUP BY. Counted statements, the same answers as a brute-force count on random tables, and
the bench floors computing the number the verifier reports."""
from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest

from anon_duck.errors import InputError
from anon_duck.verifiers import k_anonymity, kkm_anonymity, km_anonymity, l_diversity

from conftest import put


@pytest.fixture
def statements(backend, monkeypatch):
    """The verifier statements the backend executes, by label (every query goes through rows/scalar/run)."""
    seen: list[str] = []
    for method in ("rows", "scalar", "run"):
        original = getattr(backend, method)

        def counted(label, *args, _original=original, **kwargs):
            if label.startswith("verify"):
                seen.append(label)
            return _original(label, *args, **kwargs)
        monkeypatch.setattr(backend, method, counted)
    return seen


def _random_table(backend, rng: random.Random, n: int) -> list[dict]:
    rows = [{"a": f"a{rng.randrange(3)}", "b": f"b{rng.randrange(3)}", "s": f"s{rng.randrange(3)}"} for _ in range(n)]
    put(backend, "t", {c: [r[c] for r in rows] for c in ("a", "b", "s")})
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_k_and_l_in_one_statement_match_a_brute_force_count(backend, statements, seed):
    rng = random.Random(seed)
    rows = _random_table(backend, rng, rng.randrange(0, 30))
    k, l, limit = rng.randrange(1, 5), rng.randrange(1, 4), rng.randrange(0, 4)
    sizes = Counter((r["a"], r["b"]) for r in rows)
    values: dict[tuple, set] = defaultdict(set)
    for r in rows:
        values[(r["a"], r["b"])].add(r["s"])

    res = k_anonymity(backend, relation="t", qis=["a", "b"], k=k, limit=limit)
    small = sorted((n, key) for key, n in sizes.items() if n < k)
    assert (res.passed, res.n_violations) == (not small, len(small))
    assert res.violations == [{"a": key[0], "b": key[1], "class_size": n} for n, key in small[:limit]]
    assert res.detail == {"n_rows": len(rows), "n_classes": len(sizes), "min_class_size": min(sizes.values(), default=None),
                          "max_class_size": max(sizes.values(), default=None), "k": k}

    res = l_diversity(backend, relation="t", qis=["a", "b"], sensitive="s", l=l, limit=limit)
    poor = sorted((len(values[key]), n, key) for key, n in sizes.items() if len(values[key]) < l)
    assert (res.passed, res.n_violations) == (not poor, len(poor))
    assert res.violations == [{"a": key[0], "b": key[1], "class_size": n, "n_distinct": d} for d, n, key in poor[:limit]]
    assert res.detail["min_distinct_sensitive"] == min((len(v) for v in values.values()), default=None)
    assert statements == ["verify k_anonymity", "verify l_diversity"]


def test_a_null_is_refused_from_the_same_statement(backend, statements):
    # NULL in the second QI and in the sensitive column, in a release that also violates k:
    # the error names the first column holding NULLs with its count, never a verdict
    put(backend, "t", {"a": ["x", "x", "y"], "b": ["u", None, None], "s": [None, "p", "q"]})
    with pytest.raises(InputError, match=r"k_anonymity: column 'b' of 't' has 2 NULL"):
        k_anonymity(backend, relation="t", qis=["a", "b"], k=5)
    with pytest.raises(InputError, match=r"l_diversity: column 's' of 't' has 1 NULL"):
        l_diversity(backend, relation="t", qis=["a"], sensitive="s", l=2)
    assert statements == ["verify k_anonymity", "verify l_diversity"]


def test_set_valued_verifiers_profile_records_once(backend, statements):
    put(backend, "codes", {"id": [1, 1, 2, 2, 3], "code": ["x", "y", "x", "y", "x"]})
    put(backend, "recs", {"id": [1, 2, 3], "age": ["30", "30", "30"]})
    res = km_anonymity(backend, relation="codes", id_col="id", code_col="code", k=2, m=5)
    assert res.detail == {"n_rows": 5, "n_records": 3, "k": 2, "m": 5}
    assert [v["items"] for v in res.violations] == []          # {x}: 3, {y}: 2, {x, y}: 2 records
    assert len(statements) == 2                                  # record profile + itemsets
    statements.clear()
    res = kkm_anonymity(backend, relation="recs", qis=["age"], codes_relation="codes", id_col="id", code_col="code",
                        k=3, m=2)
    assert [(v["kind"], v["items"], v["support"]) for v in res.violations] == [("itemset", ["y"], 2),
                                                                              ("itemset", ["x", "y"], 2)]
    assert len(statements) == 4   # two record profiles, the violations, the class summary
    put(backend, "recs", {"id": [1, 1, None], "age": ["30", "30", "30"]})
    with pytest.raises(InputError, match=r"column 'id' of 'recs' has 1 NULL"):
        kkm_anonymity(backend, relation="recs", qis=["age"], codes_relation="codes", id_col="id", code_col="code",
                      k=3, m=2)


def test_bench_floors_compute_what_the_verifiers_report(tmp_path, monkeypatch):
    # the floor is the same check, hand-written: it must find the same smallest class and the
    # same number of rare itemsets, or the ratio would compare different work
    from anon_duck.bench.cases import CASES, FLOORS
    monkeypatch.chdir(tmp_path)
    assert FLOORS == {"verify_k_floor": "verify_k", "verify_l_floor": "verify_l", "verify_km_floor": "verify_km",
                      "verify_kkm_floor": "verify_kkm", "verify_lkc_floor": "verify_lkc"}
    assert CASES["verify_k_floor"](0.001)["value"] == CASES["verify_k"](0.001)["min_class"]
    assert CASES["verify_km_floor"](0.001)["value"] == CASES["verify_km"](0.001)["violations"]
    # (k, k^m): small classes + rare tokens and token pairs of a class, counted alike
    kkm = CASES["verify_kkm"](0.004)
    assert kkm["rows"] == 4_000 and kkm["violations"] > 0
    assert CASES["verify_kkm_floor"](0.004)["value"] == kkm["violations"]
