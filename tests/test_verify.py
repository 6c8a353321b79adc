"""Independent verifiers (anon_duck/verifiers/models.py): each one both ways (a clean release gives 0
violations, a release broken by hand gives exactly the offending groups), paper fixtures
(seed 000 Figures 3/1b, seed 003 Tables 1/2), brute-force property tests and hostile identifiers
(pycanon's cross-check is a peer's: benchmarks/tests/test_peers.py)."""
from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from fractions import Fraction

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_duck.backend.duckdb import DuckDBBackend

from conftest import put
from anon_duck.errors import InputError
from anon_duck.verifiers import (CheckResult, k_anonymity, kkm_anonymity, km_anonymity, l_diversity, lkc_groups,
                              lkc_privacy, lkc_subsets)

HOSTILE = ['x"; DROP TABLE t; --', "select", "année", "a b"]
PROPS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])




def csv_columns(text: str) -> dict[str, list]:
    lines = [line.split(",") for line in text.strip().splitlines()]
    header, body = lines[0], lines[1:]
    return {h: [row[i] for row in body] for i, h in enumerate(header)}


# ------------------------------------------------------------------------------------------
# k-anonymity
# ------------------------------------------------------------------------------------------
PEOPLE = {"age": ["30-39", "30-39", "30-39", "40-49", "40-49", "50-59", "50-59"],
          "zip": ["130**", "130**", "130**", "148**", "148**", "130**", "130**"],
          "dx": ["flu", "hiv", "flu", "flu", "cancer", "hiv", "flu"]}


def test_k_anonymity_clean(backend):
    put(backend, "rel", PEOPLE)
    res = k_anonymity(backend, relation="rel", qis=["age", "zip"], k=2)
    assert isinstance(res, CheckResult)
    assert (res.name, res.passed, res.n_violations, res.violations) == ("k_anonymity", True, 0, [])
    assert res.detail == {"n_rows": 7, "n_classes": 3, "min_class_size": 2, "max_class_size": 3, "k": 2}


def test_k_anonymity_broken_by_hand(backend):
    broken = {c: list(v) for c, v in PEOPLE.items()}
    broken["zip"][4] = "149**"          # splits (40-49, 148**) into two singletons
    put(backend, "rel", broken)
    res = k_anonymity(backend, relation="rel", qis=["age", "zip"], k=2)
    assert not res.passed and res.n_violations == 2
    assert res.violations == [{"age": "40-49", "zip": "148**", "class_size": 1},
                              {"age": "40-49", "zip": "149**", "class_size": 1}]
    # k = 3 also flags the size-2 class; k = 4 flags every class
    assert k_anonymity(backend, relation="rel", qis=["age", "zip"], k=3).n_violations == 3
    assert k_anonymity(backend, relation="rel", qis=["age", "zip"], k=4).n_violations == 4


def test_limit_keeps_the_total(backend):
    put(backend, "rel", {"q": list(range(50))})
    res = k_anonymity(backend, relation="rel", qis=["q"], k=2, limit=5)
    assert res.n_violations == 50 and len(res.violations) == 5
    res0 = k_anonymity(backend, relation="rel", qis=["q"], k=2, limit=0)
    assert res0.n_violations == 50 and res0.violations == [] and not res0.passed


def test_a_null_qi_is_a_value_of_its_own(backend):
    """Issue #29 item 11: as GROUP BY (and the dbt test) makes it, NULL rows form a class."""
    put(backend, "rel", {"age": ["30-39", None, "30-39", None], "zip": ["1", "1", "1", "1"]})
    res = k_anonymity(backend, relation="rel", qis=["zip", "age"], k=2)
    assert res.passed and res.detail["n_classes"] == 2 and res.detail["nulls"] == {"age": 2}
    put(backend, "rel", {"age": ["30-39", None, "30-39"], "zip": ["1", "1", "1"]})
    res = k_anonymity(backend, relation="rel", qis=["zip", "age"], k=2)
    assert res.violations == [{"zip": "1", "age": None, "class_size": 1}]


def test_bad_arguments(backend):
    put(backend, "rel", PEOPLE)
    with pytest.raises(InputError, match="k must be an integer >= 1"):
        k_anonymity(backend, relation="rel", qis=["age"], k=0)
    with pytest.raises(InputError, match="at least one column"):
        k_anonymity(backend, relation="rel", qis=[], k=2)
    with pytest.raises(InputError, match="named twice"):
        k_anonymity(backend, relation="rel", qis=["age", "age"], k=2)
    with pytest.raises(InputError, match="not the string"):
        k_anonymity(backend, relation="rel", qis="age", k=2)
    put(backend, "rel2", {"class_size": [1, 1]})
    with pytest.raises(InputError, match="output field"):
        k_anonymity(backend, relation="rel2", qis=["class_size"], k=2)


# ------------------------------------------------------------------------------------------
# l-diversity
# ------------------------------------------------------------------------------------------
def test_l_diversity_both_ways(backend):
    put(backend, "rel", PEOPLE)
    clean = l_diversity(backend, relation="rel", qis=["age", "zip"], sensitive="dx", l=2)
    assert clean.passed and clean.n_violations == 0 and clean.detail["min_distinct_sensitive"] == 2
    broken = {c: list(v) for c, v in PEOPLE.items()}
    broken["dx"][4] = "flu"             # (40-49, 148**) now holds only flu
    put(backend, "rel", broken)
    res = l_diversity(backend, relation="rel", qis=["age", "zip"], sensitive="dx", l=2)
    assert (res.passed, res.n_violations) == (False, 1)
    assert res.violations == [{"age": "40-49", "zip": "148**", "class_size": 2, "n_distinct": 1, "entropy": 0.0}]
    assert l_diversity(backend, relation="rel", qis=["age", "zip"], sensitive="dx", l=3).n_violations == 3


def test_a_null_sensitive_value_is_one_value_of_its_own(backend):
    """Issue #29 item 11: NULL is one more value ("unknown"), as the dbt test counts it."""
    put(backend, "rel", {"q": [1, 1, 2, 2, 2], "s": ["a", None, None, None, "a"]})
    res = l_diversity(backend, relation="rel", qis=["q"], sensitive="s", l=2)
    assert res.passed and res.detail["nulls"] == {"s": 3} and res.detail["min_distinct_sensitive"] == 2
    assert not l_diversity(backend, relation="rel", qis=["q"], sensitive="s", l=3).passed


# ------------------------------------------------------------------------------------------
# k^m-anonymity
# ------------------------------------------------------------------------------------------
def long_codes(records: dict[int, list[str]], **extra: dict[int, object]) -> dict[str, list]:
    out: dict[str, list] = {"id": [], "code": [], **{k: [] for k in extra}}
    for rid, codes in records.items():
        for code in codes:
            out["id"].append(rid)
            out["code"].append(code)
            for k, by_id in extra.items():
                out[k].append(by_id[rid])
    return out


def test_km_anonymity_both_ways(backend):
    clean = {1: ["a", "b"], 2: ["a", "b"], 3: ["a", "c"], 4: ["a", "c"], 5: ["b", "c"], 6: ["b", "c"]}
    put(backend, "rel", long_codes(clean))
    res = km_anonymity(backend, relation="rel", id_col="id", code_col="code", k=2, m=2)
    assert (res.passed, res.n_violations) == (True, 0)
    assert res.detail["n_records"] == 6
    broken = {**clean, 6: ["b", "c", "d"], 7: ["a", "b", "c"]}
    put(backend, "rel", long_codes(broken))
    res = km_anonymity(backend, relation="rel", id_col="id", code_col="code", k=2, m=2)
    assert not res.passed
    assert res.violations == [{"size": 1, "items": ["d"], "support": 1},
                              {"size": 2, "items": ["b", "d"], "support": 1},
                              {"size": 2, "items": ["c", "d"], "support": 1}]
    # m = 1 only looks at single codes
    res1 = km_anonymity(backend, relation="rel", id_col="id", code_col="code", k=2, m=1)
    assert res1.violations == [{"size": 1, "items": ["d"], "support": 1}]


def test_km_anonymity_per_group(backend):
    recs = {1: ["a", "b"], 2: ["a", "b"], 3: ["a", "b"], 4: ["a"]}
    put(backend, "rel", long_codes(recs, cluster={1: "c1", 2: "c1", 3: "c2", 4: "c2"}))
    res = km_anonymity(backend, relation="rel", id_col="id", code_col="code", k=2, m=2, group_cols=["cluster"])
    assert res.violations == [{"cluster": "c2", "size": 1, "items": ["b"], "support": 1},
                              {"cluster": "c2", "size": 2, "items": ["a", "b"], "support": 1}]
    # without the groups the same data is 2^2-anonymous
    assert km_anonymity(backend, relation="rel", id_col="id", code_col="code", k=2, m=2).passed


# ------------------------------------------------------------------------------------------
# (k, k^m)-anonymity on seed 000's toy (spec rt_kkm §4.5-4.6)
# ------------------------------------------------------------------------------------------
# Tokens are ';'-separated, codes inside a token '|'-separated. The expanded-code view puts
# every member code of a token on the record (spec §4.6 "expanded-code view").
FIG3 = """rec_id,age,origin,gender,tokens
0,[19:30],Europe,All,053.20|053.71;493.2;494.1
1,[19:30],Europe,All,053.20|053.71;493.2;494.1
2,[19:30],Europe,All,053.20|053.71;494.1
3,[19:30],Europe,All,053.20|053.71;493.2;494.1
6,[44:47],All,All,458.1|458.21;494.1
7,[44:47],All,All,458.1|458.21;494.1
4,51,Africa,Male,493.2
5,51,Africa,Male,493.2"""
FIG1B = """rec_id,age,origin,gender,tokens
0,[19:22],Europe,Male,493.2;494.1;053.20|053.71
1,[19:22],Europe,Male,493.2;494.1;053.20|053.71
2,[28:30],Europe,Female,494.1;053.20|053.71
3,[28:30],Europe,Female,493.2;494.1;053.20|053.71
4,51,Africa,Male,493.2
5,51,Africa,Male,493.2;494.1
6,[44:47],All,All,494.1;458.1|458.21
7,[44:47],All,All,458.1|458.21;494.1"""


def load_rt(backend, text: str, demo: str = "demo", codes: str = "codes") -> None:
    cols = csv_columns(text)
    ids = [int(x) for x in cols["rec_id"]]
    put(backend, demo, {"rec_id": ids, "age": cols["age"], "origin": cols["origin"], "gender": cols["gender"]})
    expanded = {rid: sorted({c for token in toks.split(";") for c in token.split("|")})
                for rid, toks in zip(ids, cols["tokens"])}
    put(backend, codes, {"rec_id": [r for r in ids for _ in expanded[r]], "code": [c for r in ids for c in expanded[r]]})


def test_kkm_fig3_passes(backend):
    load_rt(backend, FIG3)
    res = kkm_anonymity(backend, relation="demo", qis=["age", "origin", "gender"], codes_relation="codes",
                        id_col="rec_id", code_col="code", k=2, m=2)
    assert (res.passed, res.n_violations) == (True, 0)
    assert res.detail["n_classes"] == 3 and res.detail["min_class_size"] == 2


def test_kkm_fig1b_fails_with_the_listed_itemsets(backend):
    # Expected: spec rt_kkm §4.6 "Expected violations", expanded-code view.
    load_rt(backend, FIG1B)
    qis = ["age", "origin", "gender"]
    res = kkm_anonymity(backend, relation="demo", qis=qis, codes_relation="codes", id_col="rec_id",
                        code_col="code", k=2, m=2)
    assert not res.passed and res.n_violations == 6
    got = {(v["kind"], v["age"], v["origin"], v["gender"], tuple(v["items"]), v["support"]) for v in res.violations}
    c1, c2 = ("[28:30]", "Europe", "Female"), ("51", "Africa", "Male")
    assert got == {("itemset", *c1, ("493.2",), 1), ("itemset", *c1, ("493.2", "494.1"), 1),
                   ("itemset", *c1, ("053.20", "493.2"), 1), ("itemset", *c1, ("053.71", "493.2"), 1),
                   ("itemset", *c2, ("494.1",), 1), ("itemset", *c2, ("493.2", "494.1"), 1)}
    # ... while k-anonymity of the demographics and global k^m of the codes both hold (§2.1 note)
    assert k_anonymity(backend, relation="demo", qis=qis, k=2).passed
    assert km_anonymity(backend, relation="codes", id_col="rec_id", code_col="code", k=2, m=2).passed


def test_kkm_small_class_reported_once(backend):
    load_rt(backend, FIG3)
    res = kkm_anonymity(backend, relation="demo", qis=["age", "origin", "gender"], codes_relation="codes",
                        id_col="rec_id", code_col="code", k=3, m=2)
    classes = [v for v in res.violations if v["kind"] == "class"]
    assert [(v["age"], v["class_size"]) for v in classes] == [("51", 2), ("[44:47]", 2)]
    # the 4-record class passes Condition 1; {493.2} is in 3 records, 053.20 etc. in 4: k=3 holds
    assert all(v["kind"] == "class" for v in res.violations)
    res4 = kkm_anonymity(backend, relation="demo", qis=["age", "origin", "gender"], codes_relation="codes",
                         id_col="rec_id", code_col="code", k=4, m=1)
    assert {(v["kind"], tuple(v["items"] or ())) for v in res4.violations} == {
        ("class", ()), ("itemset", ("493.2",))}


def test_kkm_refuses_duplicate_ids(backend):
    put(backend, "demo", {"rec_id": [1, 1], "q": ["a", "a"]})
    put(backend, "codes", {"rec_id": [1], "code": ["x"]})
    with pytest.raises(InputError, match="duplicate"):
        kkm_anonymity(backend, relation="demo", qis=["q"], codes_relation="codes", id_col="rec_id",
                      code_col="code", k=2, m=1)


# ------------------------------------------------------------------------------------------
# LKC-privacy on seed 003's toy (spec lkc_privacy §4.1, §4.4, §7.7 item 3)
# ------------------------------------------------------------------------------------------
TABLE1 = """ID,Job,Sex,Age,Transfuse,Surgery
1,Janitor,M,34,Y,Transgender
2,Doctor,M,58,N,Plastic
3,Mover,M,34,Y,Transgender
4,Lawyer,M,24,N,Vascular
5,Mover,M,58,N,Urology
6,Janitor,M,44,Y,Plastic
7,Doctor,M,24,N,Urology
8,Lawyer,F,58,N,Plastic
9,Doctor,F,44,N,Vascular
10,Carpenter,F,63,Y,Vascular
11,Technician,F,63,Y,Plastic"""
TABLE2 = """ID,Job,Sex,Age,Transfuse,Surgery
1,Non-Technical,M,[30-60),Y,Transgender
2,Professional,M,[30-60),N,Plastic
3,Non-Technical,M,[30-60),Y,Transgender
4,Professional,M,[1-30),N,Vascular
5,Non-Technical,M,[30-60),N,Urology
6,Non-Technical,M,[30-60),Y,Plastic
7,Professional,M,[1-30),N,Urology
8,Professional,F,[30-60),N,Plastic
9,Professional,F,[30-60),N,Vascular
10,Technical,F,[60-99),Y,Vascular
11,Technical,F,[60-99),Y,Plastic"""
# Expected: spec lkc_privacy §4.4, "Verifier fixture: the size-2 groups of Table 2" (QID_j, qid, n, TG)
TABLE2_GROUPS = {
    (("Job", "Non-Technical"), ("Sex", "M")): (4, 2), (("Job", "Professional"), ("Sex", "F")): (2, 0),
    (("Job", "Professional"), ("Sex", "M")): (3, 0), (("Job", "Technical"), ("Sex", "F")): (2, 0),
    (("Job", "Non-Technical"), ("Age", "[30-60)")): (4, 2), (("Job", "Professional"), ("Age", "[1-30)")): (2, 0),
    (("Job", "Professional"), ("Age", "[30-60)")): (3, 0), (("Job", "Technical"), ("Age", "[60-99)")): (2, 0),
    (("Sex", "F"), ("Age", "[30-60)")): (2, 0), (("Sex", "F"), ("Age", "[60-99)")): (2, 0),
    (("Sex", "M"), ("Age", "[1-30)")): (2, 0), (("Sex", "M"), ("Age", "[30-60)")): (5, 2),
}
QID = ["Job", "Sex", "Age"]


def lkc(backend, relation="t", **kw):
    args = dict(relation=relation, qis=QID, sensitive="Surgery", sensitive_values=["Transgender"], L=2, K=2, C=0.5)
    return lkc_privacy(backend, **{**args, **kw})


def test_lkc_table2_passes_and_lists_its_12_groups(backend):
    put(backend, "t", csv_columns(TABLE2))
    res = lkc(backend)
    assert (res.passed, res.n_violations) == (True, 0)
    assert res.detail["active_qis"] == QID and res.detail["n_subsets"] == 3
    groups = lkc_groups(backend, relation="t", qis=QID, sensitive="Surgery", sensitive_values=["Transgender"], L=2)
    got = {tuple(g["qid"].items()): (g["n"], g["max_n_s"]) for g in groups}
    assert got == TABLE2_GROUPS and len(groups) == 12


def test_lkc_table2_fails_with_L3_on_record_2_only(backend):
    # spec §4.4: "With L = 3, K = 2 the verifier must report exactly one violation: class {2}."
    put(backend, "t", csv_columns(TABLE2))
    res = lkc(backend, L=3)
    assert (res.passed, res.n_violations) == (False, 1)
    assert res.violations == [{"subset": QID, "qid": {"Job": "Professional", "Sex": "M", "Age": "[30-60)"},
                               "n": 1, "sensitive_value": None, "n_s": None, "conf": None, "reason": "K"}]


def test_lkc_raw_table1_fails(backend):
    # spec §7.7 item 3: e.g. <Carpenter, F> = {10}
    put(backend, "t", csv_columns(TABLE1))
    res = lkc(backend, limit=1000)
    assert not res.passed
    assert {"subset": ["Job", "Sex"], "qid": {"Job": "Carpenter", "Sex": "F"}, "n": 1, "sensitive_value": None,
            "n_s": None, "conf": None, "reason": "K"} in res.violations
    # <M, 34>: P(Transgender | qid) = 2/2 > 0.5 (spec §2.1), a 'C' violation
    assert {"subset": ["Sex", "Age"], "qid": {"Sex": "M", "Age": "34"}, "n": 2, "sensitive_value": "Transgender",
            "n_s": 2, "conf": 1.0, "reason": "C"} in res.violations
    assert res.n_violations == len(res.violations)


def test_lkc_confidence_is_compared_exactly(backend):
    # 3 of 10 records: C = 0.3 must pass (0.3 as a double is just below 3/10), 0.29 must fail
    put(backend, "t", {"q": ["a"] * 10 + ["b"] * 10, "s": ["x"] * 3 + ["y"] * 7 + ["y"] * 10})
    base = dict(relation="t", qis=["q"], sensitive="s", sensitive_values=["x"], L=1, K=1)
    assert lkc_privacy(backend, **base, C=0.3).passed
    assert lkc_privacy(backend, **base, C=Fraction(3, 10)).passed
    bad = lkc_privacy(backend, **base, C=0.29)
    assert bad.violations == [{"subset": ["q"], "qid": {"q": "a"}, "n": 10, "sensitive_value": "x", "n_s": 3,
                               "conf": pytest.approx(0.3), "reason": "C"}]
    # all values of S by default: 'y' is 10/10 of group b
    assert lkc_privacy(backend, **{**base, "sensitive_values": None}, C="1/2").n_violations == 2
    # an empty S (or no sensitive column) checks only K
    assert lkc_privacy(backend, **{**base, "sensitive_values": []}, C=0.01).passed
    assert not lkc_privacy(backend, **{**base, "sensitive": None, "K": 11}, C=1).passed
    with pytest.raises(InputError, match=r"C must be in \(0, 1\]"):
        lkc_privacy(backend, **base, C=1.5)


def test_lkc_chunking_gives_the_same_answer(backend):
    put(backend, "t", csv_columns(TABLE1))
    one = lkc(backend, L=2, max_sets=256, limit=10_000)
    chunked = lkc(backend, L=2, max_sets=1, limit=10_000)
    assert chunked.detail["n_statements"] == 3 and one.detail["n_statements"] == 1
    assert chunked.n_violations == one.n_violations and chunked.violations == one.violations
    limited = lkc(backend, L=2, max_sets=1, limit=3)
    assert limited.n_violations == one.n_violations and limited.violations == one.violations[:3]


def test_lkc_active_attribute_reduction(backend):
    cols = csv_columns(TABLE2)
    cols["Const"] = ["same"] * 11          # constant: never splits a group
    put(backend, "t", cols)
    res = lkc(backend, qis=[*QID, "Const"], L=3)
    assert res.detail["active_qis"] == QID and res.detail["n_subsets"] == 1
    paranoid = lkc(backend, qis=[*QID, "Const"], L=3, paranoid=True)
    assert paranoid.detail["n_subsets"] == 4 + 6 + 4 and not paranoid.passed and not res.passed
    assert lkc_subsets(["a", "b"], [], 2, False) == [()]       # nothing active: the whole table


# ------------------------------------------------------------------------------------------
# property tests against brute force
# ------------------------------------------------------------------------------------------
@st.composite
def small_tables(draw, n_qis=(1, 3)):
    n = draw(st.integers(1, 25))
    q = draw(st.integers(*n_qis))
    cols = {f"q{i}": draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)) for i in range(q)}
    cols["s"] = draw(st.lists(st.sampled_from("abc"), min_size=n, max_size=n))
    return cols


@pytest.fixture(scope="module")
def mod_backend() -> DuckDBBackend:
    return DuckDBBackend(duckdb.connect())


def classes(cols, qis):
    out = defaultdict(list)
    for i in range(len(cols["s"])):
        out[tuple(cols[q][i] for q in qis)].append(cols["s"][i])
    return out


@PROPS
@given(cols=small_tables(), k=st.integers(1, 5))
def test_k_anonymity_matches_brute_force(mod_backend, cols, k):
    put(mod_backend, "p", cols)
    qis = [c for c in cols if c != "s"]
    res = k_anonymity(mod_backend, relation="p", qis=qis, k=k, limit=1000)
    cl = classes(cols, qis)
    expected = {key: len(v) for key, v in cl.items() if len(v) < k}
    assert {tuple(v[q] for q in qis): v["class_size"] for v in res.violations} == expected
    assert res.n_violations == len(expected) and res.passed == (not expected)
    assert res.detail["min_class_size"] == min(len(v) for v in cl.values())


@PROPS
@given(cols=small_tables(), l=st.integers(1, 4))
def test_l_diversity_matches_brute_force(mod_backend, cols, l):
    put(mod_backend, "p", cols)
    qis = [c for c in cols if c != "s"]
    res = l_diversity(mod_backend, relation="p", qis=qis, sensitive="s", l=l, limit=1000)
    expected = {key: len(set(v)) for key, v in classes(cols, qis).items() if len(set(v)) < l}
    assert {tuple(v[q] for q in qis): v["n_distinct"] for v in res.violations} == expected
    assert res.n_violations == len(expected)


@st.composite
def set_valued(draw):
    n = draw(st.integers(1, 12))
    records = {i: sorted(set(draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=4)))) for i in range(n)}
    groups = {i: draw(st.sampled_from(["g1", "g2"])) for i in range(n)}
    return records, groups


def brute_km(records, groups, k, m):
    bad = set()
    by_group = defaultdict(list)
    for rid, codes in records.items():
        by_group[groups[rid]].append(codes)
    for g, recs in by_group.items():
        support = Counter(s for codes in recs for size in range(1, m + 1)
                          for s in itertools.combinations(codes, size))
        bad |= {(g, s, n) for s, n in support.items() if n < k}
    return bad


@PROPS
@given(data=set_valued(), k=st.integers(1, 4), m=st.integers(1, 3))
def test_km_anonymity_matches_brute_force(mod_backend, data, k, m):
    records, groups = data
    put(mod_backend, "p", long_codes(records, grp=groups))
    res = km_anonymity(mod_backend, relation="p", id_col="id", code_col="code", k=k, m=m, group_cols=["grp"],
                       limit=10_000)
    got = {(v["grp"], tuple(v["items"]), v["support"]) for v in res.violations}
    assert got == brute_km(records, groups, k, m) and res.n_violations == len(got)
    flat = km_anonymity(mod_backend, relation="p", id_col="id", code_col="code", k=k, m=m, limit=10_000)
    assert {(tuple(v["items"]), v["support"]) for v in flat.violations} == \
        {(s, n) for _, s, n in brute_km(records, {r: 0 for r in records}, k, m)}


@PROPS
@given(data=set_valued(), k=st.integers(1, 4), m=st.integers(1, 2))
def test_kkm_anonymity_matches_brute_force(mod_backend, data, k, m):
    records, groups = data              # the group plays the generalized QI tuple
    ids = list(records)
    put(mod_backend, "demo", {"id": ids, "g": [groups[i] for i in ids]})
    put(mod_backend, "codes", long_codes(records))
    res = kkm_anonymity(mod_backend, relation="demo", qis=["g"], codes_relation="codes", id_col="id",
                        code_col="code", k=k, m=m, limit=10_000)
    size = Counter(groups.values())
    small = {g for g, n in size.items() if n < k}
    expected = {("class", g, None, None) for g in small} | \
               {("itemset", g, s, n) for g, s, n in brute_km(records, groups, k, m) if g not in small}
    got = {(v["kind"], v["g"], tuple(v["items"]) if v["items"] else None, v["support"]) for v in res.violations}
    assert got == expected and res.n_violations == len(expected)
    assert res.passed == (not small and not brute_km(records, groups, k, m))


def brute_lkc(cols, qis, L, K, C, S):
    """Definition 3.1 literally: every qid over every subset of 1..L QIs."""
    bad = set()
    n_rows = len(cols["s"])
    for size in range(1, min(L, len(qis)) + 1):
        for subset in itertools.combinations(qis, size):
            groups = defaultdict(list)
            for i in range(n_rows):
                groups[tuple(cols[q][i] for q in subset)].append(cols["s"][i])
            for key, sens in groups.items():
                if len(sens) < K:
                    bad.add((subset, key, "K", None))
                for s in (S if S is not None else set(sens)):
                    if Fraction(sens.count(s), len(sens)) > C:
                        bad.add((subset, key, "C", s))
    return bad


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cols=small_tables(n_qis=(1, 4)), L=st.integers(1, 4), K=st.integers(1, 4),
       C=st.sampled_from([Fraction(1, 3), Fraction(1, 2), Fraction(2, 3), Fraction(1)]),
       S=st.sampled_from([None, ["a"], ["a", "c"]]), max_sets=st.sampled_from([1, 2, 256]))
def test_lkc_matches_brute_force_and_reduction_agrees(mod_backend, cols, L, K, C, S, max_sets):
    put(mod_backend, "p", cols)
    qis = [c for c in cols if c != "s"]
    args = dict(relation="p", qis=qis, sensitive="s", sensitive_values=S, L=L, K=K, C=C, max_sets=max_sets,
                limit=100_000)
    paranoid = lkc_privacy(mod_backend, **args, paranoid=True)
    reduced = lkc_privacy(mod_backend, **args)
    expected = brute_lkc(cols, qis, L, K, C, S)
    got = {(tuple(v["subset"]), tuple(v["qid"][q] for q in v["subset"]), v["reason"], v["sensitive_value"])
           for v in paranoid.violations}
    assert got == expected and paranoid.n_violations == len(expected)
    assert reduced.passed == paranoid.passed == (not expected)


# ------------------------------------------------------------------------------------------
# hostile identifiers through every verifier
# ------------------------------------------------------------------------------------------
def test_hostile_identifiers(backend):
    table = ("main", 'x"; DROP TABLE t; --')
    q1, q2, q3, code = HOSTILE
    put(backend, "t", {"keep": [1]})                 # must survive
    put(backend, table, {q1: [1, 1, 2, 2, 3], q2: ["a", "a", "b", "b", "c"], q3: ["é", "è", "é", "é", "ü"],
                         code: ["p", "q", "p", "p", "q"]})
    assert k_anonymity(backend, relation=table, qis=[q1, q2], k=2).violations == [{q1: 3, q2: "c", "class_size": 1}]
    assert l_diversity(backend, relation=table, qis=[q1, q2], sensitive=q3, l=2).n_violations == 2
    km = km_anonymity(backend, relation=table, id_col=q1, code_col=code, k=2, m=2, group_cols=[q2])
    assert {(v[q2], tuple(v["items"])) for v in km.violations} == {("a", ("p",)), ("a", ("q",)), ("a", ("p", "q")),
                                                                   ("b", ("p",)), ("c", ("q",))}
    put(backend, ("main", "année"), {q1: [1, 2, 3], "select": ["g", "g", "h"]})
    kkm = kkm_anonymity(backend, relation=("main", "année"), qis=["select"], codes_relation=table, id_col=q1,
                        code_col=code, k=2, m=1)
    assert {(v["kind"], v["select"]) for v in kkm.violations} == {("class", "h"), ("itemset", "g")}
    res = lkc_privacy(backend, relation=table, qis=[q2, code], sensitive=q3, sensitive_values=["é"], L=2, K=2,
                      C=0.5, limit=100)
    assert {(tuple(v["qid"].items()), v["reason"]) for v in res.violations} == {
        (((q2, "b"), (code, "p")), "C"), (((q2, "a"), (code, "p")), "C"), (((q2, "a"), (code, "p")), "K"),
        (((q2, "a"), (code, "q")), "K"), (((q2, "c"), (code, "q")), "K")}
    assert lkc_groups(backend, relation=table, qis=[q2], sensitive=q3, L=1)[0]["qid"] == {q2: "a"}
    assert backend.con.table("t").fetchall() == [(1,)]


def test_lkc_confidence_of_one_third_and_large_groups(backend):
    # C = 1/3 written as a float still allows a share of exactly 1/3; 1000/3000 needs 128-bit
    # integers once C's denominator is large (C = 0.3333333333333333 as text has 10^16)
    put(backend, "t", {"q": ["a"] * 3000, "s": ["x"] * 1000 + ["y"] * 2000})
    base = dict(relation="t", qis=["q"], sensitive="s", sensitive_values=["x"], L=1, K=1)
    assert lkc_privacy(backend, **base, C=1 / 3).passed
    assert lkc_privacy(backend, **base, C="0.3333333333333333").n_violations == 1
    assert lkc_privacy(backend, **base, C=Fraction(333, 1000)).n_violations == 1


def test_km_with_m_beyond_every_record_is_the_same_check(backend):
    """A huge m (a fuzzed job once asked for 10^9) checks the sizes records can have, quickly."""
    backend.con.execute("CREATE TABLE huge_m AS SELECT * FROM (VALUES (1, 'a'), (1, 'b'), (2, 'a'), (2, 'b'), (3, 'a')) t(id, code)")
    small = km_anonymity(backend, relation="huge_m", id_col="id", code_col="code", k=2, m=2)
    huge = km_anonymity(backend, relation="huge_m", id_col="id", code_col="code", k=2, m=10**9)
    assert (small.passed, small.n_violations) == (huge.passed, huge.n_violations) == (True, 0)
    assert not km_anonymity(backend, relation="huge_m", id_col="id", code_col="code", k=3, m=10**9).passed
