"""Alignment of two trajectories: A-GS (Algorithm 2 of seed 004) and Baseline (Algorithm 1).

Two forms of each:

* a scalar form with the anonymized trajectory (the traceback of steps 26-36), used once
  per merge of formCluster and for the paper's worked example (Fig. 5 matrices);
* a batched cost-only form, one X against many candidate Ys in numpy, used for the
  argmax/argmin scans of Algorithms 3 and 4 (spec §3.6). For A-GS the matrix of totals
  C = i + a is shifted by the suppression chains, ``E[h, j] = C[h, j] - SUPY(j) - SUPX(h)``
  (SUPY(j), SUPX(h): cost of suppressing y_1..y_j, x_1..x_h), which turns steps 15-23 into

      E[h, j] = min(E[h-1, j-1] + step(x_h, y_j), E[h-1, j], E[h, j-1]),   E[0, .] = E[., 0] = 0

  with ``step(x, y) = gen(x, y) - sup(y) - sup(x)``. Per X, ``step`` is a table over the
  distinct candidate pairs (:class:`PairSet`, :class:`XTables`), so a DP row costs one
  gather, one add, one minimum and one prefix minimum (the SUP_Y chain) over candidates
  laid out column-wise.

Costs are the integers of :class:`CostModel` (weighted LM times ``scale``), so the tie rule
"if there is a tie, A-GS selects generalization" is exact. Cell operations are tried in the
order of steps 15/22 — GEN, SUP_Y (suppress y_j), SUP_X (suppress x_h) — and the first
minimum wins (spec §3.2, A5). The batched forms return totals only, which do not depend on
the tie rule.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .costs import CostModel

GEN, SUP_Y, SUP_X = 0, 1, 2
OP_NAMES = {GEN: "GEN", SUP_Y: "SUP_Y", SUP_X: "SUP_X"}


@dataclass(frozen=True)
class Alignment:
    """The result ``{T~, i, a}`` of an alignment, plus what the paper leaves implicit.

    ``i``/``a`` are the weighted, scaled ILM/ALM including the offsets ILM(X), ALM(X);
    ``n_i``/``n_a`` the same sums unweighted (LM numerators over |ICD| and |Age|)."""

    codes: np.ndarray
    ages: np.ndarray
    i: int
    a: int
    n_i: int
    n_a: int

    @property
    def total(self) -> int:
        return self.i + self.a


@dataclass(frozen=True)
class Offsets:
    """ILM(X), ALM(X) carried into an alignment (footnote 6; formCluster step 3)."""

    i: int = 0
    a: int = 0
    n_i: int = 0
    n_a: int = 0


@dataclass(frozen=True)
class AgsMatrices:
    """The matrices i, a, r of Algorithm 2 (Fig. 5), as scaled integers and op codes."""

    i: np.ndarray
    a: np.ndarray
    r: np.ndarray


def ags(model: CostModel, x_codes: np.ndarray, x_ages: np.ndarray, y_codes: np.ndarray, y_ages: np.ndarray,
        offsets: Offsets = Offsets(), *, with_matrices: bool = False) -> Alignment | tuple[Alignment, AgsMatrices]:
    """A-GS(X, ILM(X), ALM(X), Y): Algorithm 2, steps 1-37, with the traceback following the
    path cell by cell and reversing the pairs into position order (spec A19)."""
    xc, xa, yc, ya = (np.asarray(v, dtype=np.int64) for v in (x_codes, x_ages, y_codes, y_ages))
    m, n = xc.size, yc.size
    gi, ga = model.gen_i, model.gen_a
    si, sa = model.sup_i, model.sup_a
    ngi, nga, nsi, nsa = model.num_gen_i, model.num_gen_a, model.num_sup_i, model.num_sup_a
    # four running sums per cell follow the chosen operation: weighted i, a; unweighted n_i, n_a
    I = [[0] * (n + 1) for _ in range(m + 1)]
    A = [[0] * (n + 1) for _ in range(m + 1)]
    NI = [[0] * (n + 1) for _ in range(m + 1)]
    NA = [[0] * (n + 1) for _ in range(m + 1)]
    R = [[-1] * (n + 1) for _ in range(m + 1)]
    I[0][0], A[0][0], NI[0][0], NA[0][0] = offsets.i, offsets.a, offsets.n_i, offsets.n_a
    sx = [(int(si[c]), int(sa[g]), int(nsi[c]), int(nsa[g])) for c, g in zip(xc, xa)]
    sy = [(int(si[c]), int(sa[g]), int(nsi[c]), int(nsa[g])) for c, g in zip(yc, ya)]
    for h in range(1, m + 1):                                  # steps 3-7
        s = sx[h - 1]
        I[h][0], A[h][0], NI[h][0], NA[h][0], R[h][0] = (I[h - 1][0] + s[0], A[h - 1][0] + s[1],
                                                          NI[h - 1][0] + s[2], NA[h - 1][0] + s[3], SUP_X)
    for j in range(1, n + 1):                                  # steps 8-12
        s = sy[j - 1]
        I[0][j], A[0][j], NI[0][j], NA[0][j], R[0][j] = (I[0][j - 1] + s[0], A[0][j - 1] + s[1],
                                                          NI[0][j - 1] + s[2], NA[0][j - 1] + s[3], SUP_Y)
    for h in range(1, m + 1):                                  # steps 13-25
        c_h, g_h = xc[h - 1], xa[h - 1]
        row_gi, row_ga, row_ngi, row_nga = gi[c_h], ga[g_h], ngi[c_h], nga[g_h]
        sxh = sx[h - 1]
        for j in range(1, n + 1):
            c_j, g_j = yc[j - 1], ya[j - 1]
            gen_i, gen_a = int(row_gi[c_j]), int(row_ga[g_j])
            syj = sy[j - 1]
            cand_gen = I[h - 1][j - 1] + gen_i + A[h - 1][j - 1] + gen_a          # steps 16, 19
            cand_supy = I[h][j - 1] + syj[0] + A[h][j - 1] + syj[1]              # steps 17, 20
            cand_supx = I[h - 1][j] + sxh[0] + A[h - 1][j] + sxh[1]              # steps 18, 21
            if cand_gen <= cand_supy and cand_gen <= cand_supx:                  # step 22, GEN first
                I[h][j], A[h][j] = I[h - 1][j - 1] + gen_i, A[h - 1][j - 1] + gen_a
                NI[h][j] = NI[h - 1][j - 1] + int(row_ngi[c_j])
                NA[h][j] = NA[h - 1][j - 1] + int(row_nga[g_j])
                R[h][j] = GEN
            elif cand_supy <= cand_supx:
                I[h][j], A[h][j] = I[h][j - 1] + syj[0], A[h][j - 1] + syj[1]
                NI[h][j], NA[h][j], R[h][j] = NI[h][j - 1] + syj[2], NA[h][j - 1] + syj[3], SUP_Y
            else:
                I[h][j], A[h][j] = I[h - 1][j] + sxh[0], A[h - 1][j] + sxh[1]
                NI[h][j], NA[h][j], R[h][j] = NI[h - 1][j] + sxh[2], NA[h - 1][j] + sxh[3], SUP_X
    out_c: list[int] = []
    out_a: list[int] = []
    h, j = m, n
    while h >= 1 or j >= 1:                                    # steps 26-36
        op = R[h][j]
        if op == GEN:
            out_c.append(int(model.icd.lca[xc[h - 1], yc[j - 1]]))
            out_a.append(int(model.age.lca[xa[h - 1], ya[j - 1]]))
            h, j = h - 1, j - 1
        elif op == SUP_Y:
            j -= 1
        else:
            h -= 1
    result = Alignment(np.array(out_c[::-1], dtype=np.int64), np.array(out_a[::-1], dtype=np.int64),
                       I[m][n], A[m][n], NI[m][n], NA[m][n])
    if with_matrices:
        return result, AgsMatrices(np.array(I, dtype=np.int64), np.array(A, dtype=np.int64),
                                   np.array(R, dtype=np.int64))
    return result


def baseline(model: CostModel, x_codes: np.ndarray, x_ages: np.ndarray, y_codes: np.ndarray, y_ages: np.ndarray,
             offsets: Offsets = Offsets()) -> Alignment:
    """Baseline(X, ILM(X), ALM(X), Y): Algorithm 1. Pairs with the same index are generalized
    to their LCAs (steps 4-9), the tail of the longer trajectory is suppressed (steps 10-14).
    Weighted like A-GS (spec A7; at w = 0.5/0.5 this only rescales)."""
    xc, xa, yc, ya = (np.asarray(v, dtype=np.int64) for v in (x_codes, x_ages, y_codes, y_ages))
    s = min(xc.size, yc.size)                                                # step 3
    mc, ma, nc, na = xc[:s], xa[:s], yc[:s], ya[:s]
    codes, ages = model.icd.lca[mc, nc], model.age.lca[ma, na]               # step 5
    i = offsets.i + int(model.gen_i[mc, nc].sum())                           # steps 7-8
    a = offsets.a + int(model.gen_a[ma, na].sum())
    n_i = offsets.n_i + int(model.num_gen_i[mc, nc].sum())
    n_a = offsets.n_a + int(model.num_gen_a[ma, na].sum())
    zc, za = (xc[s:], xa[s:]) if xc.size > yc.size else (yc[s:], ya[s:])    # step 10
    i += int(model.sup_i[zc].sum())                                          # steps 11-14
    a += int(model.sup_a[za].sum())
    n_i += int(model.num_sup_i[zc].sum())
    n_a += int(model.num_sup_a[za].sum())
    return Alignment(codes.astype(np.int64), ages.astype(np.int64), i, a, n_i, n_a)


@dataclass(frozen=True)
class PairSet:
    """The distinct (code, age) node pairs the candidates are made of, numbered ``0..P-1``;
    id ``P`` (:attr:`pad`) pads trajectories shorter than their block.

    ``gen_i[c, p]``/``gen_a[g, p]`` are the model's weighted generalization costs of any code
    node c / age node g against pair p (steps 16 and 19), precomputed so that the step table
    of an X is two row gathers (``None`` when that would take more than ~128 MiB)."""

    key: np.ndarray         # (P,) sorted code * n_age + age
    codes: np.ndarray       # (P,)
    ages: np.ndarray        # (P,)
    n_age: int
    sup: np.ndarray         # (P,) weighted sup of each pair
    gen_i: np.ndarray | None
    gen_a: np.ndarray | None

    MAX_CACHED = 1 << 24

    @classmethod
    def create(cls, model: CostModel, codes: np.ndarray, ages: np.ndarray) -> "PairSet":
        n_age = model.age.n
        key = np.unique(np.asarray(codes, dtype=np.int64) * n_age + np.asarray(ages, dtype=np.int64))
        pc, pa = key // n_age, key % n_age
        cached = (model.icd.n + model.age.n) * key.size <= cls.MAX_CACHED
        return cls(key, pc, pa, n_age, model.sup(pc, pa),
                   np.ascontiguousarray(model.gen_i[:, pc]) if cached else None,
                   np.ascontiguousarray(model.gen_a[:, pa]) if cached else None)

    @property
    def pad(self) -> int:
        return int(self.key.size)

    def ids(self, codes: np.ndarray, ages: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Pair id of every (code, age) where ``valid``, the pad id elsewhere."""
        key = np.asarray(codes, dtype=np.int64) * self.n_age + np.asarray(ages, dtype=np.int64)
        return np.where(valid, np.searchsorted(self.key, key), self.pad).astype(np.intp)

    def gen(self, model: CostModel, x_codes: np.ndarray, x_ages: np.ndarray) -> np.ndarray:
        """(m, P): gen(x_h, p) = gen_i + gen_a of every pair of X against every pair p."""
        if self.gen_i is not None and self.gen_a is not None:
            return self.gen_i[x_codes] + self.gen_a[x_ages]
        return model.gen_i[x_codes][:, self.codes] + model.gen_a[x_ages][:, self.ages]


@dataclass(frozen=True)
class XTables:
    """What a batched scan needs to know about one X = (x_1..x_m), as tables over a PairSet.

    ``step[h - 1, p]`` is the DP row table of x_h (module docstring). ``lower`` and
    ``unmatched`` give an exact lower bound of the A-GS total (spec §3.2):
    in any alignment each y_j is either suppressed (sup(y_j)) or generalized with one x_h
    (gen(x_h, y_j), each GEN counted for one y only), so the Y side costs at least
    ``sum_j lower[y_j]`` with ``lower[p] = min(sup(p), min_h gen(x_h, p))``; and when Y has
    n < m pairs at least m - n pairs of X are suppressed on top of that, which costs at least
    the sum of the m - n smallest sup(x_h) (``unmatched[n]``)."""

    step: np.ndarray        # (m, P + 1), pad column 0 (never read by the DP of a real pair)
    lower: np.ndarray       # (P + 1,), pad 0
    unmatched: np.ndarray   # (m + 1,): unmatched[n] for a Y of n <= m pairs, 0 from n = m on
    sup_x: int              # SUPX(m)

    @classmethod
    def create(cls, model: CostModel, pairs: PairSet, x_codes: np.ndarray, x_ages: np.ndarray,
               dtype: type) -> "XTables":
        xc, xa = np.asarray(x_codes, dtype=np.int64), np.asarray(x_ages, dtype=np.int64)
        m, p = xc.size, pairs.pad
        sup_x, sup_p = model.sup(xc, xa), pairs.sup
        gen = pairs.gen(model, xc, xa)                                  # steps 16 + 19, (m, P)
        step = np.zeros((m, p + 1), dtype=dtype)
        step[:, :p] = gen - sup_p[None, :] - sup_x[:, None]
        lower = np.zeros(p + 1, dtype=np.int64)
        lower[:p] = np.minimum(sup_p, gen.min(axis=0)) if m else sup_p
        smallest = np.concatenate(([0], np.cumsum(np.sort(sup_x))))
        return cls(step, lower, smallest[m - np.arange(m + 1)], int(sup_x.sum()))

    def lower_bound(self, pid: np.ndarray, length: np.ndarray) -> np.ndarray:
        """A lower bound of the A-GS total of X with each Y (pid: (width, N) pair ids)."""
        m = self.unmatched.size - 1
        return self.lower.take(pid).sum(axis=0) + self.unmatched[np.minimum(length, m)]

    def costs(self, pid: np.ndarray, length: np.ndarray, sup_y: np.ndarray) -> np.ndarray:
        """The A-GS total i + a of A-GS(X, 0, 0, Y) for each Y (no traceback): steps 1-25 on
        the shifted matrix E, row by row; ``sup_y[c]`` = SUPY(n) of candidate c."""
        width, n_cand = pid.shape
        e = np.zeros((width + 1, n_cand), dtype=self.step.dtype)     # rows E[h, 0..width]^T
        row = np.empty((width, n_cand), dtype=self.step.dtype)
        for table in self.step:                                       # steps 13-25, one x_h at a time
            np.take(table, pid, out=row, mode="clip")                 # ids are in range: no checks
            row += e[:-1]                                             # GEN from (h-1, j-1)
            np.minimum(row, e[1:], out=row)                           # SUP_X from (h-1, j)
            for j in range(width):                                    # SUP_Y chain from (h, j-1)
                np.minimum(row[j], e[j], out=e[j + 1])
        return e[length, np.arange(n_cand)].astype(np.int64) + sup_y + self.sup_x


@dataclass
class Bucket:
    """Candidate trajectories of similar length, padded to ``width`` (pad = node 0 / pair id
    ``pairs.pad``, never read).

    ``scum[:, j]`` is the cost of suppressing y_1..y_j and ``pid`` the pair ids laid out
    column-wise (one column per candidate), both fixed for the whole run."""

    traj: np.ndarray        # (N,) distinct-trajectory ids
    codes: np.ndarray       # (N, width)
    ages: np.ndarray        # (N, width)
    length: np.ndarray      # (N,)
    scum: np.ndarray        # (N, width + 1)
    pairs: PairSet
    pid: np.ndarray         # (width, N)

    @classmethod
    def create(cls, model: CostModel, traj: np.ndarray, codes: np.ndarray, ages: np.ndarray,
               length: np.ndarray, dtype: type, pairs: PairSet | None = None) -> "Bucket":
        width = codes.shape[1]
        mask = np.arange(width)[None, :] < length[:, None]
        sup = np.where(mask, model.sup(codes, ages), 0).astype(dtype)
        scum = np.zeros((traj.size, width + 1), dtype=dtype)
        np.cumsum(sup, axis=1, out=scum[:, 1:])
        if pairs is None:
            pairs = PairSet.create(model, codes[mask], ages[mask])
        pid = np.ascontiguousarray(pairs.ids(codes, ages, mask).T)
        return cls(traj, codes, ages, length, scum, pairs, pid)

    @property
    def sup_y(self) -> np.ndarray:
        """SUPY(n) of every candidate: the cost of suppressing all of it."""
        return self.scum[np.arange(self.traj.size), self.length].astype(np.int64)

    def keep(self, rows: np.ndarray) -> None:
        """Drop the candidates that left the pool (rows: boolean mask of those that stay)."""
        self.traj, self.codes, self.ages = self.traj[rows], self.codes[rows], self.ages[rows]
        self.length, self.scum, self.pid = self.length[rows], self.scum[rows], np.ascontiguousarray(self.pid[:, rows])


def ags_costs(model: CostModel, x_codes: np.ndarray, x_ages: np.ndarray, b: Bucket) -> np.ndarray:
    """Total cost i + a of A-GS(X, 0, 0, Y) for every Y of the bucket (no traceback).

    The recurrence is Algorithm 2's on totals (spec §3.2): the argmin of steps 22-23 picks by
    the total, so the total of cell (m, n) is the same whatever the tie rule."""
    tables = XTables.create(model, b.pairs, x_codes, x_ages, b.scum.dtype)
    return tables.costs(b.pid, b.length, b.sup_y)


def baseline_costs(model: CostModel, x_codes: np.ndarray, x_ages: np.ndarray, b: Bucket) -> np.ndarray:
    """Total cost i + a of Baseline(X, 0, 0, Y) for every Y of the bucket (Algorithm 1)."""
    xc, xa = np.asarray(x_codes, dtype=np.int64), np.asarray(x_ages, dtype=np.int64)
    m = xc.size
    width = b.codes.shape[1]
    s = np.minimum(b.length, m)
    cols = min(m, width)
    gen = model.gen_i[xc[:cols, None], b.codes[:, :cols].T] + model.gen_a[xa[:cols, None], b.ages[:, :cols].T]
    matched = (np.arange(cols)[:, None] < s[None, :])
    cost = (gen * matched).sum(axis=0)
    rows = np.arange(b.traj.size)
    cost += b.scum[rows, b.length].astype(np.int64) - b.scum[rows, s].astype(np.int64)   # Y's tail
    sup_x = np.concatenate(([0], np.cumsum(model.sup(xc, xa))))
    cost += sup_x[m] - sup_x[s]                                                          # X's tail
    return cost
