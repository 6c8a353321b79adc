"""COUNT-query workloads W1 and W2 (seed 001 §6.3-6.4; digest §5.4 GEN, decision A12).

Shared by the disassociation report and the CBA baseline's report so that both measure ARE on
the *same* queries: the generator is seeded by the release seed and draws from the codes
``allowed`` (all codes, or the codes CBA kept: seed 001 §6.3 "the diagnosis codes retrieved by
all queries are among those that are not suppressed by CBA").
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...backend.base import Backend
from ...scratch import scratch
from ...sqlrender import render
from .encoding import CODE, Records

WORKLOAD = scratch("dis_workload")


def workloads(rec: Records, allowed: np.ndarray, queries: int, w1_minsup_percent: float,
              seed: int) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]], int]:
    """W1: ``queries`` frequent itemsets of each size 1..4 (support >= minsup % of the records);
    W2: ``queries`` random code sets of random size 1..4 that occur (σ = 1). Returns (W1, W2, σ_W1)."""
    rng = np.random.default_rng(seed)
    sigma_w1 = max(1, math.ceil(w1_minsup_percent / 100.0 * rec.n))
    index = _Index(rec, allowed)
    w1 = [q for c in (1, 2, 3, 4) for q in generate_queries(rec, c, sigma_w1, queries, rng, allowed, index=index)]
    w2 = [q for q in (generate_queries(rec, int(c), 1, 1, rng, allowed, index=index)
                      for c in rng.integers(1, 5, queries)) for q in q]
    return w1, w2, sigma_w1


class _Index:
    """Record lists per code and code lists per record (built once per workload), and the codes
    that extend a code set to a set of support >= σ, remembered per (set, σ): GEN draws again
    from the same sets (each restart of a dead end, each query from the same start), and a
    remembered answer is a dict lookup instead of a pass over the records holding the set."""

    def __init__(self, rec: Records, allowed: np.ndarray | None) -> None:
        self.rec = rec
        self.by_code = np.argsort(rec.cid, kind="stable")
        self.code_start = np.searchsorted(rec.cid[self.by_code], np.arange(rec.n_codes + 1))
        self.rec_start = np.searchsorted(rec.rid, np.arange(rec.n + 1))
        self.support = np.diff(self.code_start)
        self.ok = np.ones(rec.n_codes, dtype=bool) if allowed is None else allowed
        self._extensions: dict[tuple[tuple[int, ...], int], np.ndarray] = {}

    def holders(self, code: int) -> np.ndarray:
        """The sorted record numbers holding ``code``."""
        return self.rec.rid[self.by_code[self.code_start[code]:self.code_start[code + 1]]]

    def extensions(self, q: tuple[int, ...], sigma: int) -> np.ndarray:
        """The allowed codes b not in ``q`` (sorted) such that q ∪ {b} has support >= sigma."""
        key = (q, sigma)
        if key not in self._extensions:
            rows = self.holders(q[0])
            for b in q[1:]:
                rows = np.intersect1d(rows, self.holders(b), assume_unique=True)
            starts, ends = self.rec_start[rows], self.rec_start[rows + 1]
            idx = np.repeat(ends - (ends - starts).cumsum(), ends - starts) + np.arange((ends - starts).sum())
            counts = np.bincount(self.rec.cid[idx], minlength=self.rec.n_codes)
            counts[list(q)] = 0
            self._extensions[key] = np.flatnonzero((counts >= sigma) & self.ok)
        return self._extensions[key]


def generate_queries(rec: Records, c: int, sigma: int, n: int, rng: np.random.Generator,
                     allowed: np.ndarray | None = None, tries: int = 100, *,
                     index: _Index | None = None) -> list[tuple[int, ...]]:
    """Digest §5.4 GEN: a c-code query starts from a random allowed code of support >= sigma
    and extends by a random allowed code keeping the support >= sigma; a dead end restarts (at
    most ``tries`` times per query, then the query is skipped). Supports come from the pairs
    in numpy (record lists per code, code lists per record: :meth:`_Index.extensions`)."""
    ix = index if index is not None else _Index(rec, allowed)
    seeds = np.flatnonzero((ix.support >= sigma) & ix.ok)
    out: list[tuple[int, ...]] = []
    if seeds.size == 0:
        return out
    for _ in range(n):
        for _ in range(tries):
            q = [int(rng.choice(seeds))]
            while len(q) < c:
                cand = ix.extensions(tuple(sorted(q)), sigma)
                if cand.size == 0:
                    break
                q.append(int(rng.choice(cand)))
            if len(q) == c:
                out.append(tuple(sorted(q)))
                break
    return out


def write_workload(backend: Backend, queries: list[tuple[int, ...]]) -> np.ndarray:
    """Scratch ``dis_workload(qid, cid, qsize)``, one row per (distinct query, code): W1
    repeats its frequent itemsets many times, and a count is computed once per distinct
    query. Returns the qid of every input query (qids in order of first appearance)."""
    distinct = {q: i for i, q in enumerate(dict.fromkeys(queries))}
    uniq = list(distinct)
    sizes = np.asarray([len(q) for q in uniq], dtype=np.int64)
    backend.write_table(WORKLOAD, {"qid": np.repeat(np.arange(len(uniq), dtype=np.int64), sizes),
                                   "cid": np.concatenate([np.asarray(q, dtype=np.int64) for q in uniq]),
                                   "qsize": np.repeat(sizes, sizes)})
    return np.asarray([distinct[q] for q in queries], dtype=np.int64)


def largest(queries: list[tuple[int, ...]]) -> int:
    """The size of the workload's largest query: holding_all.jinja writes one semi join per
    place of a query's codes, so the templates that count queries are rendered for it."""
    return max(len(q) for q in queries)


def mean_by_size(err: np.ndarray, queries: list[tuple[int, ...]]) -> dict[str, Any]:
    """``by_size``: the mean error of the queries of each size (W1 has 1..4 codes; the last
    axis of ``err`` is the queries)."""
    sizes = np.asarray([len(q) for q in queries])
    return {"by_size": {int(s): float(err[..., sizes == s].mean()) for s in np.unique(sizes)}}


def kept_codes(backend: Backend, rec: Records, tokens: tuple[str, ...]) -> np.ndarray:
    """Mask over code numbers: the codes a generalized release (its ``tokens`` table) still carries."""
    cid = backend.fetch("workload: codes kept by the baseline", render(
        "disassociation/cba_kept_codes.sql.j2", tokens=tokens, code=CODE))["cid"]
    out = np.zeros(rec.n_codes, dtype=bool)
    out[cid.astype(np.int64)] = True
    return out
