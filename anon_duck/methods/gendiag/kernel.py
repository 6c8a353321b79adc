"""GenDiag's Steps 3-14 (Appendix A of seed 000) compiled with numba: the chain of dependent
merges and suppressions of one cluster, over packed record bitsets.

Why compiled: on EHRD-sized clusters (thousands of records, ~10^5 itemsets in Q) the chain has
hundreds of thousands of steps, each depending on the previous one, so it cannot be vectorized;
interpreted, every step costs tens of microseconds of fixed overhead, compiled about one.

Token ids: 0..γ-1 are the codes themselves (local ids, ranked like the code labels), merged
tokens take γ+1, γ+2, ... Tokens are disjoint sets of codes, so the lexicographic order of two
tokens is the order of their smallest codes (``tmin``). Every decision follows
:mod:`anon_duck.methods.gendiag` (resolutions A18-A20 of the spec digest).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_S1 = np.uint64(1)
_S2 = np.uint64(2)
_S4 = np.uint64(4)
_S56 = np.uint64(56)


@njit(cache=True, nogil=True, inline="always")
def _popcount(x: np.uint64) -> int:
    x = x - ((x >> _S1) & _M1)
    x = (x & _M2) + ((x >> _S2) & _M2)
    x = (x + (x >> _S4)) & _M4
    return int((x * _H01) >> _S56)


@njit(cache=True, nogil=True, inline="always")
def _lowest_bit(x: np.uint64) -> int:
    """Index of the lowest set bit of a non-zero word (a bitset is read by taking it, then
    clearing it with ``x & (x - 1)``)."""
    return _popcount((x & (~x + _ONE)) - _ONE)


@njit(cache=True, nogil=True)
def _count(bits: np.ndarray) -> int:
    total = 0
    for w in range(bits.size):
        total += _popcount(bits[w])
    return total


@njit(cache=True, nogil=True)
def _and_of(rows: np.ndarray, everyone: np.ndarray, p: np.ndarray, n_p: int, skip1: int, skip2: int,
            out: np.ndarray) -> None:
    """out = AND of the record bitsets of p's tokens other than skip1 and skip2 (``everyone``
    when none is left)."""
    out[:] = everyone
    for j in range(n_p):
        t = p[j]
        if t != skip1 and t != skip2:
            for w in range(out.size):
                out[w] &= rows[t, w]


@njit(cache=True, nogil=True)
def _reaches(rows: np.ndarray, tsup: np.ndarray, p: np.ndarray, n_p: int, k: int) -> bool:
    """sup(p) >= k (Step 5's test). A single token's support is kept in ``tsup``; for more,
    the AND is popcounted word by word and stops as soon as k records are found, which on
    large clusters is after a word or two for the many itemsets that are already supported."""
    if n_p == 1:
        return tsup[p[0]] >= k
    total = 0
    for w in range(rows.shape[1]):
        x = rows[p[0], w]
        for j in range(1, n_p):
            x &= rows[p[j], w]
        total += _popcount(x)
        if total >= k:
            return True
    return False


@njit(cache=True, nogil=True, inline="always")
def _leave_block(t: int, b: int, tsize: np.ndarray, bsingle: np.ndarray, salive: np.ndarray, btok: np.ndarray,
                 slot: np.ndarray, boff: np.ndarray, blen: np.ndarray) -> None:
    """Token t (merged or suppressed) is no longer present in block b: the last present token
    takes its slot, and a singleton leaves the by-support candidates."""
    if tsize[t] == 1:
        bsingle[b] -= 1
        salive[t] = False
    last = btok[boff[b] + blen[b] - 1]
    btok[slot[t]] = last
    slot[last] = slot[t]
    blen[b] -= 1


@njit(cache=True, nogil=True, inline="always")
def _holds(p: np.ndarray, n_p: int, t: int) -> bool:
    for j in range(n_p):
        if p[j] == t:
            return True
    return False


@njit(cache=True, nogil=True, inline="always")
def _beats(sup: int, tu: int, tv: int, best_sup: int, best_tu: int, best_tv: int) -> bool:
    """Step 6's order on pairs (A19): larger sup(p) after the merge, then the lexicographically
    smaller u, then u' (tokens are disjoint: their smallest codes order them)."""
    return sup > best_sup or (sup == best_sup and (tu < best_tu or (tu == best_tu and tv < best_tv)))


@njit(cache=True, nogil=True)
def _token_counts(recs: np.ndarray, local: np.ndarray, start: np.ndarray, rep: np.ndarray, cnt: np.ndarray,
                  seen: np.ndarray, touched: np.ndarray) -> int:
    """cnt[t] += number of the records in bitset ``recs`` holding token t (a merged token once
    per record); returns how many entries of ``touched`` list the tokens counted."""
    n_touched = 0
    for w in range(recs.size):
        word = recs[w]
        while word != _ZERO:
            i = w * 64 + _lowest_bit(word)
            word &= word - _ONE
            for at in range(start[i], start[i + 1]):
                t = rep[local[at]]
                if t >= 0 and seen[t] != i:
                    seen[t] = i
                    if cnt[t] == 0:
                        touched[n_touched] = t
                        n_touched += 1
                    cnt[t] += 1
    return n_touched


@njit(cache=True, nogil=True)
def _setup(n: int, local: np.ndarray, start: np.ndarray, block: np.ndarray) -> tuple:
    """Step 3: every code is a token of its own. Token rows as record bitsets, support, size,
    smallest code and block per token, each token's codes as a linked list, and per block the
    slots of its present tokens and its singleton codes by support (Step 6's visiting order)."""
    gamma = block.size
    words = max(1, (n + 63) // 64)
    n_tok = 2 * gamma + 1
    rows = np.zeros((n_tok, words), dtype=np.uint64)
    everyone = np.zeros(words, dtype=np.uint64)
    for i in range(n):
        everyone[i // 64] |= _ONE << np.uint64(i % 64)
    for i in range(n):
        for at in range(start[i], start[i + 1]):
            c = local[at]
            rows[c, i // 64] |= _ONE << np.uint64(i % 64)
    tsup = np.zeros(n_tok, dtype=np.int64)
    tsize = np.zeros(n_tok, dtype=np.int64)
    tmin = np.zeros(n_tok, dtype=np.int64)
    tblock = np.zeros(n_tok, dtype=np.int64)
    head = np.full(n_tok, -1, dtype=np.int64)        # codes of a token as a linked list
    tail = np.full(n_tok, -1, dtype=np.int64)
    nxt = np.full(max(gamma, 1), -1, dtype=np.int64)
    rep = np.arange(gamma, dtype=np.int64)           # code -> its current token (-1: suppressed)
    for c in range(gamma):
        tsup[c] = _count(rows[c])
        tsize[c] = 1
        tmin[c] = c
        tblock[c] = block[c]
        head[c] = c
        tail[c] = c
    # the present tokens of each block: slots [boff[b], boff[b] + blen[b]) of btok (a block of
    # c codes never holds more than c disjoint tokens); slot[t] = position of token t
    n_blocks = int(block.max()) + 1 if gamma else 0
    blen = np.zeros(n_blocks, dtype=np.int64)
    for c in range(gamma):
        blen[block[c]] += 1
    boff = np.zeros(n_blocks + 1, dtype=np.int64)
    for b in range(n_blocks):
        boff[b + 1] = boff[b] + blen[b]
    blen[:] = 0
    btok = np.zeros(max(gamma, 1), dtype=np.int64)
    slot = np.zeros(n_tok, dtype=np.int64)
    for c in range(gamma):
        b = block[c]
        slot[c] = boff[b] + blen[b]
        btok[slot[c]] = c
        blen[b] += 1
    bsingle = blen.copy()                            # singleton tokens present per block
    # the codes of each block by support, highest first (ties: code): a code's support is fixed
    # while it is a singleton token, so Step 6 visits the singleton candidates in this order
    sorder = np.argsort(block * (n + 1) * gamma + (n - tsup[:gamma]) * gamma + np.arange(gamma))
    salive = np.ones(max(gamma, 1), dtype=np.bool_)   # still a singleton token
    shead = boff[:n_blocks].copy()                   # first entry of a block that may be alive
    return (rows, everyone, tsup, tsize, tmin, tblock, head, tail, nxt, rep, boff, blen, btok, slot, bsingle,
            sorder, salive, shead)


@njit(cache=True, nogil=True)
def _step_4_itemset(queue: np.ndarray, q: int, gamma: int, rep: np.ndarray, p: np.ndarray) -> int:
    """Step 4: the next itemset of Q, canonicalized as the distinct current tokens of its codes
    (suppressed codes left out). Returns its size; the tokens are ``p[:n_p]``."""
    m = queue.shape[1]
    n_p = 0                                   # p canonicalized: its codes' current tokens
    for j in range(m):
        c = queue[q, j]
        if c == gamma or rep[c] < 0:
            continue
        t = rep[c]
        dup = False
        for x in range(n_p):
            dup = dup or p[x] == t
        if not dup:
            p[n_p] = t
            n_p += 1
    return n_p


@njit(cache=True, nogil=True)
def _step_6_partner_sizes(p: np.ndarray, n_p: int, tsize: np.ndarray, tblock: np.ndarray, bsingle: np.ndarray,
                          boff: np.ndarray, blen: np.ndarray, btok: np.ndarray, opt_u: np.ndarray,
                          opt_z: np.ndarray) -> tuple[int, int]:
    """Step 6, first part: for each u in p that has a partner in its block, the smallest
    partner size z (``opt_u``/``opt_z``); returns how many and the least |u| + z."""
    n_opt = 0
    least = -1
    for j in range(n_p):
        u = p[j]
        b = tblock[u]
        z = -1
        if bsingle[b] > (1 if tsize[u] == 1 else 0):
            z = 1                         # another code of the block is still a token
        else:
            for x in range(boff[b], boff[b] + blen[b]):
                t = btok[x]
                if t != u and (z < 0 or tsize[t] < z):
                    z = tsize[t]
        if z >= 0:
            opt_u[n_opt] = u
            opt_z[n_opt] = z
            n_opt += 1
            if least < 0 or tsize[u] + z < least:
                least = tsize[u] + z
    return n_opt, least


@njit(cache=True, nogil=True)
def _steps_9_to_12(p: np.ndarray, n_p: int, rows: np.ndarray, tsup: np.ndarray, tsize: np.ndarray,
                   tmin: np.ndarray, tblock: np.ndarray, head: np.ndarray, nxt: np.ndarray, rep: np.ndarray,
                   bsingle: np.ndarray, salive: np.ndarray, btok: np.ndarray, slot: np.ndarray, boff: np.ndarray,
                   blen: np.ndarray, k: int) -> int:
    """Steps 9-12: no token of p can merge in its block; suppress the least supported token of p
    (ties: smallest code) until p reaches k records or is empty. Returns the codes suppressed."""
    s = 0
    while n_p:
        if _reaches(rows, tsup, p, n_p, k):
            break
        e_at = 0
        for j in range(1, n_p):
            e, f = p[j], p[e_at]
            if tsup[e] < tsup[f] or (tsup[e] == tsup[f] and tmin[e] < tmin[f]):
                e_at = j
        e = p[e_at]
        s += tsize[e]
        b = tblock[e]
        _leave_block(e, b, tsize, bsingle, salive, btok, slot, boff, blen)
        c = head[e]
        while c >= 0:
            rep[c] = -1
            c = nxt[c]
        p[e_at] = p[n_p - 1]
        n_p -= 1
    return s


# The state Step 6 reads, grouped so that its signature says what it works on (it took 32
# arguments). Named tuples of arrays and scalars: numba passes them to a compiled function
# as one typed tuple, with no copy and no boxing, and the function unpacks them for free.
Tokens = namedtuple("Tokens", "rows everyone tsup tsize tmin tblock rep words")
"""Every token: its records as a bitset row (``words`` uint64 words; ``everyone`` has all
records), support, size, smallest code and block; ``rep``: each code's current token."""
Blocks = namedtuple("Blocks", "btok boff blen bsingle sorder salive shead")
"""Each block's tokens (``btok[boff[b]:boff[b] + blen[b]]``), its live singletons and their
order by support (``sorder``/``salive``, scanned from ``shead[b]``)."""
Cluster = namedtuple("Cluster", "local start avg_len gamma")
"""The cluster's records (local code ids, ``local[start[i]:start[i+1]]``), mean record length
and number of codes."""
Buffers = namedtuple("Buffers", "cnt seen touched acc rest gain nz")
"""Scratch arrays Step 6 reuses: per-token counters and marks, and word-sized bitsets."""


@njit(cache=True, nogil=True)
def _step_6_best_pair(p: np.ndarray, n_p: int, opt_u: np.ndarray, opt_z: np.ndarray, n_opt: int, least: int,
                      tokens: Tokens, blocks: Blocks, cluster: Cluster, buffers: Buffers) -> tuple[int, int]:
    """Step 6: among the pairs (u, u') of one block with the least |u| + |u'| (UL(u ∪ u') =
    2^|u ∪ u'| - 1 is then least), the one after which p is held by the most records (ties:
    smallest code of u, then of u'). ``opt_u[:n_opt]``, ``opt_z[:n_opt]``: the tokens of p
    that have a partner and the partner size giving ``least``. Returns (u, u')."""
    rows, everyone, tsup, tsize, tmin, tblock, rep, words = tokens
    btok, boff, blen, bsingle, sorder, salive, shead = blocks
    local, start, avg_len, gamma = cluster
    cnt, seen, touched, acc, rest, gain, nz = buffers
    # the pair of least key (-sup of p after the merge, smallest code of u, of u')
    best_sup, best_u, best_v = -1, -1, -1
    best_tu, best_tv = gamma, gamma               # tmin of the best pair's tokens
    for o in range(n_opt):
        u, z = opt_u[o], opt_z[o]
        if tsize[u] + z != least:
            continue
        b = tblock[u]
        _and_of(rows, everyone, p, n_p, u, u, rest)       # u alone left out (a constant would compile apart)
        # candidates u': the tokens of size z in u's block. Singletons (z = 1, the usual
        # case) are visited by support, highest first, so the scan stops at the first
        # one whose bound cannot reach the best pair; larger tokens by a full scan
        by_support = z == 1
        top = -1                          # full scan: the candidate held by the most records
        if by_support:
            n_cand = bsingle[b] - (1 if tsize[u] == 1 else 0)
            while shead[b] < boff[b + 1] and not salive[sorder[shead[b]]]:
                shead[b] += 1
        else:
            n_cand = 0
            for x in range(boff[b], boff[b] + blen[b]):
                t = btok[x]
                if t != u and tsize[t] == z:
                    n_cand += 1
                    if top < 0 or tsup[t] > tsup[top]:
                        top = t
        # sup(p after the merge), counted over few records when possible: p = {u}:
        # sup(u) + sup(u') - |u ∩ u'|, the overlap counted on u's (< k) records; else
        # sup(p) on u's records + what u' adds on the records of p without u
        base = 0
        n_gain = 0
        n_nz = 0                          # words where u' can add records to p
        for w in range(words):
            base += _popcount(rest[w] & rows[u, w])
            gain[w] = rest[w] & ~rows[u, w]
            if gain[w] != _ZERO:
                nz[n_nz] = w
                n_nz += 1
                n_gain += _popcount(gain[w])
        if n_p == 1:
            mode = 2
            n_touched = _token_counts(rows[u], local, start, rep, cnt, seen, touched)
        elif n_gain * avg_len < n_cand:   # cheaper than even bounding every candidate
            mode = 1
            n_touched = _token_counts(gain, local, start, rep, cnt, seen, touched)
        else:
            mode = 0
            n_touched = 0
        for j in range(n_p):              # u' in p: p loses it when merged
            v = p[j]
            if v != u and tsize[v] == z and tblock[v] == b:
                _and_of(rows, everyone, p, n_p, u, v, acc)
                sup = 0
                for w in range(words):
                    sup += _popcount(acc[w] & (rows[u, w] | rows[v, w]))
                if _beats(sup, tmin[u], tmin[v], best_sup, best_tu, best_tv):
                    best_sup, best_u, best_v, best_tu, best_tv = sup, u, v, tmin[u], tmin[v]
        # the order of the visit does not change the choice (a strict order on
        # (sup, smallest code of u, of u')), only how many candidates are scored;
        # a full scan visits ``top`` first, for an early high bar
        lo = shead[b] if by_support else boff[b] - (1 if top >= 0 else 0)
        hi = boff[b + 1] if by_support else boff[b] + blen[b]
        for x in range(lo, hi):
            if by_support:
                v = sorder[x]
                if not salive[v]:
                    continue
            else:
                v = top if x < boff[b] else btok[x]
                if tsize[v] != z:
                    continue
            if v == u or _holds(p, n_p, v):
                continue
            # u' adds at most its own records (and p = {u} keeps at most sup(u) + sup(u'))
            bound = tsup[u] + tsup[v] if mode == 2 else base + min(n_gain, tsup[v])
            if not _beats(bound, tmin[u], tmin[v], best_sup, best_tu, best_tv):
                # later singletons have no more support; for p = {u} an equal bound is
                # an equal support, and those come by ascending code: they lose the tie
                if by_support and (bound < best_sup or mode == 2):
                    break
                continue                     # cannot beat the best pair, not even on a tie
            if mode == 2:
                sup = tsup[u] + tsup[v] - cnt[v]
            elif mode == 1:
                sup = base + cnt[v]
            else:                            # sup(p ∪ u') = base + what u' adds
                sup = base
                for x2 in range(n_nz):
                    w = nz[x2]
                    sup += _popcount(gain[w] & rows[v, w])
            if _beats(sup, tmin[u], tmin[v], best_sup, best_tu, best_tv):
                best_sup, best_u, best_v, best_tu, best_tv = sup, u, v, tmin[u], tmin[v]
        for x in range(n_touched):
            cnt[touched[x]] = 0
            seen[touched[x]] = -1
    return best_u, best_v


@njit(cache=True, nogil=True)
def _steps_7_8_merge(u: int, v: int, new: int, p: np.ndarray, n_p: int, rows: np.ndarray, words: int,
                     tsup: np.ndarray, tsize: np.ndarray, tmin: np.ndarray, tblock: np.ndarray, slot: np.ndarray,
                     btok: np.ndarray, boff: np.ndarray, blen: np.ndarray, bsingle: np.ndarray, salive: np.ndarray,
                     head: np.ndarray, tail: np.ndarray, nxt: np.ndarray, rep: np.ndarray) -> int:
    """Steps 7-8: the token ``new`` = u ∪ u' replaces u and u' in p, in Q (through ``rep``) and
    in every record. Returns the size of p."""
    b = tblock[u]
    for t in (u, v):
        _leave_block(t, b, tsize, bsingle, salive, btok, slot, boff, blen)
    for w in range(words):
        rows[new, w] = rows[u, w] | rows[v, w]
    tsup[new] = _count(rows[new])
    tsize[new] = tsize[u] + tsize[v]
    tmin[new] = min(tmin[u], tmin[v])
    tblock[new] = b
    slot[new] = boff[b] + blen[b]
    btok[slot[new]] = new
    blen[b] += 1
    nxt[tail[u]] = head[v]
    head[new] = head[u]
    tail[new] = tail[v]
    c = head[new]
    while c >= 0:
        rep[c] = new
        c = nxt[c]
    kept = 0
    for j in range(n_p):
        if p[j] != u and p[j] != v:
            p[kept] = p[j]
            kept += 1
    p[kept] = new
    n_p = kept + 1
    return n_p


@njit(cache=True, nogil=True)
def steps_3_to_14(n: int, local: np.ndarray, start: np.ndarray, block: np.ndarray, queue: np.ndarray,
                  k: int) -> tuple[np.ndarray, int]:
    """Steps 3-14 of GenDiag on a cluster of ``n`` records (``local[start[i]:start[i+1]]``: the
    local code ids of record i), ``block``: dense block id per local code, ``queue``: Q in the
    order of Step 4, rows of code ids padded with γ. Returns the code -> token map (-1:
    suppressed) and s (codes suppressed)."""
    gamma = block.size
    words = max(1, (n + 63) // 64)
    (rows, everyone, tsup, tsize, tmin, tblock, head, tail, nxt, rep, boff, blen, btok, slot, bsingle,
     sorder, salive, shead) = _setup(n, local, start, block)                 # Step 3
    n_tok = 2 * gamma + 1
    avg_len = start[n] / n if n else 0.0
    cnt = np.zeros(n_tok, dtype=np.int64)
    seen = np.full(n_tok, -1, dtype=np.int64)
    touched = np.zeros(n_tok, dtype=np.int64)
    acc = np.empty(words, dtype=np.uint64)
    rest = np.empty(words, dtype=np.uint64)
    gain = np.empty(words, dtype=np.uint64)
    nz = np.empty(words, dtype=np.int64)
    m = queue.shape[1]
    p = np.empty(max(m, 1), dtype=np.int64)
    opt_u = np.empty(max(m, 1), dtype=np.int64)
    opt_z = np.empty(max(m, 1), dtype=np.int64)
    tokens = Tokens(rows, everyone, tsup, tsize, tmin, tblock, rep, words)
    blocks = Blocks(btok, boff, blen, bsingle, sorder, salive, shead)
    cluster = Cluster(local, start, avg_len, gamma)
    buffers = Buffers(cnt, seen, touched, acc, rest, gain, nz)
    new = gamma + 1
    s = 0
    for q in range(queue.shape[0]):                                            # Step 4
        n_p = _step_4_itemset(queue, q, gamma, rep, p)
        while n_p:                                                             # Step 5
            if _reaches(rows, tsup, p, n_p, k):
                break
            n_opt, least = _step_6_partner_sizes(p, n_p, tsize, tblock, bsingle, boff, blen, btok, opt_u, opt_z)
            if n_opt == 0:                                                     # Steps 9-12
                s += _steps_9_to_12(p, n_p, rows, tsup, tsize, tmin, tblock, head, nxt, rep, bsingle, salive,
                                    btok, slot, boff, blen, k)
                break
            u, v = _step_6_best_pair(p, n_p, opt_u, opt_z, n_opt, least, tokens, blocks, cluster,
                                     buffers)                                   # Step 6
            n_p = _steps_7_8_merge(u, v, new, p, n_p, rows, words, tsup, tsize, tmin, tblock, slot, btok, boff,
                                   blen, bsingle, salive, head, tail, nxt, rep)     # Steps 7-8
            new += 1
    return rep, s


@njit(cache=True, nogil=True)
def localize(flat: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cluster's distinct code ids (ascending) and its occurrences as local ids 0..γ-1,
    ascending within each record (``flat[start[i]:start[i+1]]`` = record i). Local ids keep the
    order of the code ids, so lexicographic tie-breaks are unchanged. A marker array over the
    id range instead of ``np.unique`` and a lexsort: the Step 20 unions are re-localized for
    every candidate partner."""
    n_ids = flat.max() + 1 if flat.size else 0
    local_of = np.full(n_ids, -1, dtype=np.int64)
    for c in flat:
        local_of[c] = 0
    gamma = 0
    for c in range(n_ids):
        if local_of[c] == 0:
            local_of[c] = gamma
            gamma += 1
    codes = np.empty(gamma, dtype=np.int64)
    for c in range(n_ids):
        if local_of[c] >= 0:
            codes[local_of[c]] = c
    local = np.empty(flat.size, dtype=np.int64)
    for at in range(flat.size):
        local[at] = local_of[flat[at]]
    for i in range(start.size - 1):
        for at in range(start[i] + 1, start[i + 1]):
            if local[at] < local[at - 1]:
                local[start[i]:start[i + 1]].sort()
                break
    return codes, local


@njit(cache=True, nogil=True)
def initial_q(n: int, local: np.ndarray, start: np.ndarray, gamma: int, k: int, m: int) -> np.ndarray:
    """Step 2 for m <= 2: the itemsets of one or two codes held by 1..k-1 records, in Step 4's
    order (A18: support descending, then size, then lexicographic), as rows of local code ids
    padded with γ; the same rows as ``gendiag._initial_q_small`` (tested).

    Why here: on EHRD-sized clusters the numpy version sorted every (record, pair) occurrence,
    ~10^5-10^6 keys per cluster. Here each code's pairs are counted over the records holding it
    (an inverted index) into a dense counter and read back in ascending order from a bitset of
    its partners, so the work is one pass over the pair occurrences, with no sorting; a counting
    sort by (support, size) keeps the lexicographic order the pass produces."""
    total = start[n]
    sup1 = np.zeros(gamma, dtype=np.int64)
    for at in range(total):
        sup1[local[at]] += 1
    end = np.empty(total, dtype=np.int64)              # end of the record of each occurrence
    n_pairs = 0
    for i in range(n):
        length = start[i + 1] - start[i]
        n_pairs += length * (length - 1) // 2
        for at in range(start[i], start[i + 1]):
            end[at] = start[i + 1]
    cap = gamma + (n_pairs if m >= 2 else 0)
    qa = np.empty(cap, dtype=np.int64)
    qb = np.empty(cap, dtype=np.int64)
    qsup = np.empty(cap, dtype=np.int64)
    n_q = 0
    for c in range(gamma):                              # 1-itemsets, lexicographic
        if sup1[c] < k:
            qa[n_q], qb[n_q], qsup[n_q] = c, gamma, sup1[c]
            n_q += 1
    n_single = n_q
    if m >= 2:
        off = np.zeros(gamma + 1, dtype=np.int64)       # occurrences of each code: an inverted index
        for c in range(gamma):
            off[c + 1] = off[c] + sup1[c]
        fill = off[:gamma].copy()
        occ = np.empty(total, dtype=np.int64)
        for at in range(total):
            c = local[at]
            occ[fill[c]] = at
            fill[c] += 1
        cnt = np.zeros(gamma, dtype=np.int64)
        mark = np.zeros((gamma + 63) // 64, dtype=np.uint64)   # partners of a, as a bitset
        for a in range(gamma):                          # 2-itemsets {a, b}, a < b, lexicographic
            last_w = -1
            for x in range(off[a], off[a + 1]):
                at = occ[x]
                for bt in range(at + 1, end[at]):       # codes are ascending within a record
                    b = local[bt]
                    cnt[b] += 1
                    mark[b // 64] |= _ONE << np.uint64(b % 64)
                    last_w = max(last_w, b // 64)
            for w in range((a + 1) // 64, last_w + 1):  # partners in ascending order
                word = mark[w]
                mark[w] = _ZERO
                while word != _ZERO:
                    b = w * 64 + _lowest_bit(word)
                    word &= word - _ONE
                    if cnt[b] < k:
                        qa[n_q], qb[n_q], qsup[n_q] = a, b, cnt[b]
                        n_q += 1
                    cnt[b] = 0
    # counting sort, stable: bucket (k - 1 - support) * 2 + (size - 1)
    n_buckets = 2 * max(k, 1)
    first = np.zeros(n_buckets + 1, dtype=np.int64)
    for x in range(n_q):
        first[(k - 1 - qsup[x]) * 2 + (0 if x < n_single else 1) + 1] += 1
    for bkt in range(n_buckets):
        first[bkt + 1] += first[bkt]
    out = np.full((n_q, m), gamma, dtype=np.int64)
    for x in range(n_q):
        bkt = (k - 1 - qsup[x]) * 2 + (0 if x < n_single else 1)
        row = first[bkt]
        first[bkt] += 1
        out[row, 0] = qa[x]
        if x >= n_single:
            out[row, 1] = qb[x]
    return out
