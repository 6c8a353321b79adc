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


@njit(cache=True, inline="always")
def _popcount(x: np.uint64) -> int:
    x = x - ((x >> _S1) & _M1)
    x = (x & _M2) + ((x >> _S2) & _M2)
    x = (x + (x >> _S4)) & _M4
    return int((x * _H01) >> _S56)


@njit(cache=True)
def _count(bits: np.ndarray) -> int:
    total = 0
    for w in range(bits.size):
        total += _popcount(bits[w])
    return total


@njit(cache=True)
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


@njit(cache=True)
def _token_counts(recs: np.ndarray, local: np.ndarray, start: np.ndarray, rep: np.ndarray, cnt: np.ndarray,
                  seen: np.ndarray, touched: np.ndarray) -> int:
    """cnt[t] += number of the records in bitset ``recs`` holding token t (a merged token once
    per record); returns how many entries of ``touched`` list the tokens counted."""
    n_touched = 0
    for w in range(recs.size):
        word = recs[w]
        while word != _ZERO:
            low = word & (~word + _ONE)
            i = w * 64 + _popcount(low - _ONE)
            word ^= low
            for at in range(start[i], start[i + 1]):
                t = rep[local[at]]
                if t >= 0 and seen[t] != i:
                    seen[t] = i
                    if cnt[t] == 0:
                        touched[n_touched] = t
                        n_touched += 1
                    cnt[t] += 1
    return n_touched


@njit(cache=True)
def steps_3_to_14(n: int, local: np.ndarray, start: np.ndarray, block: np.ndarray, queue: np.ndarray,
                  k: int) -> tuple[np.ndarray, int]:
    """Steps 3-14 of GenDiag on a cluster of ``n`` records (``local[start[i]:start[i+1]]``: the
    local code ids of record i), ``block``: dense block id per local code, ``queue``: Q in the
    order of Step 4, rows of code ids padded with γ. Returns the code -> token map (-1:
    suppressed) and s (codes suppressed)."""
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
    avg_len = start[n] / n if n else 0.0
    cnt = np.zeros(n_tok, dtype=np.int64)
    seen = np.full(n_tok, -1, dtype=np.int64)
    touched = np.zeros(n_tok, dtype=np.int64)
    acc = np.empty(words, dtype=np.uint64)
    rest = np.empty(words, dtype=np.uint64)
    gain = np.empty(words, dtype=np.uint64)
    m = queue.shape[1]
    p = np.empty(max(m, 1), dtype=np.int64)
    opt_u = np.empty(max(m, 1), dtype=np.int64)
    opt_z = np.empty(max(m, 1), dtype=np.int64)
    new = gamma + 1
    s = 0
    for q in range(queue.shape[0]):                                            # Step 4
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
        while n_p:                                                             # Step 5
            _and_of(rows, everyone, p, n_p, -1, -1, acc)
            if _count(acc) >= k:
                break
            # Step 6: for each u in p the smallest partner size in its block; only the pairs
            # of the least |u| + |u'| (UL(u ∪ u') = 2^|u ∪ u'| - 1) can win
            n_opt = 0
            least = -1
            for j in range(n_p):
                u = p[j]
                b = tblock[u]
                z = -1
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
            if n_opt == 0:                                                     # Steps 9-12
                while n_p:
                    _and_of(rows, everyone, p, n_p, -1, -1, acc)
                    if _count(acc) >= k:
                        break
                    e_at = 0
                    for j in range(1, n_p):
                        e, f = p[j], p[e_at]
                        if tsup[e] < tsup[f] or (tsup[e] == tsup[f] and tmin[e] < tmin[f]):
                            e_at = j
                    e = p[e_at]
                    s += tsize[e]
                    b = tblock[e]
                    last = btok[boff[b] + blen[b] - 1]
                    btok[slot[e]] = last
                    slot[last] = slot[e]
                    blen[b] -= 1
                    c = head[e]
                    while c >= 0:
                        rep[c] = -1
                        c = nxt[c]
                    p[e_at] = p[n_p - 1]
                    n_p -= 1
                break
            # the pair of least key (-sup of p after the merge, smallest code of u, of u')
            best_sup, best_u, best_v = -1, -1, -1
            for o in range(n_opt):
                u, z = opt_u[o], opt_z[o]
                if tsize[u] + z != least:
                    continue
                b = tblock[u]
                _and_of(rows, everyone, p, n_p, u, -1, rest)
                n_cand = 0
                for x in range(boff[b], boff[b] + blen[b]):
                    t = btok[x]
                    if t != u and tsize[t] == z:
                        n_cand += 1
                # sup(p after the merge), counted over few records when possible: p = {u}:
                # sup(u) + sup(u') - |u ∩ u'|, the overlap counted on u's (< k) records; else
                # sup(p) on u's records + what u' adds on the records of p without u
                base = 0
                n_gain = 0
                for w in range(words):
                    base += _popcount(rest[w] & rows[u, w])
                    gain[w] = rest[w] & ~rows[u, w]
                    n_gain += _popcount(gain[w])
                if n_p == 1:
                    mode = 2
                    n_touched = _token_counts(rows[u], local, start, rep, cnt, seen, touched)
                elif n_gain * avg_len < n_cand * words:
                    mode = 1
                    n_touched = _token_counts(gain, local, start, rep, cnt, seen, touched)
                else:
                    mode = 0
                    n_touched = 0
                for x in range(boff[b], boff[b] + blen[b]):
                    v = btok[x]
                    if v == u or tsize[v] != z:
                        continue
                    inside = False
                    for j in range(n_p):
                        inside = inside or p[j] == v
                    if inside:                       # u' in p: p loses it when merged
                        _and_of(rows, everyone, p, n_p, u, v, acc)
                        sup = 0
                        for w in range(words):
                            sup += _popcount(acc[w] & (rows[u, w] | rows[v, w]))
                    elif mode == 2:
                        sup = tsup[u] + tsup[v] - cnt[v]
                    elif mode == 1:
                        sup = base + cnt[v]
                    else:
                        sup = 0
                        for w in range(words):
                            sup += _popcount(rest[w] & (rows[u, w] | rows[v, w]))
                    if (sup > best_sup or (sup == best_sup and (tmin[u] < tmin[best_u]
                                                                or (u == best_u and tmin[v] < tmin[best_v])))):
                        best_sup, best_u, best_v = sup, u, v
                for x in range(n_touched):
                    cnt[touched[x]] = 0
                    seen[touched[x]] = -1
            # Steps 7-8: ũ = u ∪ u' replaces u and u' in p, Q (via rep) and every record
            u, v = best_u, best_v
            b = tblock[u]
            for t in (u, v):
                last = btok[boff[b] + blen[b] - 1]
                btok[slot[t]] = last
                slot[last] = slot[t]
                blen[b] -= 1
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
            new += 1
    return rep, s
