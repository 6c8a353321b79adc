"""Seed 004 method: the pruned A-GS scans of MDAV' give exactly the clusters of full scans.

The production scans (``mdav.Pool.nearest`` / ``farthest``) align exactly only the values
whose lower/upper bound can reach the optimum (docs/longitudinal.md, "Speed"). These tests
run MDAV' twice on seeded cohorts — once with the production pool, once with a reference
pool that aligns every value still in D (the scalar Algorithm 2, or the batched DP that
``test_batched_costs_equal_scalar`` checks against it) — and require the same clusters,
members in the same order, the same representatives and the same ILM/ALM numerators.
"""
from __future__ import annotations

from fractions import Fraction

import duckdb
import numpy as np
import pytest

from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.inputs import prepare
from anon_duck.job import parse_job
from anon_duck.methods.longitudinal import METHOD
from anon_duck.methods.longitudinal import kernel
from anon_duck.methods.longitudinal.align import (GEN, SUP_X, SUP_Y, Bucket, Candidates, Offsets, XTables, ags,
                                                  ags_costs)
from benchmarks.generators.cohort import TABLE_I, generate, job_text
from anon_duck.methods.longitudinal.costs import CostModel, build_dgh
from anon_duck.methods.longitudinal.load import load
from anon_duck.methods.longitudinal.mdav import Cluster, Pool, Trajectories, mdav

from longitudinal_trees import random_tree


class FullScanPool(Pool):
    """Reference D: every argmin/argmax aligns every value still in D exactly."""

    def __init__(self, model: CostModel, trajs: Trajectories, scalar: bool) -> None:
        super().__init__(model, trajs, "ags")
        self.scalar = scalar

    def _all(self, codes: np.ndarray, ages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = np.flatnonzero(self.count > 0)
        if self.scalar:
            return t, np.array([ags(self.model, codes, ages, *self.trajs.pairs(int(v))).total for v in t])
        b = Bucket.create(self.model, t, self.trajs.codes[t], self.trajs.ages[t], self.trajs.length[t], np.int64)
        return t, ags_costs(self.model, codes, ages, b)

    def _pick(self, t: np.ndarray, d: np.ndarray, best: int) -> int:
        ties = t[d == best]
        return int(ties[np.argmin(self.first_record(ties))])

    def nearest(self, codes: np.ndarray, ages: np.ndarray) -> int:
        t, d = self._all(codes, ages)
        return self._pick(t, d, d.min())

    def farthest(self, codes: np.ndarray, ages: np.ndarray) -> int:
        t, d = self._all(codes, ages)
        return self._pick(t, d, d.max())


def _run(pool: Pool, k: int) -> list[Cluster]:
    try:
        return mdav(pool, k, final_pick="random", rng=np.random.default_rng(7), progress=lambda *a: None)
    finally:
        pool.close()


class SplitPool(Pool):
    """The production pool with every scan's second pass split over threads, however small D."""

    SPLIT_FROM = 0

    def __init__(self, model: CostModel, trajs: Trajectories, workers: int) -> None:
        super().__init__(model, trajs, "ags", workers=workers)
        self.splits = 0

    def _split(self, run, best):
        self.splits += 1
        return super()._split(run, best)


def _assert_same(got: list[Cluster], ref: list[Cluster]) -> None:
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.members.tolist() == r.members.tolist()
        assert g.codes.tolist() == r.codes.tolist() and g.ages.tolist() == r.ages.tolist()
        assert (g.i, g.a, g.n_i, g.n_a) == (r.i, r.a, r.n_i, r.n_a)


def _loaded_cohort(name: str, n: int, seed: int):
    """A Table-I-shaped cohort through the real SQL load path (ICD-9 categories, dyadic ages)."""
    con = duckdb.connect()
    backend = DuckDBBackend(con)
    data = generate(TABLE_I[name], n_patients=n, seed=seed)
    backend.write_table("cohort_patients", data["patients"])
    backend.write_table("cohort_events", data["events"])
    job = parse_job(job_text(TABLE_I[name], k=2))
    return load(backend, job, prepare(backend, job), METHOD.check_params(job))


@pytest.mark.parametrize("name, n, seed", [("D50_pop", 300, 1), ("D50_pop", 250, 2), ("D4_smp", 300, 3)])
@pytest.mark.parametrize("k", [2, 5])
def test_pruned_scans_equal_full_scans_on_cohorts(name, n, seed, k):
    data = _loaded_cohort(name, n, seed)
    got = _run(Pool(data.model, data.trajs, "ags"), k)
    _assert_same(got, _run(FullScanPool(data.model, data.trajs, scalar=False), k))
    assert sum(c.members.size for c in got) == n and min(c.members.size for c in got) >= k
    split = SplitPool(data.model, data.trajs, workers=3)           # ranges of the layout on 3 threads
    _assert_same(_run(split, k), got)
    assert split.splits > 0


def test_pruned_scans_equal_scalar_algorithm_2():
    data = _loaded_cohort("D50_pop", 90, 5)
    for k in (2, 5):
        _assert_same(_run(Pool(data.model, data.trajs, "ags"), k),
                     _run(FullScanPool(data.model, data.trajs, scalar=True), k))


def _random_model(rng: np.random.Generator) -> CostModel:
    """Small random trees (parents before children) and random weights: many exact ties."""
    def tree(n: int):
        parent, n_leaves, is_leaf = random_tree(rng, n)
        return build_dgh(np.arange(n), parent, n_leaves, is_leaf, "c0" if rng.random() < 0.5 else "literal")
    w = Fraction(int(rng.integers(0, 11)), 10)
    return CostModel.create(tree(int(rng.integers(3, 9))), tree(int(rng.integers(3, 9))), w, 1 - w)


@pytest.mark.parametrize("seed", range(6))
def test_pruned_scans_equal_full_scans_on_random_trees(seed):
    """Random leaf trajectories of 0-7 pairs over tiny trees: duplicates, empty trajectories
    and tied costs everywhere, so the tie rule is exercised as much as the bounds."""
    rng = np.random.default_rng(seed)
    model = _random_model(rng)
    leaves_c, leaves_a = np.flatnonzero(model.icd.is_leaf), np.flatnonzero(model.age.is_leaf)
    n_records = int(rng.integers(150, 250))
    raw = [tuple(zip(rng.choice(leaves_c, n).tolist(), rng.choice(leaves_a, n).tolist()))
           for n in rng.integers(0, 8, n_records)]
    values = sorted(set(raw))
    index = {v: i for i, v in enumerate(values)}
    traj = np.array([i for i, v in enumerate(values) for _ in v], dtype=np.int64)
    seq = np.array([j for v in values for j in range(len(v))], dtype=np.int64)
    code = np.array([c for v in values for c, _ in v], dtype=np.int64)
    age = np.array([a for v in values for _, a in v], dtype=np.int64)
    trajs = Trajectories.from_pairs(traj, seq, code, age, np.array([index[v] for v in raw]))
    for k in (2, 3, 5):
        ref = _run(FullScanPool(model, trajs, scalar=False), k)
        _assert_same(_run(Pool(model, trajs, "ags"), k), ref)
        _assert_same(_run(SplitPool(model, trajs, workers=2), k), ref)


def _random_scan(rng: np.random.Generator, n_cand: int, low: int):
    """A random model, ``n_cand`` leaf trajectories of at most 6 pairs (at least ``low`` wide)
    and an X of ``low``..6 pairs of any nodes: (model, bucket, X codes, X ages, candidates)."""
    model = _random_model(rng)
    width = int(rng.integers(low, 7))
    codes = rng.choice(np.flatnonzero(model.icd.is_leaf), (n_cand, width))
    ages = rng.choice(np.flatnonzero(model.age.is_leaf), (n_cand, width))
    b = Bucket.create(model, np.arange(n_cand), codes, ages, rng.integers(0, width + 1, n_cand), np.int64)
    m = int(rng.integers(low, 7))
    xc, xa = rng.integers(0, model.icd.n, m), rng.integers(0, model.age.n, m)
    return model, b, xc, xa, Candidates.from_rows(np.arange(n_cand), b.pid, b.length, b.pairs)


def test_bounds_enclose_the_exact_cost():
    """lower_bound <= A-GS total <= upper_bound for generalized X (any node) and leaf Ys."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        model, b, xc, xa, cand = _random_scan(rng, 40, 0)
        m = xc.size
        exact = ags_costs(model, xc, xa, b)
        tables = XTables.create(model, b.pairs, xc, xa)
        assert (tables.lower_bound(cand) <= exact).all()
        assert (tables.upper_bound(cand, b.sup_y) >= exact).all()
        bands = [tables.band_bound(cand, b.sup_y, w) for w in range(8)]
        assert all((band >= exact).all() for band in bands)             # every band path is an alignment
        assert all((wide <= narrow).all() for narrow, wide in zip(bands, bands[1:]))
        assert bands[-1].tolist() == exact.tolist()                     # a band of 7 >= any side: the full DP
        # the per-pair bound terms are the minimums over X's pairs, taken pair by pair here
        pc, pa, sup_p = b.pairs.codes, b.pairs.ages, b.pairs.sup[:-1]
        gen = model.gen_i[xc[:, None], pc[None, :]] + model.gen_a[xa[:, None], pa[None, :]]      # (m, P)
        sup_x = model.sup(xc, xa)[:, None]
        want0 = np.minimum(sup_p, gen.min(axis=0)) if m else sup_p
        want1 = np.minimum(sup_p, (gen - sup_x).min(axis=0)) if m else sup_p
        assert tables.lower[:, :-1].tolist() == [want0.tolist(), want1.tolist()] and not tables.lower[:, -1].any()


def test_batched_costs_of_any_nodes_equal_scalar():
    """The batched DP, reading step(x_h, y_j) from X's rows of the model's tables, gives
    Algorithm 2's totals for X and Ys of any nodes (inner nodes included)."""
    rng = np.random.default_rng(5)
    for _ in range(4):
        model = _random_model(rng)
        n_cand, width = 60, int(rng.integers(1, 7))
        codes = rng.integers(0, model.icd.n, (n_cand, width))
        ages = rng.integers(0, model.age.n, (n_cand, width))
        length = rng.integers(0, width + 1, n_cand)
        b = Bucket.create(model, np.arange(n_cand), codes, ages, length, np.int32)
        m = int(rng.integers(0, 7))
        xc, xa = rng.integers(0, model.icd.n, m), rng.integers(0, model.age.n, m)
        got = ags_costs(model, xc, xa, b)
        assert got.tolist() == [ags(model, xc, xa, codes[c, :length[c]], ages[c, :length[c]]).total
                                for c in range(n_cand)]


def _ags_python(model: CostModel, xc: np.ndarray, xa: np.ndarray, yc: np.ndarray, ya: np.ndarray,
                offsets: Offsets) -> tuple[list[int], list[int], list[int], list[list[int]]]:
    """Algorithm 2 as plain Python over the model's tables (the implementation the compiled
    ``ags`` replaced): (anonymized codes, ages, [i, a, n_i, n_a], r)."""
    m, n = len(xc), len(yc)
    def gen(h, j):
        return [int(model.gen_i[xc[h], yc[j]]), int(model.gen_a[xa[h], ya[j]]),
                int(model.num_gen_i[xc[h], yc[j]]), int(model.num_gen_a[xa[h], ya[j]])]
    def sup(c, a):
        return [int(model.sup_i[c]), int(model.sup_a[a]), int(model.num_sup_i[c]), int(model.num_sup_a[a])]
    C = [[0] * (n + 1) for _ in range(m + 1)]
    R = [[-1] * (n + 1) for _ in range(m + 1)]
    C[0][0] = offsets.i + offsets.a
    for h in range(1, m + 1):
        C[h][0], R[h][0] = C[h - 1][0] + sum(sup(xc[h - 1], xa[h - 1])[:2]), SUP_X
    for j in range(1, n + 1):
        C[0][j], R[0][j] = C[0][j - 1] + sum(sup(yc[j - 1], ya[j - 1])[:2]), SUP_Y
    for h in range(1, m + 1):
        for j in range(1, n + 1):
            cands = [C[h - 1][j - 1] + sum(gen(h - 1, j - 1)[:2]), C[h][j - 1] + sum(sup(yc[j - 1], ya[j - 1])[:2]),
                     C[h - 1][j] + sum(sup(xc[h - 1], xa[h - 1])[:2])]
            R[h][j] = cands.index(min(cands))                 # first minimum: GEN, SUP_Y, SUP_X
            C[h][j] = cands[R[h][j]]
    codes, ages, sums = [], [], [offsets.i, offsets.a, offsets.n_i, offsets.n_a]
    h, j = m, n
    while h or j:
        if R[h][j] == GEN:
            cost = gen(h - 1, j - 1)
            codes.append(int(model.icd.lca[xc[h - 1], yc[j - 1]]))
            ages.append(int(model.age.lca[xa[h - 1], ya[j - 1]]))
            h, j = h - 1, j - 1
        elif R[h][j] == SUP_Y:
            cost, j = sup(yc[j - 1], ya[j - 1]), j - 1
        else:
            cost, h = sup(xc[h - 1], xa[h - 1]), h - 1
        sums = [s + c for s, c in zip(sums, cost)]
    return codes[::-1], ages[::-1], sums, R


def test_compiled_merge_equals_python_algorithm_2():
    """The compiled A-GS merge (``kernel.ags_align`` + ``traceback``) gives the plain-Python
    Algorithm 2's r matrix, anonymized pairs and ILM/ALM sums on random trees full of ties,
    with offsets carried and any node (generalized X) on either side."""
    assert (GEN, SUP_Y, SUP_X) == (0, 1, 2)              # the reference's op order
    rng = np.random.default_rng(17)
    for _ in range(60):
        model = _random_model(rng)
        m, n = int(rng.integers(0, 8)), int(rng.integers(0, 8))
        xc, xa = rng.integers(0, model.icd.n, m), rng.integers(0, model.age.n, m)
        yc, ya = rng.integers(0, model.icd.n, n), rng.integers(0, model.age.n, n)
        offsets = Offsets(*(int(v) for v in rng.integers(0, 50, 4)))
        got, mats = ags(model, xc, xa, yc, ya, offsets, with_matrices=True)
        codes, ages, sums, r = _ags_python(model, xc, xa, yc, ya, offsets)
        assert mats.r.tolist() == r
        assert (got.codes.tolist(), got.ages.tolist(), [got.i, got.a, got.n_i, got.n_a]) == (codes, ages, sums)


def test_a_range_pruned_by_another_ranges_total_keeps_only_exact_totals():
    """The split second pass (``kernel.nearest_pass`` on one range while ``shared`` holds a
    total another range found): the range's result is the exact argmin of its values that
    tie or beat that total, or nothing — never a stopped alignment's partial sum."""
    rng = np.random.default_rng(23)
    never = np.iinfo(np.int64).min // 4                     # a first pass that aligns nothing
    checked = 0
    for _ in range(40):
        n_cand = 80
        model, b, xc, xa, cand = _random_scan(rng, n_cand, 1)
        tables = XTables.create(model, b.pairs, xc, xa, cand.used)
        exact = tables.costs(cand, b.sup_y)
        head = rng.permutation(n_cand).astype(np.int64)
        count = np.ones(n_cand, dtype=np.int64)
        args = (tables.x, tables.lower, tables.rest, tables.unmatched, tables.sup_x, cand.ids, cand.start, cand.flat,
                cand.y, b.sup_y, count, head)
        half = n_cand // 2
        found = int(np.sort(exact[:half])[int(rng.integers(0, half))])   # some total of the other range
        sums = np.empty((n_cand, 3), dtype=np.int64)
        best = np.array([kernel.NO_BEST, kernel.NO_BEST, -1], dtype=np.int64)
        kernel.nearest_pass(*args, True, never, best, best[:1].copy(), sums, 0, n_cand)
        assert best[2] == -1
        shared = np.array([found], dtype=np.int64)
        kernel.nearest_pass(*args, False, never, best, shared, sums, half, n_cand)
        mine = np.arange(half, n_cand)
        can = mine[exact[mine] <= found]
        if can.size:
            want = can[np.lexsort((head[can], exact[can]))[0]]
            assert best.tolist() == [exact[want], head[want], want]
            checked += 1
        else:
            assert best[2] == -1
    assert checked >= 10
