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

Why it is fast enough for EHRD-sized clusters (thousands of records, ~10^5 itemsets in Q),
without changing a single decision of the pseudocode:

* Q (Step 2) is counted compiled for m <= 2 (an inverted index, no sort) and with numpy for
  larger m (all 1..m-combinations of every record at once, one ``unique``).
* Steps 3-14, a chain of up to ~10^5 merges each depending on the previous one, run compiled
  (:mod:`anon_duck.methods.gendiag.kernel`, numba) over packed record bitsets per token:
  sup(p) is the popcount of the AND of p's tokens' bitsets, and a merge is one OR. Step 6
  visits singleton candidates by support and stops at an exact bound.
* The result keeps arrays and makes its tuples on first use: ArtUC's Step 20 needs only the
  UL of most unions it scores.

References
----------
.. [1] Seed 000_c77b3add30ffea1b, Appendix A (GenDiag), Appendix B (complexity), Defs 5-6 (UL).
.. [2] Loukides, Liagouris, Gkoulalas-Divanis, Terrovitis. CBA, ref. [45] of [1].
"""
from __future__ import annotations

import itertools
from collections import Counter
from typing import Sequence

import numpy as np

from . import kernel as _kernel

_SMALL_Q = 2048        # m >= 3: Q of a cluster with fewer (record, itemset) pairs is counted in Python


class GenDiagResult:
    """The anonymized cluster C' and the suppression count s of Algorithm GenDiag.

    ``tokens[t]`` is the sorted tuple of code ids of token ``t``; ``record_tokens[i]`` the
    token indexes of record ``i`` (sorted); ``record_suppressed[i]`` = s(r), the number of
    record ``i``'s original codes that were suppressed (Definition 6); ``s`` is GenDiag's
    output: the sum of |e| over suppressed tokens e (codes, counted once per cluster);
    ``suppressed`` lists the suppressed code ids.

    :func:`gendiag` builds it from arrays and makes those tuples on first use: Step 20 of ArtUC
    scores most of the unions it tries by their UL alone, which the arrays give directly.
    Equal results compare equal however they were built."""

    def __init__(self, tokens: Sequence[Sequence[int]], record_tokens: Sequence[Sequence[int]],
                 record_suppressed: Sequence[int], s: int, suppressed: Sequence[int]) -> None:
        self._tokens: tuple[tuple[int, ...], ...] | None = tuple(tuple(t) for t in tokens)
        self._record_tokens: tuple[tuple[int, ...], ...] | None = tuple(tuple(r) for r in record_tokens)
        lengths = np.fromiter(map(len, self._record_tokens), dtype=np.int64, count=len(self._record_tokens))
        self._sizes = np.fromiter(map(len, self._tokens), dtype=np.int64, count=len(self._tokens))
        self._flat = np.fromiter(itertools.chain.from_iterable(self._record_tokens), dtype=np.int64,
                                 count=int(lengths.sum()))
        self._bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self._codes = np.fromiter(itertools.chain.from_iterable(self._tokens), dtype=np.int64,
                                  count=int(self._sizes.sum()))
        self._rec_sup = np.asarray(record_suppressed, dtype=np.int64)
        self.s = int(s)
        self._suppressed = np.asarray(suppressed, dtype=np.int64)

    @classmethod
    def _of_arrays(cls, sizes: np.ndarray, codes: np.ndarray, flat: np.ndarray, bounds: np.ndarray,
                   rec_sup: np.ndarray, s: int, suppressed: np.ndarray) -> "GenDiagResult":
        """``codes``: the tokens' code ids, token after token (``sizes`` each); ``flat[bounds[i]:
        bounds[i+1]]``: the token positions of record i."""
        self = cls.__new__(cls)
        self._tokens = self._record_tokens = None
        self._sizes, self._codes, self._flat, self._bounds = sizes, codes, flat, bounds
        self._rec_sup, self.s, self._suppressed = rec_sup, int(s), suppressed
        return self

    @property
    def tokens(self) -> tuple[tuple[int, ...], ...]:
        if self._tokens is None:
            codes, cuts = self._codes.tolist(), np.concatenate([[0], np.cumsum(self._sizes)]).tolist()
            self._tokens = tuple(tuple(codes[cuts[t]:cuts[t + 1]]) for t in range(self._sizes.size))
        return self._tokens

    @property
    def record_tokens(self) -> tuple[tuple[int, ...], ...]:
        if self._record_tokens is None:
            flat, b = self._flat.tolist(), self._bounds.tolist()
            self._record_tokens = tuple(tuple(flat[b[i]:b[i + 1]]) for i in range(len(b) - 1))
        return self._record_tokens

    @property
    def token_sizes(self) -> np.ndarray:
        """|ũ| of each token of C', in token order."""
        return self._sizes

    @property
    def token_codes(self) -> np.ndarray:
        """The tokens' code ids, token after token (``token_sizes`` each), ascending within one."""
        return self._codes

    @property
    def held(self) -> tuple[np.ndarray, np.ndarray]:
        """``record_tokens`` as arrays: ``flat[bounds[i]:bounds[i+1]]`` are record i's tokens."""
        return self._flat, self._bounds

    @property
    def record_suppressed(self) -> tuple[int, ...]:
        return tuple(self._rec_sup.tolist())

    @property
    def suppressed(self) -> tuple[int, ...]:
        return tuple(self._suppressed.tolist())

    def _key(self) -> tuple:
        return self.tokens, self.record_tokens, self.record_suppressed, self.s, self.suppressed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GenDiagResult) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"GenDiagResult(tokens={self.tokens!r}, record_tokens={self.record_tokens!r}, "
                f"record_suppressed={self.record_suppressed!r}, s={self.s!r}, suppressed={self.suppressed!r})")

    def record_ul(self) -> np.ndarray:
        """UL(r) of Definition 6 per record (unit token weights; UL(ũ) = 0 for a singleton, A11):
        sum of (2^|ũ| - 1) over the record's tokens of size >= 2, divided by 2^σ(r) - 1 where
        σ(r) = total size of the record's tokens (codes the record never had included, A14),
        plus s(r). The first term is 0 when σ(r) = 0 (A13).

        Every value is the correctly rounded quotient of the exact integers, as Python's
        ``int / int`` gives it: token sizes reach the hundreds on EHRD-sized clusters (σ(r) in
        the thousands), beyond float range, and Step 20 compares ULs for ties. numpy computes
        the records whose integers are exact in float64 (σ(r) <= 53) and those whose quotient
        is provably below half the smallest subnormal (0.0); Python divides the rest."""
        n = self._bounds.size - 1
        out = np.zeros(n)
        lengths = np.diff(self._bounds)
        if self._flat.size:
            sizes = self._sizes
            z = sizes[self._flat]
            held = np.flatnonzero(lengths)
            at = self._bounds[:-1][held]
            sigma = np.zeros(n, dtype=np.int64)
            sigma[held] = np.add.reduceat(z, at)
            zmax = np.zeros(n, dtype=np.int64)
            zmax[held] = np.maximum.reduceat(z, at)
            gen = zmax >= 2
            exact = np.flatnonzero(gen & (sigma <= 53))
            if exact.size:
                weight = np.where(z >= 2, (np.int64(1) << np.minimum(z, 62)) - 1, 0)
                total = np.zeros(n, dtype=np.int64)
                total[held] = np.add.reduceat(np.where(z <= 53, weight, 0), at)
                out[exact] = total[exact].astype(float) / (np.exp2(sigma[exact].astype(float)) - 1.0)
            # gen(r) < ntok * 2^zmax, so gen(r) / (2^σ - 1) < 2^(zmax + bitlen(ntok) + 1 - σ)
            bits = np.floor(np.log2(np.maximum(lengths, 1))).astype(np.int64) + 1
            rest = np.flatnonzero(gen & (sigma > 53) & (sigma < zmax + bits + 1076))
            if rest.size:
                w = [(1 << int(x)) - 1 if x >= 2 else 0 for x in sizes.tolist()]
                flat, b, sig = self._flat.tolist(), self._bounds.tolist(), sigma.tolist()
                for i in rest.tolist():
                    out[i] = sum(map(w.__getitem__, flat[b[i]:b[i + 1]])) / ((1 << sig[i]) - 1)
        return out + self._rec_sup

    def ul(self) -> float:
        """UL(C) = sum of UL(r) over the cluster (Definition 6)."""
        return float(self.record_ul().sum())


def gendiag(records: Sequence[Sequence[int]], block: Sequence[int] | np.ndarray, k: int, m: int) -> GenDiagResult:
    """Algorithm GenDiag(C, U, k, m) of [1]_ Appendix A: returns C' (tokens per record) and s.

    ``records``: code ids per record (the cluster C); ``block``: block id per code id; ``k``,
    ``m``: the k^m guarantee inside the cluster. The cluster should hold >= k records (ArtUC
    guarantees it); with fewer, every itemset ends up suppressed."""
    cluster = _Cluster(records, block)
    if m < 1 or not records:
        return cluster.unchanged()
    queue = _initial_q(cluster, k, m)                                          # Step 2
    rep, s = _kernel.steps_3_to_14(cluster.n, cluster.local, cluster.start, cluster.block, queue, k)
    return _result(cluster, rep, int(s))


def certain_suppressions(support: np.ndarray, block: np.ndarray, k: int) -> int:
    """A lower bound of the suppressed code occurrences of GenDiag on a cluster whose codes
    have the given supports (``support[c]``: records holding code id c, 0 when absent), hence
    of its UL (Definition 6: UL(r) >= s(r)). A code that is the only code of its block in the
    cluster and is held by fewer than k records is suppressed for certain: its token can never
    merge (Step 6 finds no partner in its block), every itemset holding it has support < k, so
    Steps 9-12 must delete it; each record holding it loses it."""
    present = support > 0
    per_block = np.bincount(block[present], minlength=int(block.max()) + 1 if block.size else 0)
    return int(support[present & (support < k) & (per_block[block] == 1)].sum())


class _Cluster:
    """The cluster with local code ids 0..γ-1 (ranked like the code ids, so lexicographic
    tie-breaks are unchanged) and its records as flat arrays, codes ascending per record."""

    def __init__(self, records: Sequence[Sequence[int]], block: Sequence[int] | np.ndarray) -> None:
        self.n = len(records)
        lengths = np.fromiter(map(len, records), dtype=np.int64, count=self.n)
        flat = np.concatenate([np.asarray(r, dtype=np.int64) for r in records]) if self.n else np.zeros(0, np.int64)
        start = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.codes, self.local = _kernel.localize(flat, start)       # local id -> code id
        self.owner = np.repeat(np.arange(self.n, dtype=np.int64), lengths)
        self.start = start
        self.lengths = lengths
        self.gamma = int(self.codes.size)
        # dense block ids 0..B-1 (only equality of blocks matters)
        self.block = np.unique(np.asarray(block)[self.codes], return_inverse=True)[1].astype(np.int64).ravel()

    def unchanged(self) -> GenDiagResult:
        tokens = tuple((int(c),) for c in self.codes)
        rec = tuple(tuple(int(x) for x in self.local[self.start[i]:self.start[i + 1]]) for i in range(self.n))
        return GenDiagResult(tokens, rec, (0,) * self.n, 0, ())


def _initial_q(cl: _Cluster, k: int, m: int) -> np.ndarray:
    """Step 2: itemsets of 1..m codes with 1 <= support < k, in the order of Step 4 (A18):
    (-support, size, lexicographic). Rows of local code ids, padded with γ (no code)."""
    gamma = cl.gamma
    if m <= 2:
        return _kernel.initial_q(cl.n, cl.local, cl.start, gamma, k, m)
    if int((cl.lengths ** min(m, 2)).sum()) <= _SMALL_Q:
        return _initial_q_small(cl, k, m)
    parts, sups, sizes, keys = [], [], [], []
    end = cl.start[1:][cl.owner]                       # end of each code occurrence's record
    at = np.arange(cl.local.size, dtype=np.int64)[:, None]   # positions of the 1-subsets
    for size in range(1, m + 1):
        if size > 1:
            at = _extend(at, end)
        items = cl.local[at]
        if not items.shape[0]:
            continue
        if gamma ** size < 2 ** 62:
            key = np.zeros(items.shape[0], dtype=np.int64)
            for j in range(size):
                key = key * gamma + items[:, j]
            uniq, first, count = np.unique(key, return_index=True, return_counts=True)
            rows, rank = items[first], uniq
        else:
            rows, count = np.unique(items, axis=0, return_counts=True)
            rank = np.arange(rows.shape[0], dtype=np.int64)      # rows come out lexicographically sorted
        rare = count < k
        padded = np.full((int(rare.sum()), m), gamma, dtype=np.int64)
        padded[:, :size] = rows[rare]
        parts.append(padded)
        sups.append(count[rare])
        sizes.append(np.full(padded.shape[0], size))
        keys.append(rank[rare])
    if not parts:
        return np.zeros((0, m), dtype=np.int64)
    sup, size, key = np.concatenate(sups), np.concatenate(sizes), np.concatenate(keys)
    return np.concatenate(parts)[np.lexsort((key, size, -sup))]


def _initial_q_small(cl: _Cluster, k: int, m: int) -> np.ndarray:
    """Step 2 as in :func:`_initial_q`, counted with Python for a small cluster (cheaper than
    numpy's fixed costs there)."""
    counts: Counter[tuple[int, ...]] = Counter()
    local = cl.local.tolist()
    for i in range(cl.n):
        codes = local[cl.start[i]:cl.start[i + 1]]
        for size in range(1, min(m, len(codes)) + 1):
            counts.update(itertools.combinations(codes, size))
    rare = sorted(((p, n) for p, n in counts.items() if n < k), key=lambda pn: (-pn[1], len(pn[0]), pn[0]))
    return np.array([p + (cl.gamma,) * (m - len(p)) for p, _ in rare], dtype=np.int64).reshape(-1, m)


def _extend(at: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The (size+1)-subsets of every record from its size-subsets ``at`` (rows of positions in
    the flat code array, ascending): each row extended by every later position of its record."""
    last = at[:, -1]
    more = end[last] - last - 1
    rows = np.repeat(at, more, axis=0)
    offset = np.arange(rows.shape[0]) - np.repeat(np.cumsum(more) - more, more)
    return np.concatenate([rows, (np.repeat(last, more) + 1 + offset)[:, None]], axis=1)


def _result(cl: _Cluster, rep: np.ndarray, s: int) -> GenDiagResult:
    """C' from the kernel's code -> token map: a token is the set of codes mapped to it (tokens
    are disjoint, so ordering them by their smallest code is the lexicographic order); a record
    holds the tokens of its remaining codes."""
    kept = np.flatnonzero(rep >= 0)                                   # local ids, ascending
    ids, first, sizes = np.unique(rep[kept], return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")                          # tokens by their smallest code
    index = np.full(2 * cl.gamma + 1, -1, dtype=np.int64)             # token id -> position in C'
    index[ids[order]] = np.arange(ids.size)
    position = index[rep[kept]]
    codes = cl.codes[kept[np.lexsort((kept, position))]]             # token after token, ascending
    held = rep[cl.local] >= 0
    pos = index[rep[cl.local[held]]]
    per_record = np.unique(cl.owner[held] * (ids.size + 1) + pos)     # (record, token) pairs, sorted
    owner, flat = np.divmod(per_record, ids.size + 1)
    bounds = np.searchsorted(owner, np.arange(cl.n + 1)).astype(np.int64)
    rec_sup = np.bincount(cl.owner[~held], minlength=cl.n).astype(np.int64)
    return GenDiagResult._of_arrays(sizes[order].astype(np.int64), codes, flat.astype(np.int64), bounds,
                                    rec_sup, s, cl.codes[rep < 0])
