"""The one-pass verifiers (#22): k-anonymity, l-diversity and (k, k^m) (up to m = 2) answer
verdict, summary, NULL check and bounded listing in one statement; k^m profiles the records
in one GROUP BY. Counted statements, the same answers as a brute-force count on random tables, and
the bench floors computing the number the verifier reports."""
from __future__ import annotations

import itertools
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
    got = [{**v, "entropy": None} for v in res.violations]
    assert got == [{"a": key[0], "b": key[1], "class_size": n, "n_distinct": d, "entropy": None}
                   for d, n, key in poor[:limit]]
    assert res.detail["min_distinct_sensitive"] == min((len(v) for v in values.values()), default=None)
    assert statements == ["verify k_anonymity", "verify l_diversity"]


def test_nulls_are_counted_by_the_same_statement(backend, statements):
    # NULL in the second QI and in the sensitive column: a value of its own in both, counted in
    # the verdict's own statement (docs/verifiers.md, NULLs)
    put(backend, "t", {"a": ["x", "x", "y"], "b": ["u", None, None], "s": [None, "p", "q"]})
    res = k_anonymity(backend, relation="t", qis=["a", "b"], k=5)
    assert res.detail["nulls"] == {"b": 2} and res.detail["n_classes"] == 3 and res.n_violations == 3
    res = l_diversity(backend, relation="t", qis=["a"], sensitive="s", l=2)
    assert res.detail["nulls"] == {"s": 1} and res.passed is False and res.n_violations == 1   # y: {q}
    assert statements == ["verify k_anonymity", "verify l_diversity"]


def test_km_profiles_records_once(backend, statements):
    put(backend, "codes", {"id": [1, 1, 2, 2, 3], "code": ["x", "y", "x", "y", "x"]})
    res = km_anonymity(backend, relation="codes", id_col="id", code_col="code", k=2, m=5)
    assert res.detail == {"n_rows": 5, "n_records": 3, "k": 2, "m": 5}
    assert [v["items"] for v in res.violations] == []          # {x}: 3, {y}: 2, {x, y}: 2 records
    assert len(statements) == 2                                  # record profile + itemsets


def _kkm_brute(people: dict[int, tuple], codes: dict[int, list], k: int, m: int) -> list[dict]:
    """Conditions 1 and 2 of seed 000's Definition 1 by enumeration, in the verifier's order
    (kind, QIs, size, items): classes below k, then the rare itemsets of the other classes."""
    size = Counter(people.values())
    support: Counter = Counter()
    for pid, qi in people.items():
        if size[qi] >= k:
            for n in range(1, m + 1):
                for items in itertools.combinations(sorted(set(codes.get(pid, []))), n):
                    support[(qi, items)] += 1
    rows = [("class", qi, 0, (), size[qi], None) for qi in size if size[qi] < k]
    rows += [("itemset", qi, len(items), items, size[qi], n) for (qi, items), n in support.items() if n < k]
    return [{"kind": kind, "age": qi[0], "sex": qi[1], "class_size": cls, "size": n_items or None,
             "items": list(items) if kind == "itemset" else None, "support": sup}
            for kind, qi, n_items, items, cls, sup in sorted(rows)]


KKM_SEEDS = range(16)


def _kkm_draw(seed: int) -> tuple[dict[int, tuple], dict[int, list], int, int, int]:
    """Seed ``seed``'s release: records of 0..4 codes in classes of all sizes, and k, m, limit."""
    rng = random.Random(seed)
    people = {pid: (f"a{rng.randrange(2)}", f"s{rng.randrange(3)}") for pid in range(rng.randrange(0, 30))}
    codes = {pid: rng.sample(["w", "x", "y", "z"], rng.randrange(0, 5)) for pid in people}
    return people, codes, rng.randrange(1, 5), rng.randrange(1, 4), rng.randrange(0, 6)


@pytest.mark.parametrize("seed", KKM_SEEDS)
def test_kkm_in_one_statement_matches_a_brute_force_check(backend, statements, seed):
    # records of 0..4 codes in classes of all sizes, k and m from 1 up, the listing cut anywhere:
    # verdict, count, listed rows in order and class summary equal the enumeration's, from one
    # statement for m <= 2 (two beyond: the longest record bounds the self-joins)
    people, codes, k, m, limit = _kkm_draw(seed)
    put(backend, "recs", {"id": list(people), "age": [q[0] for q in people.values()],
                          "sex": [q[1] for q in people.values()]})
    # a code of an id that is no record is ignored; each record's codes once, plus one repeat
    rows = [(pid, c) for pid, cs in codes.items() for c in cs] + [(10_000, "x")] + \
        [(pid, cs[0]) for pid, cs in list(codes.items())[:1] if cs]
    put(backend, "codes", {"id": [r[0] for r in rows], "code": [r[1] for r in rows]})
    want = _kkm_brute(people, codes, k, m)
    res = kkm_anonymity(backend, relation="recs", qis=["age", "sex"], codes_relation="codes", id_col="id",
                        code_col="code", k=k, m=m, limit=limit)
    assert (res.passed, res.n_violations) == (not want, len(want))
    assert res.violations == want[:limit]
    sizes = Counter(people.values())
    assert res.detail == {"n_records": len(people), "n_classes": len(sizes), "k": k, "m": m,
                          "min_class_size": min(sizes.values(), default=None),
                          "max_class_size": max(sizes.values(), default=None)}
    assert statements == (["verify kkm_anonymity"] if m <= 2 else
                          ["verify kkm_anonymity: longest record", "verify kkm_anonymity"])


def test_kkm_seeds_cover_passing_and_failing_releases():
    # the seeds above draw passing releases and failing ones of both kinds, for m <= 2 and beyond
    seen = set()
    for seed in KKM_SEEDS:
        people, codes, k, m, _ = _kkm_draw(seed)
        want = _kkm_brute(people, codes, k, m)
        seen |= {("pass", m > 2)} if not want else {(v["kind"], m > 2) for v in want}
    assert {("pass", False), ("class", False), ("itemset", False), ("itemset", True)} <= seen


@pytest.mark.parametrize("broken, error", [
    ({"recs": {"id": [1, 2, None], "age": ["30", None, "30"]}}, r"column 'id' of 'recs' has 1 NULL"),
    ({"recs": {"id": [1, 2, 3], "age": ["30", None, None]}}, r"column 'age' of 'recs' has 2 NULL"),
    ({"recs": {"id": [1, 1, 3], "age": ["30", "40", "30"]}}, r"1 duplicate value\(s\) in id column 'id'"),
    ({"recs": {"id": [1, 1, 1], "age": ["30", "30", "30"]}}, r"2 duplicate value\(s\) in id column 'id'"),
    ({"codes": {"id": [1, None], "code": ["x", "y"]}}, r"column 'id' of 'codes' has 1 NULL"),
    ({"codes": {"id": [1, 2], "code": [None, "y"]}}, r"column 'code' of 'codes' has 1 NULL"),
    # the records are reported before the codes, whatever m
    ({"recs": {"id": [1, 2, None], "age": ["30"] * 3}, "codes": {"id": [None], "code": [None]}},
     r"column 'id' of 'recs' has 1 NULL"),
])
@pytest.mark.parametrize("m", [2, 3])
def test_kkm_refuses_nulls_and_duplicate_ids_from_its_statement(backend, broken, error, m):
    tables = {"recs": {"id": [1, 2, 3], "age": ["30", "30", "30"]}, "codes": {"id": [1, 2], "code": ["x", "y"]},
              **broken}
    for name, columns in tables.items():
        put(backend, name, columns)
    with pytest.raises(InputError, match=error):
        kkm_anonymity(backend, relation="recs", qis=["age"], codes_relation="codes", id_col="id", code_col="code",
                      k=1, m=m)


def test_bench_floors_compute_what_the_verifiers_report(tmp_path, monkeypatch):
    # the floor is the same check, hand-written: it must find the same smallest class and the
    # same number of rare itemsets, or the ratio would compare different work
    from benchmarks import postgres_cases, spark_cases  # noqa: F401 - register the engines' floors
    from benchmarks.cases import CASES, FLOORS
    monkeypatch.chdir(tmp_path)
    assert FLOORS == {"verify_k_floor": "verify_k", "verify_l_floor": "verify_l", "verify_km_floor": "verify_km",
                      "verify_kkm_floor": "verify_kkm", "verify_lkc_floor": "verify_lkc",
                      "verify_k_spark_floor": "verify_k_spark", "verify_k_postgres_floor": "verify_k_postgres",
                      "verify_km_postgres_floor": "verify_km_postgres"}
    assert CASES["verify_k_floor"](0.001)["value"] == CASES["verify_k"](0.001)["min_class"]
    assert CASES["verify_km_floor"](0.001)["value"] == CASES["verify_km"](0.001)["violations"]
    # (k, k^m): small classes + rare tokens and token pairs of a class, counted alike
    kkm = CASES["verify_kkm"](0.004)
    assert kkm["rows"] == 4_000 and kkm["violations"] > 0
    assert CASES["verify_kkm_floor"](0.004)["value"] == kkm["violations"]
