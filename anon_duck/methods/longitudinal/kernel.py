"""A-GS kernels compiled with numba: the DP of Algorithm 2 (cell fill and traceback) and the
pruned argmin/argmax scans of MDAV' over the values still in D.

Why compiled: a scan visits every value of D (tens of thousands) for its bound and aligns a
few percent of them exactly, about 15 x 15 cells each; in numpy every step of that is a call
over a padded block, and the merge of formCluster is a cell-by-cell loop. Compiled, each value
and cell costs a few nanoseconds, not microseconds of call overhead, and bounds and DP run on
each candidate's true length.

Arrays are int64 except the pair ids (one compiled signature each, cached on disk).
Candidates are laid out as :class:`align.Candidates`: candidate c is the value ``ids[c]``
with pair ids ``flat[start[c]:start[c + 1]]`` (int32, one contiguous run scanned in order,
which is what the bound pass over all of D reads); per-value arrays (``sup_y``, ``count``,
``head``) are indexed by value id. ``lower`` and ``unmatched`` are the tables of
:class:`align.XTables`; ``x`` is its tuple (gen_i, gen_a, X's code nodes, age nodes, sups)
and ``y`` the candidates' flat (code nodes, age nodes, sups), from which the DP reads
step(x_h, y_j) cell by cell.
Every scan returns the value the full scan would: among all values with the optimal total,
the one whose smallest remaining record ``head`` is smallest (spec A5); values whose
``count`` of remaining records is 0 are not in D.
"""
from __future__ import annotations

import numpy as np
from numba import njit

GEN, SUP_Y, SUP_X = 0, 1, 2
FIRST_ROUND = 64        # values aligned first (best bounds) to get the pruning threshold
SAMPLE = 1024           # bounds sorted (argmax) or summed in full (argmin) to estimate it
_DEAD = np.iinfo(np.int64).max   # bound of a value no longer in D (``count`` 0): never aligned
NO_BEST = _DEAD         # the best total (and head) of a scan before its first alignment
_NO_FLOOR = np.iinfo(np.int64).min
_UNREACHED = np.iinfo(np.int64).max // 4   # a cell outside the band of :func:`_band`
BAND = 4                # half-width of the banded upper bound of the argmax (:func:`_band`)


@njit(cache=True, nogil=True)
def ags_align(xc: np.ndarray, xa: np.ndarray, yc: np.ndarray, ya: np.ndarray, gen_i: np.ndarray, gen_a: np.ndarray,
              sup_i: np.ndarray, sup_a: np.ndarray, c00: int) -> np.ndarray:
    """Steps 1-25 of Algorithm 2 on totals, from the weighted cost tables of
    :class:`costs.CostModel` and the carried total ``c00`` = ILM(X) + ALM(X): the operation
    matrix r. Ties go to GEN, then SUP_Y, then SUP_X (step 22)."""
    m, n = xc.size, yc.size
    c = np.zeros((m + 1, n + 1), dtype=np.int64)
    r = np.full((m + 1, n + 1), -1, dtype=np.int64)
    c[0, 0] = c00
    for h in range(1, m + 1):                                  # steps 3-7
        c[h, 0] = c[h - 1, 0] + sup_i[xc[h - 1]] + sup_a[xa[h - 1]]
        r[h, 0] = SUP_X
    for j in range(1, n + 1):                                  # steps 8-12
        c[0, j] = c[0, j - 1] + sup_i[yc[j - 1]] + sup_a[ya[j - 1]]
        r[0, j] = SUP_Y
    for h in range(1, m + 1):                                  # steps 13-25
        xch, xah = xc[h - 1], xa[h - 1]
        sx = sup_i[xch] + sup_a[xah]
        for j in range(1, n + 1):
            ycj, yaj = yc[j - 1], ya[j - 1]
            cand_gen = c[h - 1, j - 1] + gen_i[xch, ycj] + gen_a[xah, yaj]     # steps 16, 19
            cand_supy = c[h, j - 1] + sup_i[ycj] + sup_a[yaj]                 # steps 17, 20
            cand_supx = c[h - 1, j] + sx                                      # steps 18, 21
            if cand_gen <= cand_supy and cand_gen <= cand_supx:
                c[h, j], r[h, j] = cand_gen, GEN
            elif cand_supy <= cand_supx:
                c[h, j], r[h, j] = cand_supy, SUP_Y
            else:
                c[h, j], r[h, j] = cand_supx, SUP_X
    return r


@njit(cache=True, nogil=True)
def traceback(r: np.ndarray, xc: np.ndarray, xa: np.ndarray, yc: np.ndarray, ya: np.ndarray,
              gen: tuple, sup: tuple, lca_i: np.ndarray, lca_a: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 26-36: follow r from (m, n) back to (0, 0). Returns the anonymized pairs in
    position order (the LCAs of each GEN) and the sums along the path of the four costs
    ``gen``/``sup`` (weighted i, weighted a, unweighted i, unweighted a: code tables first)."""
    m, n = r.shape[0] - 1, r.shape[1] - 1
    codes = np.empty(min(m, n), dtype=np.int64)
    ages = np.empty(min(m, n), dtype=np.int64)
    sums = np.zeros(4, dtype=np.int64)
    h, j, s = m, n, 0
    while h >= 1 or j >= 1:
        op = r[h, j]
        if op == GEN:
            xch, xah, ycj, yaj = xc[h - 1], xa[h - 1], yc[j - 1], ya[j - 1]
            for q in range(0, 4, 2):
                sums[q] += gen[q][xch, ycj]
                sums[q + 1] += gen[q + 1][xah, yaj]
            codes[s], ages[s] = lca_i[xch, ycj], lca_a[xah, yaj]
            s += 1
            h, j = h - 1, j - 1
        else:
            if op == SUP_Y:
                zc, za = yc[j - 1], ya[j - 1]
                j -= 1
            else:
                zc, za = xc[h - 1], xa[h - 1]
                h -= 1
            for q in range(0, 4, 2):
                sums[q] += sup[q][zc]
                sums[q + 1] += sup[q + 1][za]
    return codes[:s][::-1].copy(), ages[:s][::-1].copy(), sums


@njit(cache=True, nogil=True)
def x_lower(gen_i: np.ndarray, gen_a: np.ndarray, xc: np.ndarray, xa: np.ndarray, sup_x: np.ndarray,
            pc: np.ndarray, pa: np.ndarray, sup_p: np.ndarray, floor_i: np.ndarray,
            floor_a: np.ndarray, used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``lower`` of :class:`align.XTables`: for every pair p = (pc[p], pa[p]),
    min(sup(p), min_h gen(x_h, p)) and min(sup(p), min_h gen(x_h, p) - sup(x_h)); the last
    column (the pad) is 0. Exact, without an (m x P) pass: X's pairs are grouped by age, and
    per distinct age u and code node c the smallest gen_i(x_h, c) (and gen_i - sup(x_h)) over
    the pairs of that age is kept, so a pair costs one step per distinct age of X (ten-odd on
    a ten-year trajectory, against its fifty pairs). Only the pairs ``used`` are computed; the
    others keep sup(p), which bounds nothing: no candidate scanned with these tables has them.

    Also ``rest[h]``, a lower bound of what rows h..m-1 of the shifted DP can still add to
    E (each row at most one GEN, whose step is at least min over any code node of
    gen_i - sup_i, plus the same over age nodes, minus sup(x_h); those minimums per node are
    ``floor_i``/``floor_a``, :attr:`costs.CostModel.step_floor`): :func:`_cost` stops a
    hopeless alignment with it."""
    m, width = xc.size, sup_p.size
    lower = np.empty((2, width), dtype=np.int64)
    lower[0], lower[1] = sup_p, sup_p
    lower[:, width - 1] = 0
    rest = np.zeros(m + 1, dtype=np.int64)
    for h in range(m - 1, -1, -1):
        rest[h] = rest[h + 1] + min(0, floor_i[xc[h]] + floor_a[xa[h]] - sup_x[h])
    if m == 0:
        return lower, rest
    ages = np.unique(xa)
    n_code = gen_i.shape[1]
    big = np.iinfo(np.int64).max // 4
    r0 = np.full((ages.size, n_code), big, dtype=np.int64)
    r1 = np.full((ages.size, n_code), big, dtype=np.int64)
    for h in range(m):
        u = np.searchsorted(ages, xa[h])
        row, sx = gen_i[xc[h]], sup_x[h]
        for c in range(n_code):
            g = row[c]
            if g < r0[u, c]:
                r0[u, c] = g
            if g - sx < r1[u, c]:
                r1[u, c] = g - sx
    for p in used:
        c, a = pc[p], pa[p]
        l0, l1 = lower[0, p], lower[1, p]
        for u in range(ages.size):
            g = gen_a[ages[u], a]
            if r0[u, c] + g < l0:
                l0 = r0[u, c] + g
            if r1[u, c] + g < l1:
                l1 = r1[u, c] + g
        lower[0, p], lower[1, p] = l0, l1
    return lower, rest


@njit(cache=True, nogil=True, inline="always")
def _cost(gen_i: np.ndarray, gen_a: np.ndarray, xc: np.ndarray, xa: np.ndarray, sup_x: np.ndarray,
          fc: np.ndarray, fa: np.ndarray, fs: np.ndarray, a: int, n: int, e: np.ndarray, floor: int) -> int:
    """E[m, n] of the shifted DP (module docstring of :mod:`.align`) of X against the value
    whose pairs are ``fc/fa[a:a + n]`` (code, age nodes; ``fs``: their sup), one row of
    ``n + 1`` cells kept in ``e``; ``step(x_h, y_j) = gen_i[x_h, y_j] + gen_a[x_h, y_j] -
    sup(y_j) - sup(x_h)`` is read from X's rows of the model's tables (a row is a few KiB,
    where a table over every pair of D was a MiB per row); or any value below ``floor`` as soon
    as E[m, n] is known to be below it: a cell is at most the one above it, so E[m, n] <=
    E[h, n] for every row h."""
    for j in range(n + 1):
        e[j] = 0
    for h in range(xc.size):
        left, _ = _row(gen_i[xc[h]], gen_a[xa[h]], sup_x[h], fc, fa, fs, a, n, e, e, 0, False)
        if left < floor:
            break
    return e[n]


@njit(cache=True, nogil=True, inline="always")
def _row(gi: np.ndarray, ga: np.ndarray, sx: int, fc: np.ndarray, fa: np.ndarray, fs: np.ndarray, a: int, n: int,
         e: np.ndarray, tail: np.ndarray, later: int, bounded: bool) -> tuple[int, int]:
    """One row h of the shifted DP, in place in ``e`` (row h - 1 on entry): (E[h, n], and if
    ``bounded`` min_j E[h, j] + max(tail[j], later), see :func:`_cost_below`)."""
    diag = 0                                                   # E[h-1, 0]
    left = 0                                                   # E[h, 0]
    bound = max(tail[0], later) if bounded else 0              # column 0: E[h, 0] = 0
    for j in range(1, n + 1):
        q = a + j - 1
        up = e[j]
        v = diag + (gi[fc[q]] + ga[fa[q]] - fs[q] - sx)        # GEN from (h-1, j-1)
        if up < v:                                             # SUP_X from (h-1, j)
            v = up
        if left < v:                                           # SUP_Y from (h, j-1)
            v = left
        diag = up
        e[j] = v
        left = v
        if bounded:
            t = v + max(tail[j], later)
            if t < bound:
                bound = t
    return left, bound


@njit(cache=True, nogil=True, inline="always")
def _cost_below(gen_i: np.ndarray, gen_a: np.ndarray, xc: np.ndarray, xa: np.ndarray, sup_x: np.ndarray,
                fc: np.ndarray, fa: np.ndarray, fs: np.ndarray, gain: np.ndarray, flat: np.ndarray, rest: np.ndarray,
                a: int, n: int, e: np.ndarray, tail: np.ndarray, ceiling: int) -> int:
    """E[m, n] as :func:`_cost`, or, as soon as it is known to exceed ``ceiling``, a lower
    bound of it above ``ceiling`` (argmin: such a value cannot win, not even a tie). After
    row h, a path crossing it at column j ends at E[h, j] plus the GEN steps still to come,
    at most one per later column and one per later row; each is at least ``gain`` of its
    column's pair (``lower[1] - sup``: min over X of step, <= 0) and at least ``rest`` of its
    row, so E[m, n] >= min_j E[h, j] + max(tail[j], rest[h + 1]) with ``tail[j]`` the sum of
    the gains of columns after j. Row 0 of this bound is the lower bound (2) of
    :class:`align.XTables`; it tightens row by row."""
    tail[n] = 0
    for j in range(n, 0, -1):
        q = a + j - 1
        tail[j - 1] = tail[j] + gain[flat[q]] - fs[q]
    for j in range(n + 1):
        e[j] = 0
    for h in range(xc.size):
        _, bound = _row(gen_i[xc[h]], gen_a[xa[h]], sup_x[h], fc, fa, fs, a, n, e, tail, rest[h + 1], True)
        if bound > ceiling:
            return bound
    return e[n]


@njit(cache=True, nogil=True)
def _sample_cut(bound: np.ndarray, rank: int) -> int:
    """About the ``rank``-th smallest of ``bound`` (exactly, from an evenly spaced sample of at
    most ~``SAMPLE``): a first round's threshold. Any threshold gives the same result; a good
    one only saves alignments."""
    if bound.size <= rank:
        return bound.max()
    stride = max(1, bound.size // SAMPLE)
    sample = np.sort(bound[::stride])
    return sample[min(sample.size - 1, rank * sample.size // bound.size)]


@njit(cache=True, nogil=True)
def exact_costs(x: tuple, sup_x: int, ids: np.ndarray, start: np.ndarray, y: tuple, sup_y: np.ndarray) -> np.ndarray:
    """The A-GS total i + a of A-GS(X, 0, 0, Y) for every candidate (``x``: gen_i, gen_a, X's
    code and age nodes and sups; ``y``: the candidates' flat code nodes, age nodes, sups)."""
    gen_i, gen_a, xc, xa, sx = x
    fc, fa, fs = y
    e = np.zeros(_widest(start) + 1, dtype=np.int64)
    out = np.empty(ids.size, dtype=np.int64)
    for c in range(ids.size):
        out[c] = _cost(gen_i, gen_a, xc, xa, sx, fc, fa, fs, start[c], start[c + 1] - start[c], e, _NO_FLOOR) \
            + sup_y[ids[c]] + sup_x
    return out


@njit(cache=True, nogil=True, inline="always")
def _widest(start: np.ndarray) -> int:
    w = 0
    for c in range(start.size - 1):
        w = max(w, start[c + 1] - start[c])
    return w


@njit(cache=True, nogil=True, inline="always")
def _lower(lower: np.ndarray, unmatched: np.ndarray, sup_x: int, flat: np.ndarray, a: int, n: int) -> int:
    """The lower bound of :class:`align.XTables` of the value with pair ids ``flat[a:a + n]``."""
    s0, s1 = unmatched[min(n, unmatched.size - 1)], sup_x
    for j in range(a, a + n):
        s0 += lower[0, flat[j]]
        s1 += lower[1, flat[j]]
    return max(s0, s1)


@njit(cache=True, nogil=True)
def lower_bounds(lower: np.ndarray, unmatched: np.ndarray, sup_x: int, start: np.ndarray,
                 flat: np.ndarray) -> np.ndarray:
    """The lower bound of :class:`align.XTables` for every candidate."""
    out = np.empty(start.size - 1, dtype=np.int64)
    for c in range(out.size):
        out[c] = _lower(lower, unmatched, sup_x, flat, start[c], start[c + 1] - start[c])
    return out


@njit(cache=True, nogil=True, inline="always")
def _diagonal(gen_i: np.ndarray, gen_a: np.ndarray, xc: np.ndarray, xa: np.ndarray, sx: np.ndarray,
              fc: np.ndarray, fa: np.ndarray, fs: np.ndarray, a: int, n: int) -> int:
    s = 0
    for h in range(min(xc.size, n)):
        q = a + h
        v = gen_i[xc[h], fc[q]] + gen_a[xa[h], fa[q]] - fs[q] - sx[h]
        if v < 0:
            s += v
    return s


@njit(cache=True, nogil=True, inline="always")
def _band_cols(h: int, m: int, n: int, w: int) -> tuple[int, int]:
    """Columns lo..hi of row h of the band of :func:`_band`: within ``w`` of the stretched
    diagonal j = h n / m, reaching ``w`` past the next row's centre so that every row's band
    starts at or before the previous row's end (a monotone path from (0, 0) to (m, n) stays
    inside)."""
    centre = h * n // m
    after = (h + 1) * n // m if h < m else n
    return max(0, centre - w), min(n, max(centre, after) + w)


@njit(cache=True, nogil=True, inline="always")
def _band(gen_i: np.ndarray, gen_a: np.ndarray, xc: np.ndarray, xa: np.ndarray, sx: np.ndarray,
          fc: np.ndarray, fa: np.ndarray, fs: np.ndarray, a: int, n: int, w: int, prev: np.ndarray,
          cur: np.ndarray) -> int:
    """E[m, n] of the shifted DP restricted to a band of ``w`` cells either side of the
    stretched diagonal (cells outside it unreachable): the cost of the best alignment whose
    path stays in the band, so an upper bound of the exact E[m, n] (every path in the band is
    an alignment), and at CDM shape a tight one — about ``2 w + n / m`` cells a row instead of
    n. ``prev``/``cur``: scratch rows of at least n + 1 cells."""
    m = xc.size
    if m == 0 or n == 0:
        return 0
    lo0, hi0 = _band_cols(0, m, n, w)
    for j in range(lo0, hi0 + 1):
        prev[j] = 0                                            # E[0, j] = 0
    plo, phi = lo0, hi0
    for h in range(1, m + 1):
        lo, hi = _band_cols(h, m, n, w)
        gi, ga, s = gen_i[xc[h - 1]], gen_a[xa[h - 1]], sx[h - 1]
        left = _UNREACHED
        for j in range(lo, hi + 1):
            v = left                                           # SUP_Y from (h, j-1)
            if plo <= j <= phi and prev[j] < v:                # SUP_X from (h-1, j)
                v = prev[j]
            if j == 0:
                v = 0                                          # E[h, 0] = 0
            elif plo <= j - 1 <= phi:                          # GEN from (h-1, j-1)
                q = a + j - 1
                g = prev[j - 1] + (gi[fc[q]] + ga[fa[q]] - fs[q] - s)
                if g < v:
                    v = g
            cur[j] = v
            left = v
        prev, cur = cur, prev
        plo, phi = lo, hi
    return prev[n]


@njit(cache=True, nogil=True)
def band_bounds(x: tuple, sup_x: int, ids: np.ndarray, start: np.ndarray, y: tuple, sup_y: np.ndarray,
                w: int) -> np.ndarray:
    """The banded upper bound (:func:`_band`) of the A-GS total for every candidate."""
    gen_i, gen_a, xc, xa, sx = x
    fc, fa, fs = y
    prev = np.empty(_widest(start) + 1, dtype=np.int64)
    cur = np.empty(prev.size, dtype=np.int64)
    out = np.empty(ids.size, dtype=np.int64)
    for c in range(ids.size):
        out[c] = sup_y[ids[c]] + sup_x + _band(gen_i, gen_a, xc, xa, sx, fc, fa, fs, start[c],
                                               start[c + 1] - start[c], w, prev, cur)
    return out


@njit(cache=True, nogil=True)
def upper_bounds(x: tuple, sup_x: int, ids: np.ndarray, start: np.ndarray, y: tuple, sup_y: np.ndarray) -> np.ndarray:
    """The diagonal upper bound of :class:`align.XTables` for every candidate."""
    gen_i, gen_a, xc, xa, sx = x
    fc, fa, fs = y
    out = np.empty(ids.size, dtype=np.int64)
    for c in range(ids.size):
        out[c] = sup_y[ids[c]] + sup_x + _diagonal(gen_i, gen_a, xc, xa, sx, fc, fa, fs, start[c],
                                                   start[c + 1] - start[c])
    return out


@njit(cache=True, nogil=True)
def most_frequent(count: np.ndarray, head: np.ndarray) -> int:
    """The value with the most remaining records; ties to the smallest ``head`` (spec A5)."""
    best_t, best_n = -1, 0
    for t in range(count.size):
        n = count[t]
        if n > best_n or (n == best_n and n > 0 and head[t] < head[best_t]):
            best_t, best_n = t, n
    return best_t


@njit(cache=True, nogil=True, inline="always")
def _better(cost: int, head: int, best: int, best_head: int) -> bool:
    return cost < best or (cost == best and head < best_head)


@njit(cache=True, nogil=True)
def nearest(x: tuple, lower: np.ndarray, rest: np.ndarray, unmatched: np.ndarray, sup_x: int, ids: np.ndarray,
            start: np.ndarray, flat: np.ndarray, y: tuple, sup_y: np.ndarray, count: np.ndarray, head: np.ndarray) -> int:
    """argmin over the candidates in D of the A-GS total with X. A value is aligned exactly
    only when its lower bound does not exceed the best total found so far. Bounds are summed
    pair by pair and the sums paused as soon as they are known to exceed the pass's limit
    (the first sum only grows; the second falls by at most ``drop`` per pair left): first
    ``cut``, about the ``FIRST_ROUND``-th smallest bound (estimated on a sample), or the best
    total if that is smaller; then, only if the best total is above ``cut``, the best total,
    resuming each paused sum where it stopped. An alignment stops as soon as its total is
    known to exceed the best total (:func:`_cost_below`). One thread; :func:`nearest_cut` and
    :func:`nearest_pass` are its parts, for callers that split the second pass."""
    cut = nearest_cut(lower, unmatched, sup_x, ids, start, flat, count)
    sums = np.empty((ids.size, 3), dtype=np.int64)
    best = np.array([_DEAD, _DEAD, -1], dtype=np.int64)
    shared = best[:1].copy()
    # the flags as np.bool_, not constants: numba would compile nearest_pass once per constant
    nearest_pass(x, lower, rest, unmatched, sup_x, ids, start, flat, y, sup_y, count, head, np.bool_(True), cut, best,
                 shared, sums, 0, ids.size)
    if best[0] > cut:
        nearest_pass(x, lower, rest, unmatched, sup_x, ids, start, flat, y, sup_y, count, head, np.bool_(False), cut,
                     best, shared, sums, 0, ids.size)
    return best[2]


@njit(cache=True, nogil=True)
def nearest_cut(lower: np.ndarray, unmatched: np.ndarray, sup_x: int, ids: np.ndarray, start: np.ndarray,
                flat: np.ndarray, count: np.ndarray) -> int:
    """The first pass's limit of :func:`nearest`: about the ``FIRST_ROUND``-th smallest lower
    bound of the values in D, from an evenly spaced sample."""
    stride = max(1, ids.size // SAMPLE)
    sample = np.empty((ids.size + stride - 1) // stride, dtype=np.int64)
    for i in range(sample.size):
        c = i * stride
        sample[i] = _lower(lower, unmatched, sup_x, flat, start[c], start[c + 1] - start[c]) \
            if count[ids[c]] else _DEAD
    return _sample_cut(sample, FIRST_ROUND * sample.size // max(ids.size, 1))


@njit(cache=True, nogil=True)
def nearest_pass(x: tuple, lower: np.ndarray, rest: np.ndarray, unmatched: np.ndarray, sup_x: int, ids: np.ndarray,
                 start: np.ndarray, flat: np.ndarray, y: tuple, sup_y: np.ndarray, count: np.ndarray,
                 head: np.ndarray, first_pass: bool, cut: int, best: np.ndarray, shared: np.ndarray,
                 sums: np.ndarray, lo: int, hi: int) -> None:
    """One pass of :func:`nearest` over candidates ``lo..hi - 1``, improving ``best`` = (total,
    head, value) in place; ``sums`` holds each candidate's paused bound sums (written by the
    first pass, resumed by the second). Passes over disjoint ranges touch disjoint rows of
    ``sums``, so second passes of different ranges can run side by side, each from its own
    copy of the first pass's ``best``: the best of their results is the one-range result.
    ``shared[0]`` is a total some value of D attains, lowered by every pass that finds a
    smaller one (passes running side by side prune with each other's finds): it only ever
    holds such totals, so a value whose bound exceeds it can neither win nor tie, and a value
    is taken as its range's best only when its alignment ran to the end (total <= limit)."""
    gen_i, gen_a, xc, xa, sx = x
    fc, fa, fs = y
    drop = min(0, lower[1].min())
    top = unmatched.size - 1
    e = np.zeros(_widest(start) + 1, dtype=np.int64)
    tail = np.zeros(e.size, dtype=np.int64)
    gain = lower[1]
    for c in range(lo, hi):
        t = ids[c]
        if not count[t]:
            continue
        a, end = start[c], start[c + 1]
        if first_pass:
            s0, s1, j = unmatched[min(end - a, top)], sup_x, a
            limit = min(cut, best[0])
        else:
            s0, s1, j = sums[c, 0], sums[c, 1], sums[c, 2]
            if j == end and max(s0, s1) <= cut:        # aligned in the first pass
                continue
            limit = min(best[0], shared[0])
        while j < end and s0 <= limit and s1 + (end - j) * drop <= limit:
            s0 += lower[0, flat[j]]
            s1 += lower[1, flat[j]]
            j += 1
        sums[c, 0], sums[c, 1], sums[c, 2] = s0, s1, j
        if s0 > limit or s1 + (end - j) * drop > limit:
            continue
        limit = min(best[0], shared[0])
        ceiling = _DEAD if limit == _DEAD else limit - sup_y[t] - sup_x
        cost = _cost_below(gen_i, gen_a, xc, xa, sx, fc, fa, fs, gain, flat, rest, a, end - a, e, tail, ceiling) \
            + sup_y[t] + sup_x
        if cost <= limit and _better(cost, head[t], best[0], best[1]):
            best[0], best[1], best[2] = cost, head[t], t
            if cost < shared[0]:
                shared[0] = cost


@njit(cache=True, nogil=True)
def farthest(x: tuple, sup_x: int, ids: np.ndarray, start: np.ndarray, y: tuple,
             sup_y: np.ndarray, count: np.ndarray, head: np.ndarray) -> int:
    """argmax over the candidates in D of the A-GS total with X. SUPX + SUPY (suppressing
    both) bounds every alignment from above: the ``FIRST_ROUND`` values with the largest such
    bounds are aligned first; every other value is aligned only when that bound, then the
    diagonal alignment's (:func:`upper_bounds`), then the banded alignment's (:func:`_band`),
    reaches the best total found so far. Totals are negated (the argmax is an argmin). One
    thread; :func:`farthest_cut` and :func:`farthest_round` are its parts."""
    bound, cut = farthest_cut(sup_x, ids, sup_y, count)
    best = np.array([_DEAD, _DEAD, -1], dtype=np.int64)
    shared = best[:1].copy()
    for first_round in (True, False):
        farthest_round(x, sup_x, ids, start, y, sup_y, head, bound, first_round, cut, best, shared, 0, ids.size)
    return best[2]


@njit(cache=True, nogil=True)
def farthest_cut(sup_x: int, ids: np.ndarray, sup_y: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, int]:
    """-(SUPX + SUPY) of every candidate (dead ones ``_DEAD``) and the first round's limit,
    about the ``FIRST_ROUND``-th smallest of them."""
    bound = np.empty(ids.size, dtype=np.int64)
    for c in range(ids.size):
        bound[c] = -(sup_y[ids[c]] + sup_x) if count[ids[c]] else _DEAD
    return bound, _sample_cut(bound, np.int64(FIRST_ROUND))     # not the constant: one compile of _sample_cut


@njit(cache=True, nogil=True)
def farthest_round(x: tuple, sup_x: int, ids: np.ndarray, start: np.ndarray, y: tuple, sup_y: np.ndarray,
                   head: np.ndarray, bound: np.ndarray, first_round: bool, cut: int, best: np.ndarray,
                   shared: np.ndarray, lo: int, hi: int) -> None:
    """One round of :func:`farthest` over candidates ``lo..hi - 1``, improving the negated
    ``best`` = (-total, head, value) in place; rounds over disjoint ranges can run side by
    side, sharing the best negated total in ``shared`` as :func:`nearest_pass`."""
    gen_i, gen_a, xc, xa, sx = x
    fc, fa, fs = y
    e = np.zeros(_widest(start) + 1, dtype=np.int64)
    prev = np.empty(e.size, dtype=np.int64)
    cur = np.empty(e.size, dtype=np.int64)
    for c in range(lo, hi):
        limit = min(best[0], shared[0])
        if bound[c] == _DEAD or (bound[c] <= cut) != first_round or bound[c] > limit:
            continue
        t, a, n = ids[c], start[c], start[c + 1] - start[c]
        if limit != _DEAD and -(sup_y[t] + sup_x + _diagonal(gen_i, gen_a, xc, xa, sx, fc, fa, fs, a, n)) > limit:
            continue
        if limit != _DEAD and -(sup_y[t] + sup_x + _band(gen_i, gen_a, xc, xa, sx, fc, fa, fs, a, n, BAND,
                                                         prev, cur)) > limit:
            continue
        floor = _NO_FLOOR if limit == _DEAD else -limit - sup_y[t] - sup_x   # E below it: total below limit
        cost = -(_cost(gen_i, gen_a, xc, xa, sx, fc, fa, fs, a, n, e, floor) + sup_y[t] + sup_x)
        if cost <= limit and _better(cost, head[t], best[0], best[1]):
            best[0], best[1], best[2] = cost, head[t], t
            if cost < shared[0]:
                shared[0] = cost
