"""MDAV' (Algorithm 3 of seed 004) and formCluster (Algorithm 4).

D, the pool of remaining records, is kept grouped by distinct trajectory value: the distance
of a record depends only on its trajectory, so each scan considers every distinct value once
(compiled, :mod:`.kernel`, over the tables of :class:`align.XTables`), and records of one value leave the pool in
ascending record order. Ties of "most frequent", argmax and argmin go to the value holding
the smallest remaining record (spec A5); "most frequent" is ordered-sequence equality (A10).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..base import Progress
from . import kernel
from .align import Alignment, Bucket, Candidates, Offsets, PairSet, XTables, ags, baseline, baseline_costs
from .costs import CostModel


@dataclass(frozen=True)
class Cluster:
    """One cluster C of formCluster: its members (in the order they joined, seed first) and
    the final representative W~ with the chain's accumulated ILM/ALM (step 8)."""

    members: np.ndarray
    codes: np.ndarray
    ages: np.ndarray
    i: int
    a: int
    n_i: int
    n_a: int


@dataclass(frozen=True)
class Trajectories:
    """The distinct trajectory values of D (padded node ids) and each record's value."""

    codes: np.ndarray      # (n_traj, max_len)
    ages: np.ndarray       # (n_traj, max_len)
    length: np.ndarray     # (n_traj,)
    of_record: np.ndarray  # (n_records,) trajectory id of record rec = 0..n-1

    @classmethod
    def from_pairs(cls, traj: np.ndarray, seq: np.ndarray, code: np.ndarray, age: np.ndarray,
                   of_record: np.ndarray) -> "Trajectories":
        n_traj = int(of_record.max()) + 1 if of_record.size else 0
        length = np.bincount(traj, minlength=n_traj).astype(np.int64)
        width = int(length.max()) if length.size else 0
        codes = np.zeros((n_traj, width), dtype=np.int64)
        ages = np.zeros((n_traj, width), dtype=np.int64)
        codes[traj, seq] = code
        ages[traj, seq] = age
        return cls(codes, ages, length, of_record.astype(np.int64))

    def pairs(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        n = int(self.length[t])
        return self.codes[t, :n], self.ages[t, :n]


class Pool:
    """D of Algorithms 3-4: the records not yet in a cluster.

    A-GS scans are exact but pruned (not in the paper; a speed-up that cannot change the
    result): Algorithm 4's argmin aligns exactly only the values whose lower bound
    (:meth:`XTables.lower_bound`) does not exceed a cost already reached, and Algorithm 3's
    argmax only those whose upper bounds — suppressing both trajectories (SUPX + SUPY), then
    the diagonal alignment (:meth:`XTables.upper_bound`), then the best alignment within a
    band around the diagonal (:meth:`XTables.band_bound`) — reach the best cost found so far.
    Every value that can attain or tie the optimum is aligned exactly, so the result, ties
    included, is that of the full scan (``tests/test_longitudinal_pruning.py``). The scans
    are compiled (:mod:`.kernel`); with ``workers`` > 1 their second pass runs on that many
    threads over disjoint ranges of D (:meth:`_split`), with the same result. Baseline scans
    are cheap and stay full, in numpy."""

    SPLIT_FROM = 1024       # values in the layout from which a scan's second pass is split

    def __init__(self, model: CostModel, trajs: Trajectories, alignment: str, workers: int = 1) -> None:
        self.model, self.trajs = model, trajs
        self.alignment = alignment
        self.workers = max(1, workers)
        self._threads: ThreadPoolExecutor | None = None
        self.align = ags if alignment == "ags" else baseline
        of = trajs.of_record
        self.by_traj = np.lexsort((np.arange(of.size), of))       # records grouped by value, ascending
        n_traj = trajs.length.size
        self.start = np.concatenate(([0], np.cumsum(np.bincount(of, minlength=n_traj))))
        self.taken = np.zeros(n_traj, dtype=np.int64)
        self.count = np.diff(self.start)
        self.head = self.by_traj[np.minimum(self.start[:-1], max(of.size - 1, 0))] if of.size \
            else np.zeros(n_traj, dtype=np.int64)                 # smallest remaining record of each value
        self.size = int(of.size)
        width = trajs.codes.shape[1]
        self.dtype = np.int32 if model.max_total(2 * width + 2) < 2 ** 31 else np.int64
        valid = np.arange(width)[None, :] < trajs.length[:, None]
        self.pairs = PairSet.create(model, trajs.codes[valid], trajs.ages[valid])
        self.pid = self.pairs.ids(trajs.codes, trajs.ages, valid)                    # (n_traj, width)
        self.sup_y = np.where(valid, model.sup(trajs.codes, trajs.ages), 0).sum(axis=1).astype(np.int64)
        self._layout(np.flatnonzero(self.count > 0))

    def _layout(self, live: np.ndarray) -> None:
        """The values ``live`` in scan order (Baseline: as length buckets, concatenated); a
        value that leaves D stays in it, with count 0, until the next layout."""
        if self.alignment == "ags":
            self.order = live
            self.cand = Candidates.from_rows(live, self.pid, self.trajs.length, self.pairs)
        else:
            self.buckets = _make_buckets(self.model, self.trajs, live, self.pairs, self.dtype)
            self.order = np.concatenate([b.traj for b in self.buckets])
        self.n_dead = 0

    def first_record(self, t: np.ndarray) -> np.ndarray:
        """Smallest remaining record of each value in ``t`` (the tie-break key)."""
        return self.head[t]

    def take(self, t: int) -> int:
        """Remove the smallest remaining record with value t from D."""
        rec = int(self.head[t])
        self.taken[t] += 1
        self.count[t] -= 1
        self.size -= 1
        if self.count[t]:
            self.head[t] = self.by_traj[self.start[t] + self.taken[t]]
        else:
            self.n_dead += 1
        return rec

    def most_frequent(self) -> int:
        """Algorithm 3 steps 3/12: the value with the most remaining records."""
        return int(kernel.most_frequent(self.count, self.head))

    def _live_layout(self) -> None:
        """Drop the dead values from the layout once they are half of it."""
        if 2 * self.n_dead > self.order.size:
            self._layout(self.order[self.count[self.order] > 0])

    def distances(self, codes: np.ndarray, ages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(value ids, i + a of aligning X with each) for every value still in D: Baseline's
        scan, a handful of gathers per value."""
        self._live_layout()
        d = np.concatenate([baseline_costs(self.model, codes, ages, b) for b in self.buckets])
        alive = self.count[self.order] > 0
        return self.order[alive], d[alive]

    def farthest(self, codes: np.ndarray, ages: np.ndarray) -> int:
        """Algorithm 3 steps 4/7/13: argmax over D of the alignment cost with X."""
        if self.alignment != "ags":
            t, d = self.distances(codes, ages)
            return self._first(t[d == d.max()])
        self._live_layout()
        tables = XTables.create(self.model, self.pairs, codes, ages)
        c = self.cand
        if not self._splits():
            return int(kernel.farthest(tables.x, tables.sup_x, c.ids, c.start, c.y, self.sup_y, self.count, self.head))
        bound, cut = kernel.farthest_cut(tables.sup_x, c.ids, self.sup_y, self.count)
        args = (tables.x, tables.sup_x, c.ids, c.start, c.y, self.sup_y, self.head, bound)
        best = _no_best()
        shared = best[:1].copy()
        kernel.farthest_round(*args, True, cut, best, shared, 0, c.ids.size)
        return int(self._split(lambda b, lo, hi: kernel.farthest_round(*args, False, cut, b, shared, lo, hi),
                               best)[2])

    def nearest(self, codes: np.ndarray, ages: np.ndarray) -> int:
        """Algorithm 4 step 3: argmin over D of the alignment cost with the representative."""
        if self.alignment != "ags":
            t, d = self.distances(codes, ages)
            return self._first(t[d == d.min()])
        self._live_layout()
        c = self.cand
        tables = XTables.create(self.model, self.pairs, codes, ages, c.used)
        args = (tables.x, tables.lower, tables.rest, tables.unmatched, tables.sup_x, c.ids, c.start, c.flat, c.y,
                self.sup_y, self.count, self.head)
        if not self._splits():
            return int(kernel.nearest(*args))
        cut = kernel.nearest_cut(tables.lower, tables.unmatched, tables.sup_x, c.ids, c.start, c.flat, self.count)
        sums = np.empty((c.ids.size, 3), dtype=np.int64)
        best = _no_best()
        shared = best[:1].copy()
        kernel.nearest_pass(*args, True, cut, best, shared, sums, 0, c.ids.size)
        if best[0] > cut:
            best = self._split(lambda b, lo, hi: kernel.nearest_pass(*args, False, cut, b, shared, sums, lo, hi),
                               best)
        return int(best[2])

    def _splits(self) -> bool:
        """Whether a scan's second pass runs on ``workers`` threads (the kernels release the
        GIL): only with more than one worker and a layout worth the hand-off."""
        return self.workers > 1 and self.cand.ids.size >= self.SPLIT_FROM

    def _split(self, run: Callable[[np.ndarray, int, int], None], best: np.ndarray) -> np.ndarray:
        """``run(best', lo, hi)`` over ``2 * workers`` disjoint ranges of the layout side by side,
        each from its own copy of ``best`` (total, head, value), pruning with the totals the
        others find (the kernels' ``shared``); the smallest (total, head) of the copies is what
        one pass over the whole layout would have found, since each range keeps every value
        that can beat or tie any total found."""
        edges = np.linspace(0, self.cand.ids.size, 2 * self.workers + 1).astype(np.int64)
        copies = [best.copy() for _ in range(edges.size - 1)]
        if self._threads is None:
            self._threads = ThreadPoolExecutor(self.workers, thread_name_prefix="mdav")
        list(self._threads.map(lambda k: run(copies[k], int(edges[k]), int(edges[k + 1])), range(len(copies))))
        return min(copies, key=lambda b: (int(b[0]), int(b[1])))

    def close(self) -> None:
        """Stop the scan threads (if any were started)."""
        if self._threads is not None:
            self._threads.shutdown()
            self._threads = None

    def _first(self, ties: np.ndarray) -> int:
        """Tie rule (spec A5): the value holding the smallest remaining record."""
        return int(ties[np.argmin(self.first_record(ties))])

    def remaining_records(self) -> np.ndarray:
        alive = np.flatnonzero(self.count > 0)
        parts = [self.by_traj[self.start[t] + self.taken[t]: self.start[t + 1]] for t in alive]
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def _no_best() -> np.ndarray:
    """(total, head, value) of a scan that has aligned nothing yet."""
    return np.array([kernel.NO_BEST, kernel.NO_BEST, -1], dtype=np.int64)


def _make_buckets(model: CostModel, trajs: Trajectories, ids: np.ndarray, pairs: PairSet,
                  dtype: type) -> list[Bucket]:
    """Group the values ``ids`` by length so padding stays small (a bucket's widest member is
    at most ~1.25x its shortest, or 2 pairs longer)."""
    order = ids[np.argsort(trajs.length[ids], kind="stable")]
    lengths = trajs.length[order]
    buckets, lo = [], 0
    while lo < order.size:
        limit = max(int(lengths[lo] * 1.25), int(lengths[lo]) + 2)
        hi = int(np.searchsorted(lengths, limit, side="right"))
        idx = order[lo:hi]
        width = int(lengths[hi - 1])
        buckets.append(Bucket.create(model, idx.astype(np.int64), trajs.codes[idx, :width], trajs.ages[idx, :width],
                                     trajs.length[idx], dtype, pairs))
        lo = hi
    return buckets


def form_cluster(pool: Pool, t: int, n: int) -> Cluster:
    """formCluster(W, n): Algorithm 4. The seed W leaves D (step 1); n - 1 times the record
    nearest to the running representative W~ joins and W~ becomes their alignment, carrying
    the chain's ILM/ALM as offsets (steps 2-6). Every member is released as W~ (step 7)."""
    members = [pool.take(t)]                                                   # step 1
    codes, ages = pool.trajs.pairs(t)
    acc = Alignment(codes, ages, 0, 0, 0, 0)
    for _ in range(n - 1):                                                     # step 2
        z = pool.nearest(acc.codes, acc.ages)                                  # step 3
        zc, za = pool.trajs.pairs(z)
        acc = pool.align(pool.model, acc.codes, acc.ages, zc, za,
                         Offsets(acc.i, acc.a, acc.n_i, acc.n_a))             # step 4
        members.append(pool.take(z))                                           # step 5
    return Cluster(np.array(members, dtype=np.int64), acc.codes, acc.ages, acc.i, acc.a, acc.n_i, acc.n_a)


def mdav(pool: Pool, k: int, *, final_pick: str, rng: np.random.Generator, progress: Progress) -> list[Cluster]:
    """MDAV'(D): Algorithm 3 (steps 1-19; step 20's ratios are computed by the caller)."""
    total = pool.size
    clusters: list[Cluster] = []

    def emit(c: Cluster) -> None:
        clusters.append(c)
        progress("MDAV'", total - pool.size, total)

    while pool.size >= 3 * k:                                                  # step 2
        f = pool.most_frequent()                                               # step 3
        x = pool.farthest(*pool.trajs.pairs(f))                                # step 4
        emit(form_cluster(pool, x, k))                                         # steps 5-6
        y = pool.farthest(*pool.trajs.pairs(x))                                # step 7
        emit(form_cluster(pool, y, k))                                         # steps 8-9
    while pool.size >= 2 * k:                                                  # step 11
        f = pool.most_frequent()                                               # step 12
        x = pool.farthest(*pool.trajs.pairs(f))                                # step 13
        emit(form_cluster(pool, x, k))                                         # steps 14-15
    if pool.size:
        remaining = pool.remaining_records()                                   # step 17
        r = int(remaining[0]) if final_pick == "lowest_id" else int(rng.choice(remaining))
        emit(form_cluster(pool, int(pool.trajs.of_record[r]), pool.size))     # steps 18-19
    return clusters
