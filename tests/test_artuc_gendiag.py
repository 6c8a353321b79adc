"""GenDiag (Appendix A of seed 000) on the toy clusters of spec rt_kkm §4.4 and Example 6.

Codes are ids ranked like their labels; blocks are Table 4's code sets (u2 fixed to 053.71, A15).
"""
from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from anon_duck.methods.gendiag import GenDiagResult, gendiag

LABELS = ["053.20", "053.71", "458.1", "458.21", "493.2", "494.1"]
BLOCK = [0, 0, 1, 1, 2, 3]            # {053.20, 053.71}, {458.1, 458.21}, {493.2}, {494.1}
FIG1A = {0: ["493.2", "494.1", "053.20"], 1: ["493.2", "494.1", "053.71"], 2: ["494.1", "053.20"],
         3: ["493.2", "494.1", "053.71"], 4: ["493.2"], 5: ["493.2", "494.1"],
         6: ["494.1", "458.1", "458.21"], 7: ["458.1", "494.1"]}


def run(records: list[int], k: int = 2, m: int = 2):
    res = gendiag([[LABELS.index(c) for c in FIG1A[r]] for r in records], BLOCK, k, m)
    tokens = [sorted("|".join(LABELS[c] for c in res.tokens[t]) for t in toks) for toks in res.record_tokens]
    return res, tokens


@pytest.mark.parametrize("cluster, ul, s, tokens", [
    # spec §4.4 table 4 (step 4) and step 5
    ([0, 1], Fraction(2, 5), 0, [["053.20|053.71", "493.2", "494.1"]] * 2),
    ([2, 3], Fraction(13, 7), 1, [["053.20|053.71", "494.1"]] * 2),
    ([6, 7], Fraction(6, 7), 0, [["458.1|458.21", "494.1"]] * 2),
    ([4, 5], Fraction(1), 1, [["493.2"]] * 2),
    ([0, 1, 2, 3], Fraction(36, 35), 0, [["053.20|053.71", "493.2", "494.1"]] * 2
     + [["053.20|053.71", "494.1"], ["053.20|053.71", "493.2", "494.1"]]),     # Example 6
    ([0, 1, 6, 7], Fraction(44, 35), 0, None),
])
def test_toy_clusters(cluster, ul, s, tokens):
    res, got = run(cluster)
    assert Fraction(res.ul()).limit_denominator(10_000) == ul
    assert res.s == s
    if tokens is not None:
        assert got == tokens


def test_suppression_counts_codes_per_cluster_and_records():
    res, got = run([4, 5])
    assert res.suppressed == (LABELS.index("494.1"),)
    assert res.record_suppressed == (0, 1)          # record 5 lost 494.1: UL(r) = s(r) = 1
    assert list(res.record_ul()) == [0.0, 1.0]


def test_no_block_partner_means_suppression_only():
    # 493.2 and 494.1 sit in singleton blocks: with k = 3 nothing can be merged
    res, got = run([0, 1, 7], k=3)
    assert all(t == ["494.1"] for t in got)
    assert res.s == 4


def test_single_block_allows_any_merge():
    res = gendiag([[0, 4, 5], [1, 4, 5], [5]], [0] * 6, 2, 2)
    assert res.s == 0


def _token_itemsets_ok(res, k: int, m: int) -> bool:
    counts: dict[tuple, int] = {}
    for toks in res.record_tokens:
        for size in range(1, m + 1):
            for p in itertools.combinations(sorted(toks), size):
                counts[p] = counts.get(p, 0) + 1
    return all(v >= k for v in counts.values())


@pytest.mark.parametrize("seed", range(20))
def test_output_is_km_anonymous_and_blocks_respected(seed):
    """Property (spec §3.2): every token itemset of size <= m has support >= k, every token
    stays inside one block, and tokens of a cluster are disjoint."""
    rng = np.random.default_rng(seed)
    n_codes, k, m = 12, int(rng.integers(2, 5)), int(rng.integers(1, 4))
    block = rng.integers(0, 4, n_codes)
    records = [sorted(rng.choice(n_codes, size=int(rng.integers(0, 6)), replace=False).tolist())
               for _ in range(int(rng.integers(k, 3 * k + 2)))]
    res = gendiag(records, block, k, m)
    assert _token_itemsets_ok(res, k, m)
    assert all(len({block[c] for c in t}) == 1 for t in res.tokens)
    flat = [c for t in res.tokens for c in t]
    assert len(flat) == len(set(flat))
    kept = {c for t in res.tokens for c in t}
    for r, toks, sup in zip(records, res.record_tokens, res.record_suppressed):
        assert sup == sum(1 for c in r if c not in kept)
        assert all(any(c in r for c in res.tokens[t]) for t in toks)   # a token comes from the record's codes


def _random_cluster(rng, n_codes: int, n_records: int, n_blocks: int):
    block = rng.integers(0, n_blocks, n_codes)
    weight = 1.0 / np.arange(1, n_codes + 1) ** 1.2
    records = [sorted(rng.choice(n_codes, size=int(rng.integers(0, min(n_codes, 12) + 1)), replace=False,
                                 p=weight / weight.sum()).tolist()) for _ in range(n_records)]
    return records, block


@pytest.mark.parametrize("seed", range(12))
def test_numpy_q_makes_the_same_decisions(seed, monkeypatch):
    """Small clusters count Q (Step 2) in Python, large ones with numpy; forcing numpy gives
    the very same C' and s."""
    from anon_duck.methods import gendiag as module
    rng = np.random.default_rng(100 + seed)
    records, block = _random_cluster(rng, int(rng.integers(20, 90)), int(rng.integers(10, 150)), int(rng.integers(1, 4)))
    k, m = int(rng.integers(2, 8)), int(rng.integers(1, 4))
    python_q = gendiag(records, block, k, m)
    monkeypatch.setattr(module, "_SMALL_Q", 0)
    assert gendiag(records, block, k, m) == python_q


@pytest.mark.parametrize("seed", range(8))
def test_compiled_q_is_step_2_in_step_4_order(seed):
    """Step 2 compiled (m <= 2: inverted index, partners read from a bitset, counting sort) gives
    Q row for row as the plain Python count sorted by (-support, size, lexicographic) (A18):
    clusters with duplicated records (ties in support), codes past one 64-bit word, any k."""
    from anon_duck.methods import gendiag as module
    from anon_duck.methods.gendiag.kernel import initial_q
    for part in range(50):
        rng = np.random.default_rng(1000 * seed + part)
        records, block = _random_cluster(rng, int(rng.integers(1, 200)), int(rng.integers(1, 120)), 3)
        if part % 3 == 0:
            records = records[: max(1, len(records) // 3)] * 3
        records = [[c * 7 for c in r] for r in records]          # sparse code ids: localized first
        cluster = module._Cluster(records, np.zeros(7 * len(block) + 1, dtype=np.int64))
        for k in (1, 2, 3, 7):
            for m in (1, 2):
                compiled = initial_q(cluster.n, cluster.local, cluster.start, cluster.gamma, k, m)
                assert compiled.tolist() == module._initial_q_small(cluster, k, m).tolist(), (seed, part, k, m)


def _oracle(records: list[list[int]], block, k: int, m: int) -> GenDiagResult:
    """GenDiag read straight from Appendix A and the digest's resolutions (A18-A20), with
    tokens as sorted code tuples and record sets, every pair scored: the reference for the
    compiled kernel."""
    holders = {(c,): frozenset(i for i, r in enumerate(records) if c in r) for r in records for c in r}
    rep = {c: (c,) for (c,) in holders}
    tokens = dict(holders)                                   # present token -> records holding it
    counts = Counter(p for r in records for z in range(1, m + 1) for p in itertools.combinations(sorted(r), z))
    queue = sorted((p for p, n in counts.items() if n < k), key=lambda p: (-counts[p], len(p), p))   # A18

    def sup(p, recs=tokens):
        return len(frozenset(range(len(records))).intersection(*(recs[t] for t in p)))

    s = 0
    for q in queue:                                                            # Step 4
        p = {rep[c] for c in q if rep[c] is not None}
        while p and sup(p) < k:                                                # Step 5
            pairs = []
            for u in p:                                                        # Step 6 (A19)
                for v in tokens:
                    if v != u and block[v[0]] == block[u[0]]:
                        w = tuple(sorted(u + v))
                        after = {**tokens, w: tokens[u] | tokens[v]}
                        pairs.append((len(w), -sup((p - {u, v}) | {w}, after), u, v, w))
            if pairs:                                                          # Steps 7-8
                *_, u, v, w = min(pairs)
                tokens[w] = tokens.pop(u) | tokens.pop(v)
                rep.update((c, w) for c in w)
                p = (p - {u, v}) | {w}
                continue
            while p and sup(p) < k:                                            # Steps 9-12 (A20)
                e = min(p, key=lambda t: (len(tokens[t]), t))
                s += len(e)
                del tokens[e]
                rep.update((c, None) for c in e)
                p.remove(e)
    alive = sorted(tokens)
    return GenDiagResult(tuple(alive), tuple(tuple(j for j, t in enumerate(alive) if i in tokens[t])
                                             for i in range(len(records))),
                         tuple(sum(rep[c] is None for c in r) for r in records), s,
                         tuple(sorted(c for c, t in rep.items() if t is None)))


@pytest.mark.parametrize("part", range(4))
def test_compiled_steps_match_the_oracle(part):
    """The compiled Steps 3-14 against :func:`_oracle` on 1,200 random clusters: few codes and
    few blocks (many ties in Step 6 and in Step 9's choice), duplicated records, m = 1..3, and
    clusters large enough for the kernel's record-count scoring (> 64 records)."""
    for seed in range(300 * part, 300 * (part + 1)):
        rng = np.random.default_rng(seed)
        n_codes, n_records = int(rng.integers(2, 16)), int(rng.integers(2, 30))
        if seed % 10 == 0:
            n_codes, n_records = int(rng.integers(20, 60)), int(rng.integers(65, 140))
        records, block = _random_cluster(rng, n_codes, n_records, int(rng.integers(1, 4)))
        if seed % 3 == 0:                                   # identical records: ties in support
            records = records[: max(1, n_records // 3)] * 3
        k, m = int(rng.integers(2, 6)), int(rng.integers(1, 4))
        assert gendiag(records, block, k, m) == _oracle(records, block, k, m), seed


@pytest.mark.parametrize("seed", range(12))
def test_certain_suppressions_bound_ul(seed):
    """The floor that lets Step 20 skip partners never exceeds the suppressed occurrences."""
    from anon_duck.methods.gendiag import certain_suppressions
    rng = np.random.default_rng(200 + seed)
    records, block = _random_cluster(rng, int(rng.integers(5, 40)), int(rng.integers(3, 40)), int(rng.integers(2, 12)))
    k = int(rng.integers(2, 6))
    res = gendiag(records, block, k, 2)
    support = np.bincount([c for r in records for c in r], minlength=len(block))
    floor = certain_suppressions(support, block, k)
    assert floor <= sum(res.record_suppressed) <= res.ul() + 1e-9
    lonely = [c for c in {c for r in records for c in r}
              if sum(block[x] == block[c] for x in {x for r in records for x in r}) == 1
              and sum(c in r for r in records) < k]
    assert set(lonely) <= set(res.suppressed)
