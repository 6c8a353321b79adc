"""A-GS kernels compiled with numba: the DP of Algorithm 2 (cell fill and traceback) and the
pruned argmin/argmax scans of MDAV' over the values still in D.

Why compiled: a scan visits every value of D (tens of thousands) for its bound and aligns a
few percent of them exactly, about 15 x 15 cells each; in numpy every step of that is a call
over a padded block, and the merge of formCluster is a cell-by-cell loop. Compiled, each value
and cell costs a few nanoseconds, not microseconds of call overhead, and bounds and DP run on
each candidate's true length.

All arrays are int64 (one compiled signature, cached on disk). Candidates are trajectory ids
``ids`` into row-major pair ids ``pid[t, :length[t]]`` (pad ids beyond the length are never
read); ``step``, ``lower``, ``unmatched`` are the tables of :class:`align.XTables`.
Every scan returns the value the full scan would: among all values with the optimal total,
the one whose smallest remaining record ``head`` is smallest (spec A5); values whose
``count`` of remaining records is 0 are not in D.
"""
from __future__ import annotations

import numpy as np
from numba import njit

GEN, SUP_Y, SUP_X = 0, 1, 2
FIRST_ROUND = 64        # values aligned first (best bounds) to get the pruning threshold
_DEAD = np.iinfo(np.int64).max   # bound of a value no longer in D (``count`` 0): never aligned


@njit(cache=True, nogil=True)
def ags_ops(gen: np.ndarray, sup_x: np.ndarray, sup_y: np.ndarray, c00: int) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1-25 of Algorithm 2 on totals: ``gen[h, j]`` (steps 16 + 19), ``sup_x``/``sup_y``
    (steps 17-21) and the carried total ``c00`` = ILM(X) + ALM(X). Returns the totals C and
    the operation matrix r; ties go to GEN, then SUP_Y, then SUP_X (step 22)."""
    m, n = sup_x.size, sup_y.size
    c = np.zeros((m + 1, n + 1), dtype=np.int64)
    r = np.full((m + 1, n + 1), -1, dtype=np.int64)
    c[0, 0] = c00
    for h in range(1, m + 1):                                  # steps 3-7
        c[h, 0] = c[h - 1, 0] + sup_x[h - 1]
        r[h, 0] = SUP_X
    for j in range(1, n + 1):                                  # steps 8-12
        c[0, j] = c[0, j - 1] + sup_y[j - 1]
        r[0, j] = SUP_Y
    for h in range(1, m + 1):                                  # steps 13-25
        sx = sup_x[h - 1]
        for j in range(1, n + 1):
            cand_gen = c[h - 1, j - 1] + gen[h - 1, j - 1]
            cand_supy = c[h, j - 1] + sup_y[j - 1]
            cand_supx = c[h - 1, j] + sx
            if cand_gen <= cand_supy and cand_gen <= cand_supx:
                c[h, j], r[h, j] = cand_gen, GEN
            elif cand_supy <= cand_supx:
                c[h, j], r[h, j] = cand_supy, SUP_Y
            else:
                c[h, j], r[h, j] = cand_supx, SUP_X
    return c, r


@njit(cache=True, nogil=True)
def traceback(r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 26-36: the path from (m, n) back to (0, 0) as (op, h, j) per step, last first."""
    m, n = r.shape[0] - 1, r.shape[1] - 1
    ops = np.empty(m + n, dtype=np.int64)
    hs = np.empty(m + n, dtype=np.int64)
    js = np.empty(m + n, dtype=np.int64)
    h, j, s = m, n, 0
    while h >= 1 or j >= 1:
        op = r[h, j]
        ops[s], hs[s], js[s] = op, h, j
        s += 1
        if op == GEN:
            h, j = h - 1, j - 1
        elif op == SUP_Y:
            j -= 1
        else:
            h -= 1
    return ops[:s], hs[:s], js[:s]


@njit(cache=True, nogil=True, inline="always")
def _cost(step: np.ndarray, pid: np.ndarray, t: int, n: int, e: np.ndarray) -> int:
    """E[m, n] of the shifted DP (module docstring of :mod:`.align`) of X against value t,
    one row of ``n + 1`` cells kept in ``e``."""
    for j in range(n + 1):
        e[j] = 0
    for h in range(step.shape[0]):
        table = step[h]
        diag = 0                                               # E[h-1, 0]
        left = 0                                               # E[h, 0]
        for j in range(1, n + 1):
            up = e[j]
            v = diag + table[pid[t, j - 1]]                    # GEN from (h-1, j-1)
            if up < v:                                         # SUP_X from (h-1, j)
                v = up
            if left < v:                                       # SUP_Y from (h, j-1)
                v = left
            diag = up
            e[j] = v
            left = v
    return e[n]


@njit(cache=True, nogil=True)
def exact_costs(step: np.ndarray, sup_x: int, pid: np.ndarray, length: np.ndarray, sup_y: np.ndarray,
                ids: np.ndarray) -> np.ndarray:
    """The A-GS total i + a of A-GS(X, 0, 0, Y) for every value in ``ids``."""
    e = np.zeros(pid.shape[1] + 1, dtype=np.int64)
    out = np.empty(ids.size, dtype=np.int64)
    for c in range(ids.size):
        t = ids[c]
        out[c] = _cost(step, pid, t, length[t], e) + sup_y[t] + sup_x
    return out


@njit(cache=True, nogil=True, inline="always")
def _lower(lower: np.ndarray, unmatched: np.ndarray, pid: np.ndarray, t: int, n: int) -> int:
    s = unmatched[min(n, unmatched.size - 1)]
    for j in range(n):
        s += lower[pid[t, j]]
    return s


@njit(cache=True, nogil=True)
def lower_bounds(lower: np.ndarray, unmatched: np.ndarray, pid: np.ndarray, length: np.ndarray,
                 ids: np.ndarray) -> np.ndarray:
    """The lower bound of :class:`align.XTables` for every value in ``ids``."""
    out = np.empty(ids.size, dtype=np.int64)
    for c in range(ids.size):
        out[c] = _lower(lower, unmatched, pid, ids[c], length[ids[c]])
    return out


@njit(cache=True, nogil=True, inline="always")
def _diagonal(step: np.ndarray, pid: np.ndarray, t: int, n: int) -> int:
    s = 0
    for h in range(min(step.shape[0], n)):
        v = step[h, pid[t, h]]
        if v < 0:
            s += v
    return s


@njit(cache=True, nogil=True)
def upper_bounds(step: np.ndarray, sup_x: int, pid: np.ndarray, length: np.ndarray, sup_y: np.ndarray,
                 ids: np.ndarray) -> np.ndarray:
    """The diagonal upper bound of :class:`align.XTables` for every value in ``ids``."""
    out = np.empty(ids.size, dtype=np.int64)
    for c in range(ids.size):
        t = ids[c]
        out[c] = sup_y[t] + sup_x + _diagonal(step, pid, t, length[t])
    return out


@njit(cache=True, nogil=True, inline="always")
def _better(cost: int, head: int, best: int, best_head: int) -> bool:
    return cost < best or (cost == best and head < best_head)


@njit(cache=True, nogil=True)
def nearest(step: np.ndarray, lower: np.ndarray, unmatched: np.ndarray, sup_x: int, pid: np.ndarray,
            length: np.ndarray, sup_y: np.ndarray, ids: np.ndarray, count: np.ndarray, head: np.ndarray) -> int:
    """argmin over ``ids`` of the A-GS total with X. Values are aligned exactly only when their
    lower bound does not exceed the best total found so far: first the ``FIRST_ROUND`` with
    the smallest bounds (a tight threshold), then, in one pass, the others."""
    bound = np.empty(ids.size, dtype=np.int64)
    for c in range(ids.size):
        t = ids[c]
        bound[c] = _lower(lower, unmatched, pid, t, length[t]) if count[t] else _DEAD
    cut = np.partition(bound, FIRST_ROUND)[FIRST_ROUND] if ids.size > FIRST_ROUND else bound.max()
    e = np.zeros(pid.shape[1] + 1, dtype=np.int64)
    best, best_head, best_t = np.iinfo(np.int64).max, np.iinfo(np.int64).max, -1
    for first_round in (True, False):
        for c in range(ids.size):
            if bound[c] == _DEAD or (bound[c] <= cut) != first_round or bound[c] > best:
                continue
            t = ids[c]
            cost = _cost(step, pid, t, length[t], e) + sup_y[t] + sup_x
            if _better(cost, head[t], best, best_head):
                best, best_head, best_t = cost, head[t], t
    return best_t


@njit(cache=True, nogil=True)
def farthest(step: np.ndarray, sup_x: int, pid: np.ndarray, length: np.ndarray, sup_y: np.ndarray,
             ids: np.ndarray, count: np.ndarray, head: np.ndarray) -> int:
    """argmax over ``ids`` of the A-GS total with X. SUPX + SUPY (suppressing both) bounds every
    alignment from above: the ``FIRST_ROUND`` values with the largest such bounds are aligned
    first; every other value is aligned only when that bound, then the diagonal alignment's
    (:func:`upper_bounds`), reaches the best total found so far."""
    bound = np.empty(ids.size, dtype=np.int64)
    for c in range(ids.size):
        t = ids[c]
        bound[c] = -(sup_y[t] + sup_x) if count[t] else _DEAD
    cut = np.partition(bound, FIRST_ROUND)[FIRST_ROUND] if ids.size > FIRST_ROUND else bound.max()
    e = np.zeros(pid.shape[1] + 1, dtype=np.int64)
    best, best_head, best_t = np.iinfo(np.int64).max, np.iinfo(np.int64).max, -1
    for first_round in (True, False):
        for c in range(ids.size):
            if bound[c] == _DEAD or (bound[c] <= cut) != first_round or bound[c] > best:
                continue
            t = ids[c]
            if not first_round and -(sup_y[t] + sup_x + _diagonal(step, pid, t, length[t])) > best:
                continue
            cost = -(_cost(step, pid, t, length[t], e) + sup_y[t] + sup_x)
            if _better(cost, head[t], best, best_head):
                best, best_head, best_t = cost, head[t], t
    return best_t
