"""ArtUC (Algorithm 1 of seed 000) and its anytime adaptation (Algorithm 2), on data pulled
once: the records of the constraint boxes (demographics in record order) and their code ids.

Phases and step numbers follow the paper; resolutions follow the spec digest (A1-A6, see
docs/artuc.md): Step 5 loops while |G| >= k; the seed is the smallest remaining record; ties go
to the smallest record / cluster; leftovers (Step 13) and merge partners (Step 20) come from
the record's / cluster's own group and minimize the NCP *increase* of the cluster; the merge
loop stops at the first C_UL without a partner unless ``exhaustive_merge``.
"""
from __future__ import annotations

import heapq
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ...errors import InfeasibleError
from ..gendiag import GenDiagResult, certain_suppressions, gendiag
from .generalize import Demographics

Progress = Callable[[str, int, int], None]


@dataclass
class Cluster:
    """A cluster with its Definition 2 state: [lo, hi] per numeric QI, LCA node per categorical."""

    cid: int
    box: int
    members: np.ndarray          # record positions, ascending
    lo: list[float]
    hi: list[float]
    node: list[int]
    ncp_rec: float = 0.0         # NCP of each of its records (all equal within a cluster)

    @property
    def size(self) -> int:
        return int(self.members.size)

    @property
    def ncp(self) -> float:
        """NCP(C): the sum over its records (Definition 4)."""
        return self.size * self.ncp_rec


@dataclass
class Outcome:
    """Final clusters with their GenDiag results, and the numbers the paper reports."""

    clusters: list[Cluster]
    anonymized: list[GenDiagResult]
    ncp: float                   # NCP(D~) over published records (A7)
    suppressed_codes: int        # S = sum of GenDiag's s (A21)
    merges: int
    formation_ncp: float = 0.0   # NCP(D~) after Step 15, before merging
    trace: list[str] = field(default_factory=list)


class ArtUC:
    """Algorithm 1 over one problem instance. ``demo`` holds the published candidates in record
    order (sorted by person id), ``box`` their group, ``codes`` their code ids, ``block`` the
    block of each code id."""

    def __init__(self, demo: Demographics, box: np.ndarray, codes: Sequence[np.ndarray], block: np.ndarray, *,
                 k: int, m: int, delta: float, epsilon: float, exhaustive_merge: bool = False,
                 merge_candidates: int = 0, partner_rule: str = "ul", workers: int = 1,
                 progress: Progress | None = None) -> None:
        self.demo, self.box, self.codes, self.block = demo, box, codes, block
        self.k, self.m, self.delta, self.epsilon = k, m, delta, epsilon
        self.exhaustive_merge, self.merge_candidates = exhaustive_merge, merge_candidates
        self.partner_rule = partner_rule          # "ul" (ArtUC Step 20) or "ncp" (the RmR approximation)
        self.workers = max(1, workers)            # GenDiags of different clusters run side by side
        self._ul_cache: dict[int, float] = {}
        self.progress = progress or (lambda phase, done, total: None)
        self._next_id = 0
        self._gendiag_cache: dict[int, GenDiagResult] = {}
        self._support_cache: dict[int, np.ndarray] = {}       # cluster id -> records holding each code
        self.trace: list[str] = []

    # ---------------------------------------------------------------- Steps 1-2
    def record_grouping(self) -> tuple[list[np.ndarray], np.ndarray]:
        """Steps 1-2: groups by box (in box order); groups with fewer than k records are
        suppressed (record suppression). Returns the groups and the suppressed positions."""
        groups, dropped = [], []
        for b in np.unique(self.box):
            g = np.flatnonzero(self.box == b)
            (groups if g.size >= self.k else dropped).append(g)
        return groups, (np.concatenate(dropped) if dropped else np.array([], dtype=np.int64))

    # ---------------------------------------------------------------- Steps 3-16
    def cluster_formation(self, groups: list[np.ndarray]) -> list[Cluster]:
        """Steps 3-15: greedy k-record clusters per group, minimizing the NCP of C ∪ {r} (Step 8),
        then each leftover joins the same-group cluster with the least NCP increase (Step 13, A4)."""
        clusters: list[Cluster] = []
        for gi, g in enumerate(groups):
            self.progress("artuc: cluster formation", gi, len(groups))
            own: list[Cluster] = []
            pool = _TuplePool(self.demo, g)
            while pool.n_left >= self.k:                          # Step 5 (A1: >= k)
                c = self._singleton(pool.take_first())            # Step 6 (A2: smallest record)
                cost = None
                while c.size < self.k:                            # Step 7
                    if cost is None:                              # Step 8, once per distinct QI tuple
                        cost = self._ncp_with_values(c, pool.values)
                    if self._add_record(c, pool.take_best(cost)):  # Step 9 (ties: smallest record)
                        cost = None     # gen(C) changed; else Step 8's costs are the same again
                own.append(c)                                     # Step 10
            remaining = pool.left()
            for r in remaining:                                   # Steps 11-14
                inc = np.array([self._ncp_with_records(c, np.array([r]))[0] * (c.size + 1) - c.ncp for c in own])
                self._add_record(own[int(np.argmin(inc))], r)
            clusters.extend(own)
        self.progress("artuc: cluster formation", len(groups), len(groups))
        return clusters

    def dataset_ncp(self, clusters: Sequence[Cluster]) -> float:
        """NCP(D~) = sum of record NCPs / published records (Definition 4, A7)."""
        n = sum(c.size for c in clusters)
        return sum(c.ncp for c in clusters) / n if n else 0.0

    # ---------------------------------------------------------------- Steps 17-22
    def identical_merge(self, clusters: list[Cluster]) -> list[Cluster]:
        """Step 17: merge clusters with the same generalized values (they share a box, A5)."""
        at: dict[tuple, int] = {}           # generalized values -> position in out
        out: list[Cluster] = []
        for c in clusters:
            key = (c.box, tuple(c.lo), tuple(c.hi), tuple(c.node))
            if key in at:
                out[at[key]] = self._union(out[at[key]], c)
            else:
                at[key] = len(out)
                out.append(c)
        return out

    def cluster_merging(self, clusters: list[Cluster]) -> tuple[list[Cluster], int]:
        """Steps 18-22: merge the minimum-UL cluster C_UL (A30) with the same-group partner
        whose union has minimum UL(GenDiag) while NCP(D~) stays <= δ (Step 20).

        C_UL comes from a heap keyed (UL, size, first record) (ties A3); the partners' union NCP
        is one vector expression over the group's cluster table."""
        n_pub = sum(c.size for c in clusters)
        ncp_sum = sum(c.ncp for c in clusters)
        live = {c.cid: c for c in clusters}
        tables = {b: _GroupTable(self.demo, [c for c in clusters if c.box == b]) for b in {c.box for c in clusters}}
        self._prefetch(clusters)
        heap = [self._heap_key(c) for c in clusters]
        heapq.heapify(heap)
        merges = 0
        while heap:
            self.progress("artuc: cluster merging", merges, len(clusters))
            *_, cid = heapq.heappop(heap)
            if cid not in live:
                continue
            c_ul = live[cid]                                                               # Step 19
            table = tables[c_ul.box]
            rows = table.partners(cid)
            best = None
            if rows.size:
                union_ncp = table.union_ncp_rec(c_ul, rows) * (c_ul.size + table.size[rows])
                new_sum = ncp_sum - c_ul.ncp - table.ncp[rows] + union_ncp
                ok = np.flatnonzero(new_sum / n_pub <= self.delta + 1e-12)                 # Step 20 (b)
                if self.merge_candidates and ok.size > self.merge_candidates:
                    ok = ok[np.argsort(new_sum[ok], kind="stable")[: self.merge_candidates]]
                if self.partner_rule == "ncp" and ok.size:
                    ok = ok[np.lexsort((table.cid[rows[ok]], new_sum[ok]))[:1]]
                # Step 20 (a): minimum UL(GenDiag(C_UL ∪ C')), ties to the smallest cluster id.
                # Partners go in order of a floor of that UL; once the floor exceeds the best UL
                # found, no later partner can win, so GenDiag is not run on them. Up to
                # ``workers`` partners are scored at once; a partner scored beyond that point
                # has UL >= floor > best UL, so the choice is the one a sequential scan makes.
                scored = sorted((self._ul_floor(c_ul, live[int(table.cid[rows[j]])]), int(table.cid[rows[j]]), j)
                                for j in ok)
                at = 0
                while at < len(scored) and (best is None or scored[at][0] <= best[0]):
                    batch = [x for x in scored[at:at + self.workers] if best is None or x[0] <= best[0]]
                    at += len(batch)
                    unions = [np.concatenate([c_ul.members, live[pid].members]) for _, pid, _ in batch]
                    for (_, pid, j), res in zip(batch, self._gendiag_many(unions)):
                        ul = res.ul()
                        if best is None or (ul, pid) < (best[0], best[1].cid):
                            best = (ul, live[pid], res, float(new_sum[j]))
            if best is None:                                                               # Step 22 (A6)
                if not self.exhaustive_merge:
                    break
                continue          # closed: C_UL stays out of the heap, the next cluster is tried
            ul, partner, res, ncp_sum = best
            merged = self._union(c_ul, partner)                                            # Step 21
            self._gendiag_cache[merged.cid] = res
            self._support_cache[merged.cid] = self._code_support(c_ul) + self._code_support(partner)
            self._ul_cache[merged.cid] = ul
            del live[c_ul.cid], live[partner.cid]
            for gone in (c_ul.cid, partner.cid):               # merged away: free their cached results
                self._gendiag_cache.pop(gone, None)
                self._support_cache.pop(gone, None)
            live[merged.cid] = merged
            table.replace(c_ul.cid, partner.cid, merged)
            heapq.heappush(heap, self._heap_key(merged))
            merges += 1
            self.trace.append(f"merge {c_ul.cid}+{partner.cid} -> {merged.cid} (UL {ul:.6g})")
        return list(live.values()), merges

    def _ul_floor(self, a: Cluster, b: Cluster) -> int:
        """A lower bound of UL(GenDiag(a ∪ b)) (:func:`certain_suppressions`)."""
        return certain_suppressions(self._code_support(a) + self._code_support(b), self.block, self.k)

    def _code_support(self, c: Cluster) -> np.ndarray:
        """Records of C holding each code id (dense over all code ids)."""
        if c.cid not in self._support_cache:
            held = np.concatenate([self.codes[r] for r in c.members])
            self._support_cache[c.cid] = np.bincount(held, minlength=self.block.size)
        return self._support_cache[c.cid]

    def _heap_key(self, c: Cluster) -> tuple:
        return (self._ul(c), c.size, int(c.members[0]), c.cid)

    # ---------------------------------------------------------------- Steps 23-27
    def anonymization(self, clusters: list[Cluster]) -> tuple[list[GenDiagResult], int]:
        """Steps 23-26: GenDiag on every cluster; S = total suppressed codes (A21)."""
        self.progress("artuc: (k,k^m)-anonymization", 0, len(clusters))
        self._prefetch(clusters)
        results = [self._gendiag_of(c) for c in clusters]
        self.progress("artuc: (k,k^m)-anonymization", len(clusters), len(clusters))
        return results, sum(r.s for r in results)

    def run(self, *, anytime: bool = False) -> tuple[Outcome, np.ndarray]:
        """Algorithm 1 (or Algorithm 2 with ``anytime``): returns the outcome and the positions of
        records suppressed in Step 2. Raises InfeasibleError on the paper's "return false"."""
        groups, dropped = self.record_grouping()
        clusters = self.cluster_formation(groups)
        ncp = self.dataset_ncp(clusters)
        self.trace.append(f"formation: {len(clusters)} clusters, NCP(D~) = {ncp:.6g}")
        if ncp > self.delta + 1e-12:                                                       # Step 16
            raise InfeasibleError(
                f"status ncp_exceeded: after cluster formation NCP(D~) = {ncp:.6g} > method.delta = {self.delta:g} "
                "(Algorithm 1 Step 16); raise delta or coarsen the utility constraints")
        clusters = self.identical_merge(clusters)
        if anytime:
            clusters, merges = self.anytime_merging(clusters)
        else:
            clusters, merges = self.cluster_merging(clusters)
        results, s_total = self.anonymization(clusters)
        if s_total > self.epsilon:                                                         # Step 26
            raise InfeasibleError(
                f"status suppression_exceeded: GenDiag suppressed S = {s_total} codes > method.epsilon = "
                f"{self.epsilon:g} (Algorithm 1 Step 26); raise epsilon or loosen the code sets of the constraints")
        return Outcome(clusters, results, self.dataset_ncp(clusters), s_total, merges, ncp, self.trace), dropped

    # ---------------------------------------------------------------- Algorithm 2
    def anytime_merging(self, clusters: list[Cluster]) -> tuple[list[Cluster], int]:
        """Algorithm 2 Steps 7-21 with the data owner's acceptance as thresholds: merge C_UL with
        its minimum-UL same-group partner (no δ test in Step 9); keep the merge while NCP <= δ
        (Step 14); otherwise stop with the current clusters if S <= ε (Step 17), else fail."""
        n_pub = sum(c.size for c in clusters)
        live = {c.cid: c for c in clusters}
        merges = 0
        while True:
            c_ul = min(live.values(), key=lambda c: (self._ul(c), c.size, int(c.members[0])))
            partners = sorted((c for c in live.values() if c.box == c_ul.box and c.cid != c_ul.cid),
                              key=lambda c: c.cid)
            if not partners:
                return list(live.values()), merges
            scored = list(zip(self._gendiag_many([np.concatenate([c_ul.members, p.members]) for p in partners]),
                              partners))
            res, partner = min(scored, key=lambda rp: rp[0].ul())
            merged = self._union(c_ul, partner)
            temp = [c for c in live.values() if c.cid not in (c_ul.cid, partner.cid)] + [merged]
            if sum(c.ncp for c in temp) / n_pub <= self.delta + 1e-12:                     # Step 14
                self._gendiag_cache[merged.cid] = res
                del live[c_ul.cid], live[partner.cid]
                live[merged.cid] = merged
                merges += 1
                continue
            s_now = sum(self._gendiag_of(c).s for c in live.values())
            if s_now <= self.epsilon:                                                      # Step 17
                return list(live.values()), merges
            raise InfeasibleError(f"status suppression_exceeded: Algorithm 2 Step 19: S = {s_now} codes > "
                                  f"method.epsilon = {self.epsilon:g} and no merge keeps NCP <= {self.delta:g}")

    # ---------------------------------------------------------------- helpers
    def _singleton(self, r: int) -> Cluster:
        d = self.demo
        lo = [float(d.values[q.i][r]) if q.numeric else 0.0 for q in d.qis]
        node = [int(d.values[q.i][r]) if not q.numeric else -1 for q in d.qis]
        c = Cluster(self._new_id(), int(self.box[r]), np.array([r]), lo, list(lo), node)
        c.ncp_rec = self._ncp_state(c.lo, c.hi, c.node)
        return c

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _ncp_state(self, lo: list, hi: list, node: list) -> float:
        return float(self.demo.ncp_terms([np.asarray(x) for x in lo], [np.asarray(x) for x in hi],
                                         [np.asarray(x) for x in node]))

    def _ncp_with_records(self, c: Cluster, rs: np.ndarray) -> np.ndarray:
        """Per-record NCP of gen(C ∪ {r}) for every record r in ``rs`` (Steps 8 and 13)."""
        return self._ncp_with_values(c, [v[rs] for v in self.demo.values])

    def _ncp_with_values(self, c: Cluster, values: list[np.ndarray]) -> np.ndarray:
        """Per-record NCP of gen(C ∪ {r}) for records with the given QI values: one vector
        expression per attribute (numeric span; categorical NCP of the LCA by table lookup)."""
        d = self.demo
        cost = np.zeros(values[0].size)
        for q in d.qis:
            v = values[q.i]
            if q.numeric:
                span = q.hi - q.lo
                if span > 0:
                    cost += (q.weight / span) * (np.maximum(c.hi[q.i], v) - np.minimum(c.lo[q.i], v))
            else:
                cost += q.weight * d.trees[q.i].ncp_of_lca_with(c.node[q.i])[v]
        return cost

    def _add_record(self, c: Cluster, r: int) -> bool:
        """Add record r to C; returns whether gen(C) (Definition 2) changed."""
        d = self.demo
        before = (list(c.lo), list(c.hi), list(c.node))
        for q in d.qis:
            v = d.values[q.i][r]
            if q.numeric:
                c.lo[q.i], c.hi[q.i] = min(c.lo[q.i], float(v)), max(c.hi[q.i], float(v))
            else:
                c.node[q.i] = int(d.trees[q.i].lca(np.int32(v), c.node[q.i]))
        c.members = np.sort(np.append(c.members, r))
        changed = before != (c.lo, c.hi, c.node)
        if changed:
            c.ncp_rec = self._ncp_state(c.lo, c.hi, c.node)
        return changed

    def _union(self, a: Cluster, b: Cluster) -> Cluster:
        d = self.demo
        lo = [min(x, y) for x, y in zip(a.lo, b.lo)]
        hi = [max(x, y) for x, y in zip(a.hi, b.hi)]
        node = [int(d.trees[q.i].lca(np.int32(a.node[q.i]), b.node[q.i])) if not q.numeric else -1 for q in d.qis]
        c = Cluster(self._new_id(), a.box, np.sort(np.concatenate([a.members, b.members])), lo, hi, node)
        c.ncp_rec = self._ncp_state(lo, hi, node)
        return c

    def _gendiag(self, members: np.ndarray) -> GenDiagResult:
        return gendiag([self.codes[r] for r in np.sort(members)], self.block, self.k, self.m)

    def _gendiag_many(self, members: list[np.ndarray]) -> list[GenDiagResult]:
        """GenDiag of several clusters, in order. They are independent and GenDiag's compiled
        Steps 3-14 release the GIL, so ``workers`` threads run them side by side."""
        if self.workers == 1 or len(members) <= 1:
            return [self._gendiag(x) for x in members]
        with ThreadPoolExecutor(min(self.workers, len(members))) as pool:
            return list(pool.map(self._gendiag, members))

    def _prefetch(self, clusters: Sequence[Cluster]) -> None:
        """GenDiag of every cluster not yet cached, ``workers`` at a time (the initial clusters of
        Step 19's heap, the final ones of Steps 23-26)."""
        todo = [c for c in clusters if c.cid not in self._gendiag_cache]
        for c, res in zip(todo, self._gendiag_many([c.members for c in todo])):
            self._gendiag_cache[c.cid] = res

    def _gendiag_of(self, c: Cluster) -> GenDiagResult:
        if c.cid not in self._gendiag_cache:
            self._gendiag_cache[c.cid] = self._gendiag(c.members)
        return self._gendiag_cache[c.cid]

    def _ul(self, c: Cluster) -> float:
        if c.cid not in self._ul_cache:
            self._ul_cache[c.cid] = self._gendiag_of(c).ul()
        return self._ul_cache[c.cid]

    def fixed_cluster(self, box: int, members: np.ndarray, lo: list[float], hi: list[float],
                      node: list[int]) -> Cluster:
        """A cluster with given generalized values (Baseline: the box's own elements)."""
        c = Cluster(self._new_id(), box, np.sort(members), list(lo), list(hi), list(node))
        c.ncp_rec = self._ncp_state(c.lo, c.hi, c.node)
        return c


class _GroupTable:
    """The clusters of one group as arrays (Definition 2 state, NCP, size), so that Step 20's
    NCP test over all partners of C_UL is one vector expression. Rows are appended on merge
    and tombstoned when a cluster is merged away."""

    def __init__(self, demo: Demographics, clusters: list[Cluster]) -> None:
        self.demo = demo
        cap = 2 * len(clusters) + 1
        nq = len(demo.qis)
        self.lo, self.hi = np.zeros((cap, nq)), np.zeros((cap, nq))
        self.node = np.zeros((cap, nq), dtype=np.int64)
        self.ncp, self.size = np.zeros(cap), np.zeros(cap, dtype=np.int64)
        self.cid = np.full(cap, -1, dtype=np.int64)
        self.alive = np.zeros(cap, dtype=bool)
        self.row: dict[int, int] = {}
        self.n = 0
        for c in clusters:
            self._append(c)

    def _append(self, c: Cluster) -> None:
        i = self.n
        self.lo[i], self.hi[i], self.node[i] = c.lo, c.hi, c.node
        self.ncp[i], self.size[i], self.cid[i], self.alive[i] = c.ncp, c.size, c.cid, True
        self.row[c.cid] = i
        self.n += 1

    def partners(self, cid: int) -> np.ndarray:
        rows = np.flatnonzero(self.alive[: self.n])
        return rows[rows != self.row[cid]]

    def replace(self, a: int, b: int, merged: Cluster) -> None:
        self.alive[self.row.pop(a)] = False
        self.alive[self.row.pop(b)] = False
        self._append(merged)

    def union_ncp_rec(self, c: Cluster, rows: np.ndarray) -> np.ndarray:
        """Per-record NCP of gen(C ∪ C') for every partner row (Definition 2, then 3-4)."""
        cost = np.zeros(rows.size)
        for q in self.demo.qis:
            if q.numeric:
                span = q.hi - q.lo
                if span > 0:
                    cost += (q.weight / span) * (np.maximum(self.hi[rows, q.i], c.hi[q.i])
                                                 - np.minimum(self.lo[rows, q.i], c.lo[q.i]))
            else:
                cost += q.weight * self.demo.trees[q.i].ncp_of_lca_with(c.node[q.i])[self.node[rows, q.i]]
        return cost


class _TuplePool:
    """The unclustered records of one group, by distinct QI tuple: Step 8's cost depends only on
    a record's tuple, so it is evaluated once per tuple, and the record taken is the smallest
    remaining one among the tuples of minimum cost, exactly as a scan over records would pick."""

    def __init__(self, demo: Demographics, g: np.ndarray) -> None:
        cols = np.stack([demo.values[q.i][g].astype(float) for q in demo.qis], axis=1)
        _, first, tid = np.unique(cols, axis=0, return_index=True, return_inverse=True)
        tid = tid.ravel()
        order = np.lexsort((g, tid))                       # records by tuple, then position
        self.members = g[order]
        self.start = np.searchsorted(tid[order], np.arange(first.size + 1))
        self.head = self.start[:-1].copy()                 # next unused record of each tuple
        self.values = [demo.values[q.i][g[first]] for q in demo.qis]   # QI values of each tuple
        self.exhausted = np.zeros(first.size)              # +inf once a tuple has no record left
        self.taken = np.zeros(g.size, dtype=bool)
        self.tid = tid                                     # tuple of each record, in group order
        self.g = g
        self.cursor = 0
        self.n_left = int(g.size)

    def _take(self, t: int) -> int:
        r = int(self.members[self.head[t]])
        self.head[t] += 1
        if self.head[t] == self.start[t + 1]:
            self.exhausted[t] = np.inf
        self.taken[np.searchsorted(self.g, r)] = True
        self.n_left -= 1
        return r

    def take_first(self) -> int:
        """The smallest remaining record (Step 6, A2)."""
        while self.taken[self.cursor]:
            self.cursor += 1
        return self._take(int(self.tid[self.cursor]))   # the smallest record heads its tuple

    def take_best(self, cost: np.ndarray) -> int:
        """Step 8's argmin over the remaining records: minimum cost, then smallest record."""
        cost = cost + self.exhausted
        best = cost.min()
        ties = np.flatnonzero(cost == best)
        t = int(ties[np.argmin(self.members[self.head[ties]])]) if ties.size > 1 else int(ties[0])
        return self._take(t)

    def left(self) -> np.ndarray:
        return self.g[~self.taken]
