"""GenDiag (Appendix A of seed 000) on the toy clusters of spec rt_kkm §4.4 and Example 6.

Codes are ids ranked like their labels; blocks are Table 4's code sets (u2 fixed to 053.71, A15).
"""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from anon_duck.methods.gendiag import gendiag

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
def test_vector_paths_make_the_same_decisions(seed, monkeypatch):
    """Small clusters run Step 2 and Step 6 in Python, large ones with numpy (chunked Q tests,
    vector partner scores); forcing every numpy path gives the very same C' and s."""
    from anon_duck.methods import gendiag as module
    rng = np.random.default_rng(100 + seed)
    records, block = _random_cluster(rng, int(rng.integers(20, 90)), int(rng.integers(10, 150)), int(rng.integers(1, 4)))
    k, m = int(rng.integers(2, 8)), int(rng.integers(1, 4))
    python_paths = gendiag(records, block, k, m)
    monkeypatch.setattr(module, "_SMALL_Q", 0)
    monkeypatch.setattr(module, "_VECTOR_MIN", 1)
    monkeypatch.setattr(module, "_CHUNK", 4)
    assert gendiag(records, block, k, m) == python_paths


@pytest.mark.parametrize("seed", range(12))
def test_certain_suppressions_bound_ul(seed):
    """The floor that lets Step 20 skip partners never exceeds the suppressed occurrences."""
    from collections import Counter

    from anon_duck.methods.gendiag import certain_suppressions
    rng = np.random.default_rng(200 + seed)
    records, block = _random_cluster(rng, int(rng.integers(5, 40)), int(rng.integers(3, 40)), int(rng.integers(2, 12)))
    k = int(rng.integers(2, 6))
    res = gendiag(records, block, k, 2)
    floor = certain_suppressions(Counter(c for r in records for c in r), block, k)
    assert floor <= sum(res.record_suppressed) <= res.ul() + 1e-9
    lonely = [c for c in {c for r in records for c in r}
              if sum(block[x] == block[c] for x in {x for r in records for x in r}) == 1
              and sum(c in r for r in records) < k]
    assert set(lonely) <= set(res.suppressed)
