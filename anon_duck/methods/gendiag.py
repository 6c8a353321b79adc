"""GenDiag: k^m-anonymization of one cluster's code sets by set-generalization and
suppression (Appendix A of seed 000, an adaptation of CBA [45] that enforces k^m-anonymity).

Shared by ArtUC (seed 000, Steps 19, 20 and 25 of Algorithm 1) and the CBA baseline of the
disassociation method (seed 001). The function sees only integers:

* a cluster is a list of records, each a sequence of **code ids** (distinct per record);
* ``block[c]`` is the utility-constraint block of code id ``c`` (Definition 8: two codes may
  share a generalized code only if they lie in the same constraint's code set). Give every
  code the same block for plain CBA, where any two codes may be merged;
* code ids must be ranked like the code labels (id order = lexicographic label order):
  the tie-breaks below are "lexicographic" on ids.

A generalized code (token) is a set of codes read as "any non-empty subset of these codes";
a singleton token is the code itself. Within a cluster a token replaces its member codes in
every record (local recoding).

Resolutions of the pseudocode's gaps (spec rt_kkm §3.2; docs/artuc.md):

* Q holds the itemsets of 1..m codes that occur (support >= 1, A22) with support < k, sorted
  once by (-support, size, lexicographic) (A18); a popped itemset is canonicalized through
  earlier merges and suppressions (a code -> current token map) before use.
* Step 6 pairs u in p with a token u' present in the cluster, in u's block, u' != u; the
  pair minimizing UL(u ∪ u') = 2^|u ∪ u'| - 1 wins (unit token weights); ties: larger
  support of p after the merge, then lexicographic (u, u') (A19).
* Step 9 reads "records of C'" (A20); the suppressed token goes from every record of the
  cluster and adds |e| (codes, not occurrences) to s.

Records are bitsets (Python ints) per token: sup(p) is the popcount of the AND of p's
tokens' bitsets, and a merge is one OR, so "replace u and u' in all records" is O(1); a
code -> current-token map applies earlier merges and suppressions to the rest of Q.

References
----------
.. [1] Seed 000_c77b3add30ffea1b, Appendix A (GenDiag), Appendix B (complexity), Defs 5-6 (UL).
.. [2] Loukides, Liagouris, Gkoulalas-Divanis, Terrovitis. CBA, ref. [45] of [1].
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class GenDiagResult:
    """The anonymized cluster C' and the suppression count s of Algorithm GenDiag.

    ``tokens[t]`` is the sorted tuple of code ids of token ``t``; ``record_tokens[i]`` the
    token indexes of record ``i`` (sorted); ``record_suppressed[i]`` = s(r), the number of
    record ``i``'s original codes that were suppressed (Definition 6); ``s`` is GenDiag's
    output: the sum of |e| over suppressed tokens e (codes, counted once per cluster);
    ``suppressed`` lists the suppressed code ids."""

    tokens: tuple[tuple[int, ...], ...]
    record_tokens: tuple[tuple[int, ...], ...]
    record_suppressed: tuple[int, ...]
    s: int
    suppressed: tuple[int, ...]

    def record_ul(self) -> np.ndarray:
        """UL(r) of Definition 6 per record (unit token weights; UL(ũ) = 0 for a singleton, A11):
        sum of (2^|ũ| - 1) over the record's tokens of size >= 2, divided by 2^σ(r) - 1 where
        σ(r) = total size of the record's tokens (codes the record never had included, A14),
        plus s(r). The first term is 0 when σ(r) = 0 (A13)."""
        out = np.zeros(len(self.record_tokens))
        sizes = [len(t) for t in self.tokens]
        for i, toks in enumerate(self.record_tokens):
            sigma = sum(sizes[t] for t in toks)
            gen = sum((1 << sizes[t]) - 1 for t in toks if sizes[t] >= 2)
            out[i] = (gen / ((1 << sigma) - 1) if gen else 0.0) + self.record_suppressed[i]
        return out

    def ul(self) -> float:
        """UL(C) = sum of UL(r) over the cluster (Definition 6)."""
        return float(self.record_ul().sum())


def gendiag(records: Sequence[Sequence[int]], block: Sequence[int] | np.ndarray, k: int, m: int) -> GenDiagResult:
    """Algorithm GenDiag(C, U, k, m) of [1]_ Appendix A: returns C' (tokens per record) and s.

    ``records``: code ids per record (the cluster C); ``block``: block id per code id; ``k``,
    ``m``: the k^m guarantee inside the cluster. The cluster should hold >= k records (ArtUC
    guarantees it); with fewer, every itemset ends up suppressed."""
    if m < 1 or not records:
        return _no_change(records)
    state = _State(records, block)
    queue = _initial_q(records, k, m)                                         # Step 2
    for p_codes in queue:                                                     # Steps 3-4
        p = state.canonical(p_codes)
        while p and state.support(p) < k:                                     # Step 5
            pair = state.best_pair(p)                                         # Step 6
            if pair is not None:                                              # Steps 7-8
                p = state.merge(p, *pair)
                continue
            while p and state.support(p) < k:                                 # Steps 9-12
                e = min(p, key=lambda t: (state.bits[t].bit_count(), state.codes[t]))
                state.suppress(e)
                p = p - {e}
        # Step 14: p is frequent (or empty) and leaves Q
    return state.result()


def _no_change(records: Sequence[Sequence[int]]) -> GenDiagResult:
    codes = sorted({c for r in records for c in r})
    index = {c: i for i, c in enumerate(codes)}
    return GenDiagResult(tuple((c,) for c in codes), tuple(tuple(sorted(index[c] for c in r)) for r in records),
                         tuple(0 for _ in records), 0, ())


def _initial_q(records: Sequence[Sequence[int]], k: int, m: int) -> list[tuple[int, ...]]:
    """Step 2: itemsets of 1..m codes with 1 <= support < k, in the order of Step 4 (A18)."""
    counts: Counter[tuple[int, ...]] = Counter()
    for r in records:
        codes = sorted(r)
        for size in range(1, min(m, len(codes)) + 1):
            counts.update(itertools.combinations(codes, size))
    rare = [(p, n) for p, n in counts.items() if n < k]
    rare.sort(key=lambda pn: (-pn[1], len(pn[0]), pn[0]))
    return [p for p, _ in rare]


class _State:
    """C' as token bitsets, with a code -> token map for merges and suppressions (-1)."""

    def __init__(self, records: Sequence[Sequence[int]], block: Sequence[int] | np.ndarray) -> None:
        self.n = len(records)
        self.records = records
        self.bits: dict[int, int] = {}
        for i, r in enumerate(records):
            for c in r:
                self.bits[c] = self.bits.get(c, 0) | (1 << i)
        # token id -> its codes; initial tokens are the codes themselves (ids = code ids)
        self.codes: dict[int, tuple[int, ...]] = {c: (c,) for c in self.bits}
        self.block: dict[int, int] = {c: int(block[c]) for c in self.bits}
        self.present: dict[int, set[int]] = {}
        self.by_size: dict[int, dict[int, set[int]]] = {}   # block -> token size -> present tokens
        for c, b in self.block.items():
            self.present.setdefault(b, set()).add(c)
            self.by_size.setdefault(b, {}).setdefault(1, set()).add(c)
        self.rep: dict[int, int] = {c: c for c in self.bits}   # code -> its current token (-1: suppressed)
        self.original = frozenset(self.bits)
        self.s = 0
        self._next = max(self.bits, default=-1) + 1   # merged tokens get ids above every code id

    def canonical(self, itemset: Sequence[int]) -> frozenset[int]:
        """Step 4: an itemset of codes as its current tokens (merges applied, suppressed dropped)."""
        rep = self.rep
        return frozenset(t for t in (rep[c] for c in itemset) if t >= 0)

    def support(self, p: frozenset[int]) -> int:
        it = iter(p)
        acc = self.bits[next(it)]
        for t in it:
            acc &= self.bits[t]
        return acc.bit_count()

    def best_pair(self, p: frozenset[int]) -> tuple[int, int] | None:
        """Step 6: the pair (u in p, u' present in u's block) of minimum UL(u ∪ u') — i.e. of
        minimum |u| + |u'| with unit weights; ties: larger support of p after the merge, then
        lexicographic (u, u'). Only partners of the smallest size are scored."""
        best: tuple | None = None
        bits, codes = self.bits, self.codes
        everyone = (1 << self.n) - 1
        for u in p:
            partners = self.present.get(self.block[u], ())
            if len(partners) < 2:
                continue
            buckets = self.by_size[self.block[u]]
            smallest = min(z for z, toks in buckets.items() if toks and (len(toks) > 1 or u not in toks))
            size = len(codes[u]) + smallest
            if best is not None and size > best[0]:
                continue
            rest = everyone
            for t in p:
                if t != u:
                    rest &= bits[t]
            bu = bits[u]
            for v in buckets[smallest]:
                if v == u:
                    continue
                if v in p:                       # u' already in p: p loses it when merged
                    acc = everyone
                    for t in p:
                        if t != u and t != v:
                            acc &= bits[t]
                    sup = (acc & (bu | bits[v])).bit_count()
                else:
                    sup = (rest & (bu | bits[v])).bit_count()
                key = (size, -sup, codes[u], codes[v])
                if best is None or key < best[0:4]:
                    best = (*key, u, v)
        return None if best is None else (best[4], best[5])

    def merge(self, p: frozenset[int], u: int, v: int) -> frozenset[int]:
        """Step 8: ũ = u ∪ u' replaces u and u' in p, Q (via the code -> token map) and every record."""
        new = self._next
        self._next += 1
        self.codes[new] = tuple(sorted(self.codes[u] + self.codes[v]))
        self.bits[new] = self.bits[u] | self.bits[v]
        b = self.block[u]
        self.block[new] = b
        self.present[b] -= {u, v}
        self.present[b].add(new)
        sizes = self.by_size[b]
        sizes[len(self.codes[u])].discard(u)
        sizes[len(self.codes[v])].discard(v)
        sizes.setdefault(len(self.codes[new]), set()).add(new)
        for c in self.codes[new]:
            self.rep[c] = new
        return (p - {u, v}) | {new}

    def suppress(self, e: int) -> None:
        """Steps 11-12: delete token e from every record; s grows by its number of codes."""
        self.s += len(self.codes[e])
        self.present[self.block[e]].discard(e)
        self.by_size[self.block[e]][len(self.codes[e])].discard(e)
        for c in self.codes[e]:
            self.rep[c] = -1

    def result(self) -> GenDiagResult:
        alive = sorted((t for b in self.present.values() for t in b), key=lambda t: self.codes[t])
        index = {t: i for i, t in enumerate(alive)}
        per_record: list[list[int]] = [[] for _ in range(self.n)]
        for t in alive:
            bits, i = self.bits[t], 0
            while bits:
                low = bits & -bits
                i = low.bit_length() - 1
                per_record[i].append(index[t])
                bits ^= low
        suppressed_codes = {c for c in self.original if self.rep[c] < 0}
        rec_sup = tuple(sum(1 for c in r if c in suppressed_codes) for r in self.records)
        return GenDiagResult(tuple(self.codes[t] for t in alive), tuple(tuple(sorted(x)) for x in per_record),
                             rec_sup, self.s, tuple(sorted(suppressed_codes)))
