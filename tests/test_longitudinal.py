"""Seed 004 (longitudinal A-GS + MDAV'): the paper's worked examples and the digest's fixtures.

Expected values: paper Fig. 1(c), Example 4, Example 5 / Fig. 5, Appendix B; derived
fixtures F7-F14 of spec longitudinal.md §4 (computed there with exact rationals).
"""
from __future__ import annotations

import csv
import json
from fractions import Fraction

import duckdb
import numpy as np
import pytest

from anon_duck import api
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.inputs import prepare
from anon_duck.methods.longitudinal import METHOD
from anon_duck.methods.longitudinal.align import (GEN, OP_NAMES, Bucket, Offsets, ags, ags_costs, baseline,
                                                  baseline_costs)
from anon_duck.methods.longitudinal.costs import CostModel, build_dgh
from anon_duck.methods.longitudinal.load import NODE_TABLE, load
from tests.conftest import FIXTURES

from longitudinal_trees import random_tree

TOY = "longitudinal_toy.toml"
T = {  # Fig. 1(a)
    1: [("401.1", "33"), ("401.1", "34"), ("401.1", "35")],
    2: [("401.1", "38"), ("401.1", "40")],
    3: [("401.9", "38"), ("401.1", "40")],
    4: [("401.9", "33"), ("401.1", "33"), ("401.1", "34"), ("401.1", "35")],
    5: [("401.1", "39"), ("401.9", "40")],
    6: [("401.1", "40"), ("401.9", "40")],
}


class Toy:
    """The toy cost model built through the real SQL path, with node-name <-> id maps."""

    def __init__(self, con: duckdb.DuckDBPyConnection, job) -> None:
        backend = DuckDBBackend(con)
        params = METHOD.check_params(job)
        inputs = prepare(backend, job)
        self.loaded = load(backend, job, inputs, params)
        self.model: CostModel = self.loaded.model
        rows = con.execute(f'SELECT attr, node, node_id FROM temp.main."{NODE_TABLE[2]}"').fetchall()
        self.id = {(a, n): i for a, n, i in rows}
        self.name = {(a, i): n for a, n, i in rows}

    def traj(self, pairs):
        return (np.array([self.id["code", c] for c, _ in pairs]), np.array([self.id["age", a] for _, a in pairs]))

    def show(self, codes, ages):
        return [(self.name["code", int(c)], self.name["age", int(a)]) for c, a in zip(codes, ages)]

    def frac(self, v: int) -> Fraction:
        return Fraction(v, self.model.scale)


@pytest.fixture
def toy(con, job_file):
    return Toy(con, job_file(TOY))


def _csv(name):
    with open(FIXTURES / "004" / name, newline="") as f:
        return list(csv.reader(f))


# ----------------------------------------------------------------------------------------
# Definitions 4-6: LM and the DGHs
# ----------------------------------------------------------------------------------------
def test_example4_lm_and_fig3_age_dgh(toy):
    age = toy.model.age
    assert age.domain == 8                                  # |Age| = 8 (33..40, Fig. 3)
    a, b = toy.id["age", "[33-34]"], toy.id["age", "[33-36]"]
    assert Fraction(int(age.delta[b] - age.delta[a]), age.domain) == Fraction(1, 4)   # Example 4
    assert toy.name["age", int(age.lca[toy.id["age", "33"], toy.id["age", "36"]])] == "[33-36]"
    assert toy.name["age", int(age.lca[toy.id["age", "39"], toy.id["age", "40"]])] == "[39-40]"
    assert toy.name["age", age.root] == "[33-40]"
    assert toy.name["code", int(toy.model.icd.lca[toy.id["code", "401.1"], toy.id["code", "401.9"]])] == "401"


def test_example5_costs(toy):
    """Generalizing 401.1 with 401.9 costs ILM (1+1)*0.5 = 1; suppressing (401.9, 33) 0.5 + 0.5."""
    m = toy.model
    c1, c9, a33 = toy.id["code", "401.1"], toy.id["code", "401.9"], toy.id["age", "33"]
    assert toy.frac(int(m.gen_i[c1, c9])) == 1
    assert toy.frac(int(m.gen_a[a33, a33])) == 0
    assert toy.frac(int(m.sup_i[c9])) == Fraction(1, 2) and toy.frac(int(m.sup_a[a33])) == Fraction(1, 2)


# ----------------------------------------------------------------------------------------
# Algorithm 2 (A-GS): Fig. 5 cell by cell
# ----------------------------------------------------------------------------------------
def test_fig5_matrices_cell_by_cell(toy):
    result, mats = ags(toy.model, *toy.traj(T[4]), *toy.traj(T[1]), with_matrices=True)
    exp_i = [[Fraction(v) for v in row] for row in _csv("fig5_i.csv")]
    exp_a = [[Fraction(v) for v in row] for row in _csv("fig5_a.csv")]
    exp_r = _csv("fig5_r.csv")
    assert [[toy.frac(int(v)) for v in row] for row in mats.i] == exp_i
    assert [[toy.frac(int(v)) for v in row] for row in mats.a] == exp_a
    got_r = [[OP_NAMES.get(int(v), "-") for v in row] for row in mats.r]
    assert got_r == exp_r
    assert toy.show(result.codes, result.ages) == T[1]      # T~ = (401.1,33) (401.1,34) (401.1,35)
    assert (toy.frac(result.i), toy.frac(result.a)) == (Fraction(1, 2), Fraction(1, 2))


F7_DIST = [[0, 3, 4, 1, 4, 4], [3, 0, 1, 4, 1.5, 1.5], [4, 1, 0, 4, 2.25, 2], [1, 4, 4, 0, 5, 5],
           [4, 1.5, 2.25, 5, 0, 0.25], [4, 1.5, 2, 5, 0.25, 0]]
F7_OUT = {
    (1, 2): ("(401.1,[33-40]) (401.1,[33-40])", "1/2", "5/2"),
    (1, 3): ("(401,[33-40]) (401.1,[33-40])", "3/2", "5/2"),
    (1, 5): ("(401.1,[33-40]) (401,[33-40])", "3/2", "5/2"),
    (2, 3): ("(401,38) (401.1,40)", "1", "0"),
    (2, 5): ("(401.1,[37-40]) (401,40)", "1", "1/2"),
    (3, 5): ("(401.1,[39-40])", "1", "5/4"),
    (3, 6): ("(401.1,40)", "1", "1"),
    (4, 5): ("(401.1,[33-40]) (401,[33-40])", "2", "3"),
    (5, 6): ("(401.1,[39-40]) (401.9,40)", "0", "1/4"),
}


def _text(pairs):
    return " ".join(f"({c},{a})" for c, a in pairs)


def test_f7_pairwise_distances_outputs_and_symmetry(toy):
    for x in range(1, 7):
        for y in range(1, 7):
            r = ags(toy.model, *toy.traj(T[x]), *toy.traj(T[y]))
            assert float(toy.frac(r.total)) == F7_DIST[x - 1][y - 1], (x, y)
    for (x, y), (text, i, a) in F7_OUT.items():
        for first, second in ((x, y), (y, x)):           # the output does not depend on which is X
            r = ags(toy.model, *toy.traj(T[first]), *toy.traj(T[second]))
            assert (_text(toy.show(r.codes, r.ages)), toy.frac(r.i), toy.frac(r.a)) == \
                (text, Fraction(i), Fraction(a)), (first, second)


def test_f10_ties_go_to_generalization(toy):
    r = ags(toy.model, *toy.traj([("401.1", "33")]), *toy.traj([("401.9", "40")]))
    assert toy.show(r.codes, r.ages) == [("401", "[33-40]")] and (toy.frac(r.i), toy.frac(r.a)) == (1, 1)
    r, mats = ags(toy.model, *toy.traj([("401.1", "33"), ("401.1", "34")]), *toy.traj([("401.1", "36")]),
                  with_matrices=True)
    assert int(mats.r[2, 1]) == GEN                      # GEN (1.5) ties with SUP_X (1.5) at (2, 1)
    assert toy.show(r.codes, r.ages) == [("401.1", "[33-36]")]
    assert (toy.frac(r.i), toy.frac(r.a)) == (Fraction(1, 2), 1)


def test_offsets_carry_into_the_chain(toy):
    """formCluster step 3: ILM(X), ALM(X) start cell (0, 0) and add to every total."""
    plain = ags(toy.model, *toy.traj(T[2]), *toy.traj(T[3]))
    carried = ags(toy.model, *toy.traj(T[2]), *toy.traj(T[3]), Offsets(7, 11, 1, 2))
    assert (carried.i, carried.a, carried.n_i, carried.n_a) == (plain.i + 7, plain.a + 11, plain.n_i + 1,
                                                                plain.n_a + 2)


# ----------------------------------------------------------------------------------------
# Algorithm 1 (Baseline)
# ----------------------------------------------------------------------------------------
def test_f9_baseline_alignment(toy):
    for x, y in ((4, 1), (1, 4)):
        r = baseline(toy.model, *toy.traj(T[x]), *toy.traj(T[y]))
        assert _text(toy.show(r.codes, r.ages)) == "(401,33) (401.1,[33-34]) (401.1,[33-36])"
        assert (toy.frac(r.i), toy.frac(r.a)) == (Fraction(3, 2), Fraction(5, 4))


# ----------------------------------------------------------------------------------------
# batched cost-only DP == scalar DP (random trajectories, generalized X included)
# ----------------------------------------------------------------------------------------
def _random_model(rng, convention):
    """A random tree for each attribute (parents before children) and random weights."""
    def tree(n):
        parent, n_leaves, is_leaf = random_tree(rng, n)
        return build_dgh(np.arange(n), parent, n_leaves, is_leaf, convention)
    w = Fraction(int(rng.integers(0, 11)), 10)
    return CostModel.create(tree(int(rng.integers(2, 12))), tree(int(rng.integers(2, 12))), w, 1 - w)


@pytest.mark.parametrize("convention", ["c0", "literal"])
def test_batched_costs_equal_scalar(convention):
    rng = np.random.default_rng(42)
    for _ in range(30):
        model = _random_model(rng, convention)
        n_cand, width = 25, int(rng.integers(0, 7))
        codes = rng.integers(0, model.icd.n, (n_cand, width))
        ages = rng.integers(0, model.age.n, (n_cand, width))
        length = rng.integers(0, width + 1, n_cand)
        for dtype in (np.int32, np.int64):
            b = Bucket.create(model, np.arange(n_cand), codes, ages, length, dtype)
            m = int(rng.integers(0, 6))
            xc, xa = rng.integers(0, model.icd.n, m), rng.integers(0, model.age.n, m)   # any node: generalized X
            got = ags_costs(model, xc, xa, b)
            got_b = baseline_costs(model, xc, xa, b)
            for c in range(n_cand):
                yc, ya = codes[c, :length[c]], ages[c, :length[c]]
                assert got[c] == ags(model, xc, xa, yc, ya).total
                assert got_b[c] == baseline(model, xc, xa, yc, ya).total


# ----------------------------------------------------------------------------------------
# MDAV' end to end through the pipeline
# ----------------------------------------------------------------------------------------
def _expected_fig1c():
    return sorted(tuple(r) for r in _csv("toy_expected_k2.csv")[1:])


def _facts(con, release):
    return json.loads(con.execute(f"SELECT value FROM {release}_meta WHERE key = 'facts'").fetchone()[0])


@pytest.mark.parametrize("seed", [0, 4, 99])
def test_fig1c_two_anonymization(con, job_file, seed):
    """Fig. 1(a) -> Fig. 1(c) for k = 2, whatever the seed (F3, F8)."""
    job = job_file(TOY)
    job = job.__class__(**{**job.__dict__, "release": job.release.__class__("toy_k2", seed)})
    res = api.run(con, job)
    assert res.verified
    assert sorted(con.execute("SELECT trajectory, dna FROM toy_k2_patients").fetchall()) == _expected_fig1c()
    f = _facts(con, "toy_k2")
    assert (f["ilm_alg"], f["alm_alg"]) == pytest.approx((0.2, 0.1))            # Algorithm 3 step 20
    assert (f["ilm_def8"], f["alm_def8"]) == pytest.approx((5 / 24, 1 / 12))     # Definition 8
    assert (f["clusters"], f["pairs"]) == (3, 15)


def test_release_holds_no_id_and_pairs_match(con, job_file):
    api.run(con, job_file(TOY))
    cols = [r[0] for r in con.execute("DESCRIBE toy_k2_patients").fetchall()]
    assert cols == ["release_id", "trajectory", "n_pairs", "dna"]
    ids = {r[0] for r in con.execute("SELECT release_id FROM toy_k2_patients").fetchall()}
    assert ids == set(range(1, 7))
    ev = con.execute("SELECT p.dna, e.pos, e.code, e.age, e.age_lo, e.age_hi FROM toy_k2_events e "
                     "JOIN toy_k2_patients p USING (release_id) WHERE p.dna = 'GC..C' ORDER BY pos").fetchall()
    assert ev == [("GC..C", 1, "401.1", "[39-40]", 39, 40), ("GC..C", 2, "401.9", "40", 40, 40)]


def test_f9_mdav_baseline(con, job_file):
    job = job_file(TOY).with_params(alignment="baseline")
    api.run(con, job)
    got = sorted(con.execute("SELECT trajectory, dna FROM toy_k2_patients").fetchall())
    fig1c = dict((d, t) for t, d in _expected_fig1c())
    for t, d in got:
        if d in ("CT...A", "CC..A"):
            assert t == "(401,33) (401.1,[33-34]) (401.1,[33-36])"
        else:
            assert t == fig1c[d]
    f = _facts(con, "toy_k2")
    assert (f["ilm_alg"], f["alm_alg"]) == pytest.approx((1 / 3, 1 / 5))
    assert (f["ilm_def8"], f["alm_def8"]) == pytest.approx((11 / 36, 5 / 32))


def test_f14_k3_lowest_id(con, job_file):
    api.run(con, job_file(TOY).with_params(k=3, final_pick="lowest_id"))
    got = sorted(con.execute("SELECT dna, trajectory FROM toy_k2_patients").fetchall())
    expect = {"GC..A": "(401.1,40)", "AC..A": "(401.1,40)", "TG..A": "(401.1,40)",
              "CT...A": "(401.1,[33-40]) (401,[33-40])", "CC..A": "(401.1,[33-40]) (401,[33-40])",
              "GC..C": "(401.1,[33-40]) (401,[33-40])"}
    assert dict(got) == expect
    f = _facts(con, "toy_k2")
    assert (f["ilm_alg"], f["alm_alg"]) == pytest.approx((7 / 15, 8 / 15))


def test_literal_convention_same_release_other_loss(con, job_file):
    api.run(con, job_file(TOY).with_params(lm_convention="literal"))
    assert sorted(con.execute("SELECT trajectory, dna FROM toy_k2_patients").fetchall()) == _expected_fig1c()
    f = _facts(con, "toy_k2")
    assert (f["ilm_def8"], f["alm_def8"]) == pytest.approx((5 / 48, 11 / 192))


# ----------------------------------------------------------------------------------------
# AvgRE (Appendix B; F6, F11)
# ----------------------------------------------------------------------------------------
def test_f11_avg_re(con, job_file):
    job = job_file(TOY).with_params(query_size=1)
    api.run(con, job)
    rep = api.report(con, job)
    assert (rep["queries"], rep["queries_exact"]) == (9, 8)
    assert rep["avg_re"] == pytest.approx(1 / 9)
    job2 = job_file(TOY)
    rep2 = api.report(con, job2)                      # 9 single + 10 two-pair queries; 1 + 3 wrong
    assert rep2["queries"] == 19 and rep2["avg_re"] == pytest.approx(4 / 19)
    assert rep2["ilm_alg"] == pytest.approx(0.2) and rep2["ilm_def8"] == pytest.approx(5 / 24)


def test_avg_re_in_slices_of_trajectories_gives_the_one_slice_answer(con, job_file, monkeypatch):
    """AvgRE's estimates are summed one slice of release ids at a time (grouped per query and
    trajectory at once, they took 4.3 times as long for 3 times the persons of a dense CDM): a
    slice per trajectory gives the one-slice AvgRE."""
    from anon_duck.methods.longitudinal import measures
    job = job_file(TOY)
    api.run(con, job)
    whole = api.report(con, job)
    slices = []
    real = measures.render
    monkeypatch.setattr(measures, "render", lambda name, **k: (
        slices.append(name) if name == "longitudinal/avg_re_estimates.sql.j2" else None, real(name, **k))[1])
    monkeypatch.setattr(measures, "AVG_RE_SLICE_EVENTS", 1)
    each = api.report(con, job)
    trajectories = con.execute("SELECT count(*) FROM toy_k2_patients").fetchone()[0]
    assert len(slices) == trajectories > 1
    assert (each["queries"], each["queries_exact"]) == (whole["queries"], whole["queries_exact"]) == (19, 15)
    assert each["avg_re"] == pytest.approx(whole["avg_re"], rel=1e-12) and whole["avg_re"] == pytest.approx(4 / 19)


def test_the_avg_re_workload_is_every_frequent_combination(con):
    """The workload's pairs are counted among the frequent (code, age) pairs only (a pair of
    them is in no more trajectories than either): the combinations and counts are still
    those of brute force over every trajectory's pairs, on random trajectories where most
    (code, age) pairs are rare."""
    from collections import Counter
    from itertools import combinations

    from anon_duck.methods.longitudinal.measures import QUERIES
    from anon_duck.sqlrender import render
    rng = np.random.default_rng(7)
    rows = [(f"p{i}", f"c{rng.zipf(1.6) % 30}", int(rng.integers(20, 26))) for i in range(300) for _ in range(8)]
    con.execute("CREATE TABLE ev (id VARCHAR, code VARCHAR, age INTEGER)")
    con.executemany("INSERT INTO ev VALUES (?, ?, ?)", rows)
    held = {}
    for pid, code, age in rows:
        held.setdefault(pid, set()).add((code, str(age)))
    want = Counter((1, a, None) for items in held.values() for a in items)
    want += Counter((2, a, b) for items in held.values() for a, b in combinations(sorted(items), 2))
    want = {key: n for key, n in want.items() if n >= 12}
    DuckDBBackend(con).run("test", render("longitudinal/workload.sql.j2", target=QUERIES, events=("main", "ev"),
                                          max_size=2), {"min_support": 12, "max_queries": 10 ** 6, "seed": "1"})
    got = {(size, (c1, a1), None if c2 is None else (c2, a2)): n for size, c1, a1, c2, a2, n in con.execute(
        f'SELECT size, code1, age1, code2, age2, actual FROM temp.main."{QUERIES[-1]}"').fetchall()}
    assert got == want and sum(1 for key in want if key[0] == 2) > 10
    assert len({a for _, a, _ in want}) < len({(c, str(a)) for _, c, a in rows}) / 2     # most pairs are rare


# ----------------------------------------------------------------------------------------
# the verifier, both ways
# ----------------------------------------------------------------------------------------
def test_the_consistency_check_in_slices_finds_what_one_slice_finds(con, job_file, monkeypatch):
    """The consistency check runs one slice of release ids at a time: on a release broken at
    several ids (one of them NULL), slices of one patient each find the same violations, in
    the same order, as one slice of all."""
    from anon_duck.verifiers import longitudinal as verifier
    job = job_file(TOY)
    api.run(con, job)
    ids = [r[0] for r in con.execute("SELECT release_id FROM toy_k2_patients ORDER BY release_id").fetchall()]
    con.execute(f"UPDATE toy_k2_patients SET trajectory = trajectory || ' (x,1)' WHERE release_id = {ids[0]}")
    con.execute(f"UPDATE toy_k2_events SET pos = pos + 10 WHERE release_id = {ids[-1]} AND pos = 1")
    con.execute(f"UPDATE toy_k2_events SET release_id = NULL WHERE release_id = {ids[2]} AND pos = 1")
    tables = {"patients": ("main", "toy_k2_patients"), "events": ("main", "toy_k2_events")}
    whole = verifier.consistency(DuckDBBackend(con), **tables)
    monkeypatch.setattr(verifier, "SLICE_EVENTS", 1)
    sliced = verifier.consistency(DuckDBBackend(con), **tables)
    assert not whole.passed and whole.n_violations >= 4 and len(ids) > 3
    assert (sliced.n_violations, sliced.violations) == (whole.n_violations, whole.violations)
    assert {v["release_id"] for v in whole.violations} == {None, ids[0], ids[2], ids[-1]}, whole.violations


def test_verifier_rejects_a_broken_release(con, job_file):
    job = job_file(TOY)
    api.run(con, job)
    assert all(c.passed for c in api.verify(con, job))
    # break k-anonymity: one patient of {5, 6} gets another last pair, consistently in both tables
    rid = con.execute("SELECT release_id FROM toy_k2_patients WHERE dna = 'GC..C'").fetchone()[0]
    con.execute(f"UPDATE toy_k2_events SET age = '39', age_lo = 39, age_hi = 39 WHERE release_id = {rid} AND pos = 2")
    con.execute(f"UPDATE toy_k2_patients SET trajectory = '(401.1,[39-40]) (401.9,39)' WHERE release_id = {rid}")
    checks = {c.name: c for c in api.verify(con, job)}
    assert checks["longitudinal_consistency"].passed
    assert not checks["k_anonymity"].passed and checks["k_anonymity"].n_violations == 2
    # break consistency only: the text no longer matches the events
    con.execute(f"UPDATE toy_k2_patients SET trajectory = '(401.1,[39-40]) (401.9,40)' WHERE release_id = {rid}")
    checks = {c.name: c for c in api.verify(con, job)}
    assert not checks["longitudinal_consistency"].passed
    assert checks["longitudinal_consistency"].violations[0]["release_id"] == rid
