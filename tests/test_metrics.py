"""Utility metrics (anon_duck/metrics.py): NCP and ARE on seed 000's toy with exact fractions
(spec rt_kkm §4.5-4.7), hand examples, discernibility, the seeded workload, a brute-force
property test of the ARE estimator, and hostile identifiers."""
from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


from conftest import put
from anon_duck.errors import InputError
from anon_duck.metrics import are, discernibility, make_workload, ncp

TOL = 1e-9




def put_hierarchies(backend, edges, node_rel="hier_node", closure_rel="hier_closure") -> None:
    """hier_node / hier_closure in the lead's schema, built by hand from (hierarchy, node, parent)."""
    parent = {(h, n): p for h, n, p in edges}
    kids: dict = {}
    for h, n, p in edges:
        if p is not None:
            kids.setdefault((h, p), []).append(n)

    def up(h, n):
        out, d = [(n, 0)], 0
        while parent[(h, n)] is not None:
            n, d = parent[(h, n)], d + 1
            out.append((n, d))
        return out

    def leaves(h, n):
        return 1 if (h, n) not in kids else sum(leaves(h, c) for c in kids[(h, n)])

    node = {k: [] for k in ("hierarchy", "node", "parent", "depth", "is_leaf", "n_leaves", "lo", "hi", "label")}
    closure = {k: [] for k in ("hierarchy", "node", "ancestor", "distance")}
    for h, n, p in edges:
        path = up(h, n)
        for k, v in zip(node, (h, n, p, len(path) - 1, (h, n) not in kids, leaves(h, n), math.nan, math.nan, n)):
            node[k].append(v)
        for a, d in path:
            for k, v in zip(closure, (h, n, a, d)):
                closure[k].append(v)
    put(backend, node_rel, node)
    put(backend, closure_rel, closure)


# seed 000 toy: Figure 1a (spec rt_kkm §4.1) and the corrected hierarchies of §4.2
ORIGIN = [("origin", "All", None), ("origin", "Europe", "All"), ("origin", "Africa", "All")] + \
         [("origin", c, "Europe") for c in ("France", "Greece", "Italy", "Spain", "Portugal")] + \
         [("origin", c, "Africa") for c in ("Algeria", "Nigeria", "Ghana")]
GENDER = [("gender", "All", None), ("gender", "Male", "All"), ("gender", "Female", "All")]
FIG1A = {"rec_id": [0, 1, 2, 3, 4, 5, 6, 7], "age": [19, 22, 28, 30, 51, 51, 47, 44],
         "origin": ["France", "Greece", "Italy", "Spain", "Algeria", "Nigeria", "Ghana", "Portugal"],
         "gender": ["Male", "Male", "Female", "Female", "Male", "Male", "Female", "Male"]}
# released demographics (age lo, age hi, origin, gender) per record of Figures 3, 1b, 1c, 1d (§4.5-4.6)
FIGS = {
    "fig3": [(19, 30, "Europe", "All")] * 4 + [(51, 51, "Africa", "Male")] * 2 + [(44, 47, "All", "All")] * 2,
    "fig1b": [(19, 22, "Europe", "Male")] * 2 + [(28, 30, "Europe", "Female")] * 2 +
             [(51, 51, "Africa", "Male")] * 2 + [(44, 47, "All", "All")] * 2,
    "fig1c": [(19, 51, "All", "Male")] * 4 + [(44, 47, "All", "All")] * 2 + [(28, 30, "Europe", "Female")] * 2,
}
FIGS["fig1d"] = FIGS["fig1b"]
NUM, CAT = [("age", 19, 51)], [("origin", "origin"), ("gender", "gender")]


def put_release(backend, name, rows) -> None:
    put(backend, name, {"age": [str(lo) if lo == hi else f"[{lo}:{hi}]" for lo, hi, _, _ in rows],
                        "age__lo": [float(r[0]) for r in rows], "age__hi": [float(r[1]) for r in rows],
                        "origin": [r[2] for r in rows], "gender": [r[3] for r in rows]})


@pytest.fixture
def toy(backend):
    put_hierarchies(backend, ORIGIN + GENDER)
    put(backend, "orig", FIG1A)
    for name, rows in FIGS.items():
        put_release(backend, name, rows)
    return backend


def frac(x: float) -> F:
    return F(x).limit_denominator(10_000)


# ------------------------------------------------------------------------------------------
# NCP
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fig, expected", [("fig3", F(205, 384)), ("fig1b", F(31, 96)), ("fig1c", F(217, 384)),
                                           ("fig1d", F(31, 96))])
def test_ncp_seed000_figures(toy, fig, expected):
    # Expected: spec rt_kkm §4.5-4.6 tables (exact rational recomputation)
    res = ncp(toy, relation=fig, numeric=NUM, categorical=CAT, hier_node_relation="hier_node")
    assert res["n_records"] == 8
    assert res["ncp"] == pytest.approx(float(expected), abs=TOL)
    assert res["ncp_sum"] == pytest.approx(float(expected * 8), abs=TOL)


def test_ncp_fig3_per_attribute(toy):
    res = ncp(toy, relation="fig3", numeric=NUM, categorical=CAT, hier_node_relation="hier_node")
    # age: 4 x 11/32 ([19:30]) + 2 x 3/32 ([44:47]) + 2 x 0 (51), over 8 records;
    # origin: 4 x Europe 5/8 + 2 x Africa 3/8 + 2 x All 8/8, over 8
    assert frac(res["per_attribute"]["age"]) == F(4 * 11 + 2 * 3, 32 * 8)
    assert frac(res["per_attribute"]["origin"]) == (4 * F(5, 8) + 2 * F(3, 8) + 2 * F(8, 8)) / 8
    assert frac(res["per_attribute"]["gender"]) == F(6, 8)          # All = 2/2 for 6 records, leaf Male = 0
    assert frac(res["ncp_sum"]) == F(205, 48)


def test_ncp_hand_example_weights_and_edges(backend):
    put_hierarchies(backend, [("h", "R", None), ("h", "A", "R"), ("h", "B", "R"), ("h", "a1", "A"),
                              ("h", "a2", "A"), ("h", "a3", "A"), ("h", "b1", "B")])    # 4 leaves
    put(backend, "rel", {"x": ["[0:10]", "5", "[0:2]"], "x__lo": [0.0, 5.0, 0.0], "x__hi": [10.0, 5.0, 2.0],
                         "c": ["A", "b1", "R"], "k": ["1", "1", "1"], "k__lo": [3.0] * 3, "k__hi": [3.0] * 3})
    res = ncp(backend, relation="rel", numeric=[("x", 0, 20), ("k", 3, 3)], categorical=[("c", "h")],
              hier_node_relation="hier_node", weights={"x": 0.5, "k": 0.25, "c": 0.25})
    # x: 10/20, 0, 2/20; k: domain is one value -> 0; c: A = 3/4, leaf b1 = 0, root = 4/4
    assert frac(res["per_attribute"]["x"]) == F(1, 5) and res["per_attribute"]["k"] == 0.0
    assert frac(res["per_attribute"]["c"]) == F(7, 12)
    records = [F(1, 2) * F(1, 2) + F(1, 4) * F(3, 4), 0, F(1, 2) * F(1, 10) + F(1, 4) * 1]
    assert frac(res["ncp_sum"]) == sum(records)
    assert frac(res["ncp"]) == sum(records) / 3
    # default weights are 1/#QIs
    plain = ncp(backend, relation="rel", numeric=[("x", 0, 20)], categorical=[("c", "h")],
                hier_node_relation="hier_node")
    assert frac(plain["ncp"]) == (F(1, 5) + F(7, 12)) / 2


def test_ncp_refuses_what_would_drop_a_penalty(backend):
    put_hierarchies(backend, [("h", "R", None), ("h", "a", "R"), ("h", "b", "R")])
    put(backend, "rel", {"c": ["a", "zzz"], "x__lo": [1.0, math.nan], "x__hi": [2.0, 3.0]})   # NaN -> NULL
    with pytest.raises(InputError, match=r"1 row\(s\) .* not a node .* column 'c'"):
        ncp(backend, relation="rel", numeric=[], categorical=[("c", "h")], hier_node_relation="hier_node")
    with pytest.raises(InputError, match=r"NULL interval bound in column 'x'"):
        ncp(backend, relation="rel", numeric=[("x", 0, 10)], categorical=[], hier_node_relation="hier_node")
    with pytest.raises(InputError, match="missing"):
        ncp(backend, relation="rel", numeric=[("x", 0, 10)], categorical=[("c", "h")],
            hier_node_relation="hier_node", weights={"x": 1.0})


# ------------------------------------------------------------------------------------------
# discernibility
# ------------------------------------------------------------------------------------------
def test_discernibility(toy):
    res = discernibility(toy, relation="fig3", qis=["age", "origin", "gender"], k=2)
    assert res == {"dm": 16 + 4 + 4, "n_records": 8, "n_classes": 3, "c_avg": 8 / 3, "c_avg_norm": 4 / 3,
                   "min_class_size": 2, "max_class_size": 4}
    # seed 003 Table 2's full-QID classes {1,3,5,6},{2},{4,7},{8,9},{10,11}: DC = 29 (spec lkc §4.4)
    put(toy, "t2", {"q": ["a"] * 4 + ["b"] + ["c"] * 2 + ["d"] * 2 + ["e"] * 2})
    res = discernibility(toy, relation="t2", qis=["q"])
    assert (res["dm"], res["n_classes"], res["min_class_size"], res["c_avg_norm"]) == (29, 5, 1, None)


# ------------------------------------------------------------------------------------------
# ARE
# ------------------------------------------------------------------------------------------
def put_workload(backend, name, predicates) -> None:
    """predicates: (query_id, attr, qlo, qhi, node)"""
    put(backend, name, {"query_id": [p[0] for p in predicates], "attr": [p[1] for p in predicates],
                        "qlo": [math.nan if p[2] is None else float(p[2]) for p in predicates],
                        "qhi": [math.nan if p[3] is None else float(p[3]) for p in predicates],
                        "node": [p[4] for p in predicates]})


def run_are(backend, generalized, workload="w"):
    return are(backend, workload=workload, original_relation="orig", generalized_relation=generalized,
               numeric=["age"], categorical=CAT, hier_closure_relation="hier_closure", hier_node_relation="hier_node")


# q2: Age = 22 AND Gender = Male;  q6: Origin = Europe AND Age = 44   (spec rt_kkm §4.7)
Q2_Q6 = [(2, "age", 22, 22, None), (2, "gender", None, None, "Male"),
         (6, "origin", None, None, "Europe"), (6, "age", 44, 44, None)]


@pytest.mark.parametrize("fig, q2, q6", [("fig3", F(1, 6), F(5, 16)), ("fig1b", F(1, 2), F(5, 16)),
                                         ("fig1c", F(4, 33), F(205, 528)), ("fig1d", F(1, 2), F(5, 16))])
def test_are_seed000_demographic_queries(toy, fig, q2, q6):
    # Expected: spec rt_kkm §4.7 table, columns C_O and C_A for q2 and q6 (exact)
    put_workload(toy, "w", Q2_Q6)
    res = run_are(toy, fig)
    assert [(q["query_id"], q["actual"]) for q in res["per_query"]] == [(2, 1.0), (6, 1.0)]
    assert [frac(q["estimate"]) for q in res["per_query"]] == [q2, q6]
    assert res["are"] == pytest.approx(float((abs(q2 - 1) + abs(q6 - 1)) / 2), abs=TOL)
    assert (res["n_queries"], res["n_used"]) == (2, 2)


def test_are_hand_ranges_and_ancestors(toy):
    # Integer semantics: [19:30] holds 12 integers, of which [25, 40] covers 25..30 = 6.
    # q0: age in [25, 40]            fig3: 4 x 6/12 + [44:47] 0 + 51 0 = 2;  actual: 28, 30 = 2
    # q1: origin under Europe AND age in [40, 60]
    #     fig3: [19:30]/Europe: age 0;  51/Africa: origin 0;  [44:47]/All: 2 x 1 x 5/8 = 5/4
    #     actual: Portugal, 44 = 1
    # q2: origin = Italy             fig3: 4 x 1/5 + 2 x 1/8 = 21/20;  actual 1
    # q3: gender = Female AND origin under Africa: fig3: 2 x 1/2 x 3/8 = 3/8; actual 1 (Ghana, F)
    # q4: age in [60, 70]            nobody: actual 0, excluded from ARE
    put_workload(toy, "w", [(0, "age", 25, 40, None), (1, "origin", None, None, "Europe"), (1, "age", 40, 60, None),
                            (2, "origin", None, None, "Italy"), (3, "gender", None, None, "Female"),
                            (3, "origin", None, None, "Africa"), (4, "age", 60, 70, None)])
    res = run_are(toy, "fig3")
    got = [(q["query_id"], q["actual"], frac(q["estimate"])) for q in res["per_query"]]
    assert got == [(0, 2.0, F(2)), (1, 1.0, F(5, 4)), (2, 1.0, F(21, 20)), (3, 1.0, F(3, 8)), (4, 0.0, F(0))]
    assert res["n_used"] == 4 and math.isnan(res["per_query"][4]["rel_error"])
    assert frac(res["are"]) == (0 + F(1, 4) + F(1, 20) + F(5, 8)) / 4


def test_are_of_the_original_against_itself_is_zero(toy):
    rows = [(a, a, o, g) for a, o, g in zip(FIG1A["age"], FIG1A["origin"], FIG1A["gender"])]
    put_release(toy, "same", rows)
    w = make_workload(toy, original_relation="orig", numeric=["age"], categorical=CAT, n_queries=40,
                      selectivity=0.3, seed=3, hier_closure_relation="hier_closure", name="wl")
    res = run_are(toy, "same", workload=w)
    assert res["are"] == 0.0 and res["n_used"] == res["n_queries"] == 40


def test_make_workload_is_seeded_and_draws_from_records(toy):
    args = dict(original_relation="orig", numeric=["age"], categorical=CAT, n_queries=30, qi_per_query=2,
                selectivity=0.25, hier_closure_relation="hier_closure")
    w1 = make_workload(toy, **args, seed=7, name="w1")
    w2 = make_workload(toy, **args, seed=7, name=("main", "w2"))
    w3 = make_workload(toy, **args, seed=8, name="w3")
    rows = {w: toy.con.table(w if isinstance(w, str) else w[1]).order("query_id, attr").fetchall() for w in (w1, w2, w3)}
    assert rows[w1] == rows[w2] != rows[w3]
    per_query = Counter(r[0] for r in rows[w1])
    assert set(per_query) == set(range(30)) and set(per_query.values()) == {2}
    for _, attr, qlo, qhi, node in rows[w1]:
        if attr == "age":
            assert node is None and qhi - qlo >= 0.25 * (51 - 19) and qlo == int(qlo) and qhi == int(qhi)
        else:
            assert qlo is None and qhi is None and node != "All"     # never the root
    # every query is built from one record, so every query matches at least one
    res = run_are(toy, "fig3", workload=w1)
    assert res["n_used"] == 30
    # point queries with selectivity 0
    w0 = make_workload(toy, **{**args, "selectivity": 0.0, "categorical": [], "qi_per_query": 1}, seed=1, name="w0")
    assert all(r[2] == r[3] and r[2] in FIG1A["age"] for r in toy.con.table(w0).fetchall())


def test_are_rejects_predicates_on_other_columns(toy):
    put_workload(toy, "w", [(0, "age", 1, 2, None), (0, "zip", 1, 2, None)])
    with pytest.raises(InputError, match="1 predicate"):
        run_are(toy, "fig3")


# brute-force estimator: one record at a time, straight from the definitions of spec §2.5
LEAVES = {"R": {"a1", "a2", "b1", "b2", "b3"}, "A": {"a1", "a2"}, "B": {"b1", "b2", "b3"},
          **{x: {x} for x in ("a1", "a2", "b1", "b2", "b3")}}
TREE = [("t", "R", None), ("t", "A", "R"), ("t", "B", "R"), ("t", "a1", "A"), ("t", "a2", "A"),
        ("t", "b1", "B"), ("t", "b2", "B"), ("t", "b3", "B")]


def p_num(lo, hi, qlo, qhi):
    if lo == hi:
        return F(int(qlo <= lo <= qhi))
    return F(max(0, min(hi, qhi) - max(lo, qlo) + 1), hi - lo + 1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_are_matches_brute_force(backend, data):
    n = data.draw(st.integers(1, 12))
    ages = data.draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    leaves = data.draw(st.lists(st.sampled_from(sorted(LEAVES["R"])), min_size=n, max_size=n))
    # generalize each record by hand: an interval around its age, a node above its leaf
    gen = []
    for a, leaf in zip(ages, leaves):
        lo = data.draw(st.integers(0, a))
        hi = data.draw(st.integers(a, 9))
        node = data.draw(st.sampled_from([x for x in ("R", "A", "B", leaf) if leaf in LEAVES[x]]))
        gen.append((lo, hi, node))
    queries = data.draw(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 4), st.sampled_from(sorted(LEAVES)),
                                           st.sampled_from(["num", "cat", "both"])), min_size=1, max_size=6))
    put_hierarchies(backend, TREE)
    put(backend, "orig", {"age": ages, "c": leaves})
    put(backend, "gen", {"age__lo": [float(g[0]) for g in gen], "age__hi": [float(g[1]) for g in gen],
                         "age": ["x"] * n, "c": [g[2] for g in gen]})
    preds = []
    for qid, (qlo, width, node, kind) in enumerate(queries):
        if kind in ("num", "both"):
            preds.append((qid, "age", qlo, qlo + width, None))
        if kind in ("cat", "both"):
            preds.append((qid, "c", None, None, node))
    put_workload(backend, "w", preds)
    res = are(backend, workload="w", original_relation="orig", generalized_relation="gen", numeric=["age"],
              categorical=[("c", "t")], hier_closure_relation="hier_closure", hier_node_relation="hier_node")
    for qid, (qlo, width, node, kind) in enumerate(queries):
        qhi = qlo + width
        use_num, use_cat = kind in ("num", "both"), kind in ("cat", "both")
        actual = sum(1 for a, leaf in zip(ages, leaves)
                     if (not use_num or qlo <= a <= qhi) and (not use_cat or leaf in LEAVES[node]))
        est = sum((p_num(lo, hi, qlo, qhi) if use_num else 1) *
                  (F(len(LEAVES[g] & LEAVES[node]), len(LEAVES[g])) if use_cat else 1) for lo, hi, g in gen)
        got = res["per_query"][qid]
        assert got["actual"] == actual and got["estimate"] == pytest.approx(float(est), abs=TOL)


# ------------------------------------------------------------------------------------------
# hostile identifiers through every metric
# ------------------------------------------------------------------------------------------
def test_hostile_identifiers(backend):
    num, cat, h = 'x"; DROP TABLE t; --', "année", "a b"
    put(backend, "t", {"keep": [1]})
    put_hierarchies(backend, [(h, "R", None), (h, "é", "R"), (h, "ü", "R")], node_rel=("main", "select"),
                    closure_rel=("main", 'cl"osure'))
    put(backend, ("main", "o'rig"), {num: [1, 2, 3, 4], cat: ["é", "é", "ü", "ü"]})
    put(backend, ("main", "ge n"), {num: ["[1:2]", "[1:2]", "[3:4]", "[3:4]"], num + "__lo": [1.0, 1.0, 3.0, 3.0],
                                    num + "__hi": [2.0, 2.0, 4.0, 4.0], cat: ["R", "R", "ü", "ü"]})
    res = ncp(backend, relation=("main", "ge n"), numeric=[(num, 1, 4)], categorical=[(cat, h)],
              hier_node_relation=("main", "select"))
    assert frac(res["ncp"]) == (F(1, 3) + F(1, 2)) / 2
    assert discernibility(backend, relation=("main", "ge n"), qis=[num, cat])["dm"] == 8
    w = make_workload(backend, original_relation=("main", "o'rig"), numeric=[num], categorical=[(cat, h)],
                      n_queries=10, hier_closure_relation=("main", 'cl"osure'), name=("main", "work load;"))
    out = are(backend, workload=w, original_relation=("main", "o'rig"), generalized_relation=("main", "ge n"),
              numeric=[num], categorical=[(cat, h)], hier_closure_relation=("main", 'cl"osure'),
              hier_node_relation=("main", "select"))
    assert out["n_queries"] == 10 and out["n_used"] == 10
    assert backend.con.table("t").fetchall() == [(1,)]
