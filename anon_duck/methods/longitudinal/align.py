"""Alignment of two trajectories: A-GS (Algorithm 2 of seed 004) and Baseline (Algorithm 1).

Two forms of each:

* a scalar form with the anonymized trajectory (the traceback of steps 26-36), used once
  per merge of formCluster and for the paper's worked example (Fig. 5 matrices);
* a batched cost-only form, one X against many candidate Ys, used for the argmax/argmin
  scans of Algorithms 3 and 4 (spec §3.6). For A-GS the matrix of totals C = i + a is
  shifted by the suppression chains, ``E[h, j] = C[h, j] - SUPY(j) - SUPX(h)`` (SUPY(j),
  SUPX(h): cost of suppressing y_1..y_j, x_1..x_h), which turns steps 15-23 into

      E[h, j] = min(E[h-1, j-1] + step(x_h, y_j), E[h-1, j], E[h, j-1]),   E[0, .] = E[., 0] = 0

  with ``step(x, y) = gen(x, y) - sup(y) - sup(x)``, read for each cell from X's rows of the
  model's tables (:class:`XTables`): two lookups in rows of a few KiB, adds and two
  minimums. The bounds are tables over the distinct candidate pairs (:class:`PairSet`). The
  DP, the bounds and the scans are compiled (:mod:`.kernel`), as is the scalar form's cell
  fill and traceback.

Costs are the integers of :class:`CostModel` (weighted LM times ``scale``), so the tie rule
"if there is a tie, A-GS selects generalization" is exact. Cell operations are tried in the
order of steps 15/22 — GEN, SUP_Y (suppress y_j), SUP_X (suppress x_h) — and the first
minimum wins (spec §3.2, A5). The batched forms return totals only, which do not depend on
the tie rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate

import numpy as np

from . import kernel
from .costs import CostModel
from .kernel import GEN, SUP_X, SUP_Y
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
    path cell by cell and reversing the pairs into position order (spec A19).

    Steps 22-23 compare totals i + a, so the fill keeps the total C = i + a of each cell and
    the chosen operation r; i and a of a cell are the sums of the operation costs along its
    path (each cell extends its predecessor's), so the result's i, a and their unweighted
    numerators are summed along the traceback path, and the full i/a matrices of Fig. 5 are
    rebuilt from r only when asked for."""
    xc, xa, yc, ya = (np.asarray(v, dtype=np.int64) for v in (x_codes, x_ages, y_codes, y_ages))
    r = kernel.ags_align(xc, xa, yc, ya, model.gen_i, model.gen_a, model.sup_i, model.sup_a,
                         offsets.i + offsets.a)                                                 # steps 1-25
    codes, ages, sums = kernel.traceback(r, xc, xa, yc, ya,                                     # steps 26-36
                                         (model.gen_i, model.gen_a, model.num_gen_i, model.num_gen_a),
                                         (model.sup_i, model.sup_a, model.num_sup_i, model.num_sup_a),
                                         model.icd.lca, model.age.lca)
    i, a, n_i, n_a = sums.tolist()
    result = Alignment(codes, ages, offsets.i + i, offsets.a + a, offsets.n_i + n_i, offsets.n_a + n_a)
    if with_matrices:
        return result, _matrices(model, r, xc, xa, yc, ya, offsets)
    return result


def _matrices(model: CostModel, r: np.ndarray, xc: np.ndarray, xa: np.ndarray, yc: np.ndarray, ya: np.ndarray,
              offsets: Offsets) -> AgsMatrices:
    """The i and a matrices of Fig. 5: each cell's sums extend those of the cell its operation
    came from (steps 16-21 applied along r)."""
    m, n = r.shape[0] - 1, r.shape[1] - 1
    ia = np.zeros((2, m + 1, n + 1), dtype=np.int64)
    ia[:, 0, 0] = offsets.i, offsets.a
    for h in range(m + 1):
        for j in range(n + 1):
            op = r[h, j]
            if op == GEN:
                cost = model.gen_i[xc[h - 1], yc[j - 1]], model.gen_a[xa[h - 1], ya[j - 1]]
                ia[:, h, j] = ia[:, h - 1, j - 1] + cost
            elif op == SUP_Y:
                ia[:, h, j] = ia[:, h, j - 1] + (model.sup_i[yc[j - 1]], model.sup_a[ya[j - 1]])
            elif op == SUP_X:
                ia[:, h, j] = ia[:, h - 1, j] + (model.sup_i[xc[h - 1]], model.sup_a[xa[h - 1]])
    return AgsMatrices(ia[0], ia[1], r)


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
    id ``P`` (:attr:`pad`) pads trajectories shorter than their block. The scans' lower
    bounds are tables over these ids (:class:`XTables`)."""

    key: np.ndarray         # (P,) sorted code * n_age + age
    codes: np.ndarray       # (P,)
    ages: np.ndarray        # (P,)
    n_age: int
    sup: np.ndarray         # (P + 1,) weighted sup of each pair, pad 0

    @classmethod
    def create(cls, model: CostModel, codes: np.ndarray, ages: np.ndarray) -> "PairSet":
        n_age = model.age.n
        key = np.unique(np.asarray(codes, dtype=np.int64) * n_age + np.asarray(ages, dtype=np.int64))
        pc, pa = key // n_age, key % n_age
        sup = np.append(model.sup(pc, pa), 0).astype(np.int64)
        return cls(key, pc, pa, n_age, sup)

    @property
    def pad(self) -> int:
        return int(self.key.size)

    def ids(self, codes: np.ndarray, ages: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Pair id of every (code, age) where ``valid``, the pad id elsewhere."""
        key = np.asarray(codes, dtype=np.int64) * self.n_age + np.asarray(ages, dtype=np.int64)
        return np.where(valid, np.searchsorted(self.key, key), self.pad).astype(np.int64)


@dataclass(frozen=True)
class XTables:
    """What a batched scan needs to know about one X = (x_1..x_m) (:mod:`.kernel`).

    The DP's ``step(x_h, y) = gen(x_h, y) - sup(y) - sup(x_h)`` (module docstring) is read
    cell by cell from X's rows of the model's gen_i/gen_a (:attr:`x`), so nothing of size
    m x P (every pair of D) is built per X: at 10K CDM-shaped persons (80K pairs, ~50 per
    trajectory) building those tables was most of MDAV'.
    ``lower`` and ``unmatched`` give two lower bounds of the A-GS total, and the scans use
    the larger (not in the paper; they let MDAV' skip alignments without changing any
    result). In any alignment each y_j is either suppressed (sup(y_j)) or generalized with
    one x_h (gen(x_h, y_j), each x_h with one y at most), and each x_h not generalized is
    suppressed. So (1) the Y side costs at least ``sum_j lower[0, y_j]`` with
    ``lower[0, p] = min(sup(p), min_h gen(x_h, p))``, and when Y has n < m pairs at least
    m - n pairs of X are suppressed on top of that, which costs at least the sum of the m - n
    smallest sup(x_h) (``unmatched[n]``); (2) writing the total as SUPX(m) plus, per GEN,
    gen(x_h, y_j) - sup(x_h), plus sup(y_j) per suppressed y_j, it is at least
    ``SUPX(m) + sum_j lower[1, y_j]`` with ``lower[1, p] = min(sup(p), min_h gen(x_h, p) -
    sup(x_h))``. (1) is the tighter for Ys that share pairs with X, (2) for the others; on
    D50-like cohorts their maximum halves the values MDAV' has to align."""

    x: tuple                # (gen_i, gen_a, x codes, x ages, sup(x_h)): the kernels' view of X
    sup_xs: np.ndarray      # (m,) sup(x_h)
    model: CostModel
    pairs: PairSet
    used: np.ndarray        # the pair ids whose bound terms are built (those of the candidates scanned)

    @classmethod
    def create(cls, model: CostModel, pairs: PairSet, x_codes: np.ndarray, x_ages: np.ndarray,
               used: np.ndarray | None = None) -> "XTables":
        """X's tables; the bound terms of the pairs ``used`` only (default: every pair), since a
        scan reads those of its candidates and D's later layouts hold a shrinking share of P."""
        xc = np.ascontiguousarray(x_codes, dtype=np.int64)
        xa = np.ascontiguousarray(x_ages, dtype=np.int64)
        sup_x = model.sup(xc, xa).astype(np.int64)
        if used is None:
            used = np.arange(pairs.pad, dtype=np.int64)
        return cls((model.gen_i, model.gen_a, xc, xa, sup_x), sup_x, model, pairs, used)

    @cached_property
    def _bound_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, rest), built on first use: the argmax scan reads neither, and at CDM shape
        building them is a pass over every pair of D."""
        _, _, xc, xa, sup_x = self.x
        model, pairs = self.model, self.pairs
        return kernel.x_lower(model.gen_i, model.gen_a, xc, xa, sup_x, pairs.codes, pairs.ages, pairs.sup,
                              *model.step_floor, self.used)

    @property
    def lower(self) -> np.ndarray:
        """(2, P + 1): the per-pair terms of the two lower bounds of the pairs ``used``; pad 0."""
        return self._bound_terms[0]

    @property
    def rest(self) -> np.ndarray:
        """(m + 1,): what rows h.. of the DP can still subtract (kernel.x_lower)."""
        return self._bound_terms[1]

    @property
    def sup_x(self) -> int:
        """SUPX(m): the cost of suppressing all of X."""
        return int(self.sup_xs.sum(dtype=np.int64))

    @cached_property
    def unmatched(self) -> np.ndarray:
        """(m + 1,): unmatched[n] = sum of the m - n smallest sup(x_h), for a Y of n <= m pairs."""
        smallest = [0, *accumulate(sorted(self.sup_xs.tolist()))]
        return np.array(smallest[::-1], dtype=np.int64)

    def lower_bound(self, cand: Candidates) -> np.ndarray:
        """Both sides of the lower bound for every candidate."""
        return kernel.lower_bounds(self.lower, self.unmatched, self.sup_x, cand.start, cand.flat)

    def upper_bound(self, cand: Candidates, sup_y: np.ndarray) -> np.ndarray:
        """An upper bound of the A-GS total of X with each Y: the cost of one feasible
        alignment, x_t against y_t for t <= min(m, n) (GEN, or both suppressed when that is
        cheaper: ``min(step, 0)``), every other pair suppressed (``SUPX(m) + SUPY(n)``);
        ``sup_y[t]`` = SUPY(n) of value t."""
        return kernel.upper_bounds(self.x, self.sup_x, cand.ids, cand.start, cand.y, sup_y)

    def band_bound(self, cand: Candidates, sup_y: np.ndarray, w: int = kernel.BAND) -> np.ndarray:
        """An upper bound of the A-GS total of X with each Y, tighter than the diagonal's: the
        best alignment whose DP path stays within ``w`` cells of the stretched diagonal
        (:func:`kernel._band`); exact once ``w`` reaches the longer side."""
        return kernel.band_bounds(self.x, self.sup_x, cand.ids, cand.start, cand.y, sup_y, w)

    def costs(self, cand: Candidates, sup_y: np.ndarray) -> np.ndarray:
        """The A-GS total i + a of A-GS(X, 0, 0, Y) for each Y (no traceback): steps 1-25 on
        the shifted matrix E."""
        return kernel.exact_costs(self.x, self.sup_x, cand.ids, cand.start, cand.y, sup_y)


@dataclass(frozen=True)
class Candidates:
    """Values laid out for the compiled scans (:mod:`.kernel`): candidate c is the value
    ``ids[c]``, its pair ids are ``flat[start[c]:start[c + 1]]`` (what the bounds read) and
    ``y`` holds the same pairs' code nodes, age nodes and sups (what the DP reads)."""

    ids: np.ndarray         # (N,) int64
    start: np.ndarray       # (N + 1,) int64
    flat: np.ndarray        # (sum of lengths,) int32
    y: tuple                # (codes, ages, sups) of flat, int64
    used: np.ndarray        # the distinct pair ids of flat, int64 (XTables.create)

    @classmethod
    def from_rows(cls, ids: np.ndarray, pid: np.ndarray, length: np.ndarray, pairs: PairSet) -> "Candidates":
        """The values ``ids`` of padded pair-id rows ``pid[t, :length[t]]`` over ``pairs``."""
        n = length[ids]
        start = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
        rows = pid[ids]
        flat = rows[np.arange(rows.shape[1])[None, :] < n[:, None]]
        y = (pairs.codes[flat].astype(np.int64), pairs.ages[flat].astype(np.int64), pairs.sup[flat].astype(np.int64))
        return cls(ids.astype(np.int64), start, flat.astype(np.int32), y, np.unique(flat).astype(np.int64))


@dataclass
class Bucket:
    """Candidate trajectories of similar length, padded to ``width`` (pad = node 0 / pair id
    ``pairs.pad``, never read): Baseline's scans (numpy), and A-GS's full cost-only scan.

    ``scum[:, j]`` is the cost of suppressing y_1..y_j and ``pid`` the pair ids, one row per
    candidate."""

    traj: np.ndarray        # (N,) distinct-trajectory ids
    codes: np.ndarray       # (N, width)
    ages: np.ndarray        # (N, width)
    length: np.ndarray      # (N,)
    scum: np.ndarray        # (N, width + 1)
    pairs: PairSet
    pid: np.ndarray         # (N, width)

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
        return cls(traj, codes, ages, length, scum, pairs, pairs.ids(codes, ages, mask))

    @property
    def sup_y(self) -> np.ndarray:
        """SUPY(n) of every candidate: the cost of suppressing all of it."""
        return self.scum[np.arange(self.traj.size), self.length].astype(np.int64)


def ags_costs(model: CostModel, x_codes: np.ndarray, x_ages: np.ndarray, b: Bucket) -> np.ndarray:
    """Total cost i + a of A-GS(X, 0, 0, Y) for every Y of the bucket (no traceback).

    The recurrence is Algorithm 2's on totals (spec §3.2): the argmin of steps 22-23 picks by
    the total, so the total of cell (m, n) is the same whatever the tie rule."""
    cand = Candidates.from_rows(np.arange(b.traj.size), b.pid, b.length, b.pairs)
    return XTables.create(model, b.pairs, x_codes, x_ages).costs(cand, b.sup_y)


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
