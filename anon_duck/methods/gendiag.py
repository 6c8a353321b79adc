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

* Q is counted with numpy (all 1..m-combinations of every record at once, one ``unique``).
* Support only grows: a merge ORs two tokens' record sets and a suppression drops a token from
  an itemset, so an itemset that is frequent (or empty) once stays so. Q is therefore checked
  in chunks, in Q's order, with one vector expression (AND of packed record bitsets, popcount);
  the frequent ones are passed exactly as Step 4 would pass them (they change nothing), and
  only the others are re-checked and processed one by one in Q's order.
* Step 6 scores all partners u' of one size in one vector expression over the packed bitsets
  when there are many of them; a handful are scored with Python integers.

Records are bitsets per token, both as Python ints (single itemsets) and as packed uint64 rows
(vector scans): sup(p) is the popcount of the AND of p's tokens' bitsets, and a merge is one OR.

References
----------
.. [1] Seed 000_c77b3add30ffea1b, Appendix A (GenDiag), Appendix B (complexity), Defs 5-6 (UL).
.. [2] Loukides, Liagouris, Gkoulalas-Divanis, Terrovitis. CBA, ref. [45] of [1].
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

import numpy as np

_CHUNK = 64            # Q items checked per vector expression (doubled over frequent runs)
_VECTOR_MIN = 24       # Step 6 scores partners with numpy from this many candidates on
_SMALL_Q = 2048        # Q of a cluster with fewer (record, itemset) pairs is counted in Python


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
        plus s(r). The first term is 0 when σ(r) = 0 (A13). Exact integer arithmetic: token
        sizes reach the hundreds on EHRD-sized clusters, beyond float range."""
        out = np.zeros(len(self.record_tokens))
        sizes = [len(t) for t in self.tokens]
        weight = [(1 << z) - 1 if z >= 2 else 0 for z in sizes]
        for i, toks in enumerate(self.record_tokens):
            gen = sum(weight[t] for t in toks)
            if gen:
                out[i] = gen / ((1 << sum(sizes[t] for t in toks)) - 1)
        return out + np.asarray(self.record_suppressed, dtype=float)

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
    state = _State(cluster)
    for p_codes in _pending(state, _initial_q(cluster, k, m), k):              # Steps 2-4
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


def certain_suppressions(support: Mapping[int, int], block: Sequence[int] | np.ndarray, k: int) -> int:
    """A lower bound of the suppressed code occurrences of GenDiag on a cluster whose codes
    have the given supports (code id -> records holding it), hence of its UL (Definition 6:
    UL(r) >= s(r)). A code that is the only code of its block in the cluster and is held by
    fewer than k records is suppressed for certain: its token can never merge (Step 6 finds no
    partner in its block), every itemset holding it has support < k, so Steps 9-12 must delete
    it; each record holding it loses it."""
    blocks = Counter(int(block[c]) for c in support)
    return sum(n for c, n in support.items() if n < k and blocks[int(block[c])] == 1)


class _Cluster:
    """The cluster with local code ids 0..γ-1 (ranked like the code ids, so lexicographic
    tie-breaks are unchanged) and its records as flat arrays, codes ascending per record."""

    def __init__(self, records: Sequence[Sequence[int]], block: Sequence[int] | np.ndarray) -> None:
        self.n = len(records)
        lengths = np.fromiter((len(r) for r in records), dtype=np.int64, count=self.n)
        if lengths.sum() <= _SMALL_Q // 4:          # a small cluster: Python is cheaper than numpy's setup
            rows = [r.tolist() if isinstance(r, np.ndarray) else list(r) for r in records]
            codes = sorted({c for r in rows for c in r})
            index = {c: i for i, c in enumerate(codes)}
            rows = [sorted(index[c] for c in r) for r in rows]
            self.codes = np.array(codes, dtype=np.int64)
            self.local = np.array([c for r in rows for c in r], dtype=np.int64)
            self.owner = np.repeat(np.arange(self.n, dtype=np.int64), lengths)
        else:
            flat = np.concatenate([np.asarray(r, dtype=np.int64) for r in records])
            owner = np.repeat(np.arange(self.n, dtype=np.int64), lengths)
            self.codes, local = np.unique(flat, return_inverse=True)   # local id -> code id
            order = np.lexsort((local, owner))                          # per record, codes ascending
            self.local = local.ravel()[order].astype(np.int64)
            self.owner = owner[order]
        self.start = np.concatenate([[0], np.cumsum(lengths)])
        self.lengths = lengths
        self.gamma = int(self.codes.size)
        self.block = np.asarray(block)[self.codes].astype(np.int64) if self.gamma else np.zeros(0, np.int64)
        self.words = max(1, -(-self.n // 64))
        self.avg_len = float(lengths.mean()) if self.n else 0.0

    def unchanged(self) -> GenDiagResult:
        tokens = tuple((int(c),) for c in self.codes)
        rec = tuple(tuple(int(x) for x in self.local[self.start[i]:self.start[i + 1]]) for i in range(self.n))
        return GenDiagResult(tokens, rec, (0,) * self.n, 0, ())


def _initial_q(cl: _Cluster, k: int, m: int) -> np.ndarray:
    """Step 2: itemsets of 1..m codes with 1 <= support < k, in the order of Step 4 (A18):
    (-support, size, lexicographic). Rows of local code ids, padded with γ (no code)."""
    gamma = cl.gamma
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


def _pending(state: "_State", queue: np.ndarray, k: int) -> Iterator[tuple[int, ...]]:
    """Step 4 in Q's order, without the itemsets that are frequent (or empty) when popped:
    a chunk of Q is tested at once against the current C' (support never decreases, so a
    frequent itemset stays frequent), and the rest is yielded one by one for Step 5."""
    gamma = state.gamma
    if queue.shape[0] <= _SMALL_Q // 4:          # a small Q: Step 5 tests each itemset anyway
        for row in queue.tolist():
            yield tuple(c for c in row if c != gamma)
        return
    lo, size = 0, _CHUNK
    while lo < queue.shape[0]:
        chunk = queue[lo:lo + size]
        lo += size
        state.sync()
        toks = state.rep_rows[chunk]                       # suppressed codes and padding -> the ONES row
        acc = state.rows[toks[:, 0]]
        for j in range(1, toks.shape[1]):
            acc = acc & state.rows[toks[:, j]]
        sup = np.bitwise_count(acc).sum(axis=1, dtype=np.int64)
        open_ = np.flatnonzero((sup < k) & (toks != gamma).any(axis=1))
        # long frequent runs (late in Q) take bigger chunks; where Step 5 works, small ones
        # keep the test close to the current C'
        size = _CHUNK if open_.size else min(2 * size, 64 * _CHUNK)
        rows = chunk[open_].tolist()
        for row in rows:
            yield tuple(c for c in row if c != gamma)


class _State:
    """C' as token bitsets, with a code -> token map for merges and suppressions (-1).

    Token ids: 0..γ-1 are the codes themselves, γ is the all-records row (padding and
    suppressed codes point to it in ``rep_rows``), merged tokens take γ+1, γ+2, ..."""

    def __init__(self, cl: _Cluster) -> None:
        self.cl = cl
        self.n, self.gamma = cl.n, cl.gamma
        g = self.gamma
        self.everyone = (1 << self.n) - 1
        bits = [0] * g
        for i, c in zip(cl.owner.tolist(), cl.local.tolist()):
            bits[c] |= 1 << i
        self.bits: list[int] = bits + [self.everyone]
        self.codes: list[list[int]] = [[c] for c in range(g)] + [[]]
        self.block: list[int] = cl.block.tolist() + [-1]
        self.size: list[int] = [1] * g + [0]
        self.by_size: dict[int, dict[int, set[int]]] = {}   # block -> token size -> present tokens
        for c, b in enumerate(self.block[:g]):
            self.by_size.setdefault(b, {}).setdefault(1, set()).add(c)
        self._block_codes: dict[int, np.ndarray] | None = None
        self.single = np.ones(g, dtype=bool)                 # codes that are still a singleton token
        self.rep: list[int] = list(range(g))                 # code -> its current token (-1: suppressed)
        self.s = 0
        # the same state as arrays for the vector scans, built on the first scan (small
        # clusters never need them) and then kept up to date by sync()
        self.rows: np.ndarray | None = None                  # token -> packed record bitset
        self.tsup: np.ndarray | None = None                  # token -> support
        self.rep_rows: np.ndarray | None = None              # code -> token (γ: none, or padding)
        self._new_tokens: list[int] = []                     # tokens not yet in rows / tsup
        self._moved: list[list[int]] = []                    # codes whose rep_rows entry is stale

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
        options = []                       # (|u| + smallest partner size, u, smallest)
        for u in p:
            sizes = [z for z, toks in self.by_size[self.block[u]].items() if len(toks) > 1 or u not in toks]
            if sizes:
                options.append((self.size[u] + min(sizes), u, min(sizes)))
        for size, u, smallest in sorted(options):     # the smallest UL(u ∪ u') first: the rest can only tie
            if best is not None and size > best[0]:
                break
            buckets = self.by_size[self.block[u]]
            rest = self.everyone
            for t in p:
                if t != u:
                    rest &= bits[t]
            bu = bits[u]
            bucket = buckets[smallest]
            inside = [v for v in p if v != u and v in bucket]   # u' already in p: p loses it when merged
            for v in inside:
                acc = self.everyone
                for t in p:
                    if t != u and t != v:
                        acc &= bits[t]
                key = (size, -(acc & (bu | bits[v])).bit_count(), codes[u], codes[v])
                if best is None or key < best[0:4]:
                    best = (*key, u, v)
            for sup, v in self._score(u, bu, rest, smallest, bucket, p):
                key = (size, -sup, codes[u], codes[v])
                if best is None or key < best[0:4]:
                    best = (*key, u, v)
        return None if best is None else (best[4], best[5])

    def _score(self, u: int, bu: int, rest: int, smallest: int, bucket: set[int],
               p: frozenset[int]) -> list[tuple[int, int]]:
        """The best partner u' ∉ p of u among ``bucket``: (sup of p after the merge, u'), the
        largest support, ties to the lexicographically smallest u' (Step 6); [] if none."""
        codes = self.codes
        if len(bucket) < _VECTOR_MIN:
            bits = self.bits
            scored = [((rest & (bu | bits[v])).bit_count(), v) for v in bucket if v != u and v not in p]
            if not scored:
                return []
            top = max(s for s, _ in scored)
            return [(top, min((v for s, v in scored if s == top), key=codes.__getitem__))]
        if smallest == 1:
            cand = self.block_codes()[self.block[u]]
            cand = cand[self.single[cand]]
        else:
            cand = np.sort(np.fromiter(bucket, dtype=np.int64, count=len(bucket)))
        keep = cand != u
        for t in p:
            keep &= cand != t
        cand = cand[keep]
        if not cand.size:
            return []
        self.sync()
        if rest == self.everyone:
            # p = {u}: sup(u ∪ u') = sup(u) + sup(u') - |u ∩ u'|, the overlap counted on u's < k records
            sup = bu.bit_count() + self.tsup[cand] - self._token_counts(bu, smallest > 1)[cand]
        else:
            gain_on = rest & ~bu                 # records of p without u: what a partner can add
            if gain_on.bit_count() * self.cl.avg_len < cand.size * self.cl.words:
                sup = (rest & bu).bit_count() + self._token_counts(gain_on, smallest > 1)[cand]
            else:
                sup = np.bitwise_count((self.rows[cand] | self.rows[u]) & self._row(rest)).sum(axis=1, dtype=np.int64)
        top = sup.max()
        if smallest == 1:            # singletons, ascending: the first maximum is the smallest code
            return [(int(top), int(cand[int(np.argmax(sup))]))]
        return [(int(top), min(cand[sup == top].tolist(), key=codes.__getitem__))]

    def block_codes(self) -> dict[int, np.ndarray]:
        """Block -> its codes (local ids, ascending); built on the first vector scan."""
        if self._block_codes is None:
            block = self.cl.block
            order = np.argsort(block, kind="stable")
            cuts = np.flatnonzero(np.diff(block[order])) + 1
            self._block_codes = {int(block[part[0]]): part for part in np.split(order, cuts)}
        return self._block_codes

    def _token_counts(self, records: int, dedupe: bool) -> np.ndarray:
        """Per token id, the number of the given records (a bitset) that hold it."""
        cl = self.cl
        recs = np.flatnonzero(np.unpackbits(self._row(records).view(np.uint8), bitorder="little"))
        lengths = cl.lengths[recs]
        at = np.repeat(cl.start[recs] - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        toks = self.rep_rows[cl.local[at]]
        if dedupe:                                   # a record holds a merged token once
            toks = np.unique(np.repeat(recs, lengths) * (self.gamma + 1) * 2 + toks) % ((self.gamma + 1) * 2)
        return np.bincount(toks, minlength=self.rows.shape[0])

    def _row(self, bits: int) -> np.ndarray:
        return np.frombuffer(bits.to_bytes(self.cl.words * 8, "little"), dtype=np.uint64)

    def _drop(self, t: int) -> None:
        sizes = self.by_size[self.block[t]]
        sizes[self.size[t]].discard(t)
        if not sizes[self.size[t]]:
            del sizes[self.size[t]]
        if self.size[t] == 1:
            self.single[t] = False

    def merge(self, p: frozenset[int], u: int, v: int) -> frozenset[int]:
        """Step 8: ũ = u ∪ u' replaces u and u' in p, Q (via the code -> token map) and every record."""
        new = len(self.codes)
        self._drop(u)
        self._drop(v)
        merged = sorted(self.codes[u] + self.codes[v])
        self.codes.append(merged)
        self.bits.append(self.bits[u] | self.bits[v])
        if self.rows is not None:
            self._new_tokens.append(new)
        self.block.append(self.block[u])
        self.size.append(len(merged))
        self.by_size[self.block[u]].setdefault(len(merged), set()).add(new)
        for c in merged:
            self.rep[c] = new
        if self.rows is not None:
            self._moved.append(merged)
        return (p - {u, v}) | {new}

    def suppress(self, e: int) -> None:
        """Steps 11-12: delete token e from every record; s grows by its number of codes."""
        self.s += self.size[e]
        self._drop(e)
        for c in self.codes[e]:
            self.rep[c] = -1
        if self.rows is not None:
            self._moved.append(self.codes[e])

    def sync(self) -> None:
        """Bring the arrays of the vector scans (rows, tsup, rep_rows) up to date with the
        Python state; merges and suppressions only touch the latter, since most of them
        happen between two scans."""
        g = self.gamma
        if self.rows is None:
            self.rows = np.zeros((2 * g + 1, self.cl.words), dtype=np.uint64)
            self.tsup = np.zeros(2 * g + 1, dtype=np.int64)
            self._new_tokens = list(range(len(self.bits)))
            self.rep_rows = np.full(g + 1, g, dtype=np.int64)
            self._moved = [list(range(g))]
        if self._new_tokens:
            new = self._new_tokens
            words = self.cl.words * 8
            packed = np.frombuffer(b"".join(self.bits[t].to_bytes(words, "little") for t in new), dtype=np.uint64)
            self.rows[new] = packed.reshape(len(new), -1)
            self.tsup[new] = np.bitwise_count(self.rows[new]).sum(axis=1)
            self._new_tokens = []
        if self._moved:
            codes = list({c for moved in self._moved for c in moved})
            rep = self.rep
            self.rep_rows[codes] = [rep[c] if rep[c] >= 0 else g for c in codes]
            self._moved = []

    def result(self) -> GenDiagResult:
        cl = self.cl
        alive = sorted((t for sizes in self.by_size.values() for toks in sizes.values() for t in toks),
                       key=lambda t: self.codes[t])
        tokens = tuple(tuple(int(c) for c in cl.codes[self.codes[t]]) for t in alive)
        per_record: list[list[int]] = [[] for _ in range(self.n)]
        for index, t in enumerate(alive):              # in token order, so each list comes out sorted
            bits = self.bits[t]
            while bits:
                low = bits & -bits
                per_record[low.bit_length() - 1].append(index)
                bits ^= low
        gone = np.array([r < 0 for r in self.rep], dtype=bool)
        rec_sup = np.bincount(cl.owner[gone[cl.local]], minlength=self.n) if cl.local.size else np.zeros(self.n, int)
        return GenDiagResult(tokens, tuple(tuple(x) for x in per_record), tuple(int(x) for x in rec_sup), self.s,
                             tuple(int(c) for c in cl.codes[gone]))
