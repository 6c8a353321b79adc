"""COUNT-query workloads W1 and W2 (seed 001 §6.3-6.4; digest §5.4 GEN, decision A12).

Shared by the disassociation report and the CBA baseline's report so that both measure ARE on
the *same* queries: the generator is seeded by the release seed and draws from the codes
``allowed`` (all codes, or the codes CBA kept: seed 001 §6.3 "the diagnosis codes retrieved by
all queries are among those that are not suppressed by CBA").
"""
from __future__ import annotations

import math

import numpy as np

from ...backend.base import Backend
from ...scratch import scratch
from ...sqlrender import render
from .encoding import CODE, PAIR, Records

WORKLOAD = scratch("dis_workload")


def workloads(rec: Records, allowed: np.ndarray, queries: int, w1_minsup_percent: float, seed: int,
              backend: Backend | None = None) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]], int]:
    """W1: ``queries`` frequent itemsets of each size 1..4 (support >= minsup % of the records);
    W2: ``queries`` random code sets of random size 1..4 that occur (σ = 1). Returns (W1, W2, σ_W1).

    With a ``backend`` and σ_W1 >= 2, W1's supports come from the frequent-itemset lattice
    mined once in SQL (:func:`frequent_lattice`); the draws are the same as GEN's numpy path,
    but a dead end costs a dict lookup instead of a pass over the records."""
    rng = np.random.default_rng(seed)
    sigma_w1 = max(1, math.ceil(w1_minsup_percent / 100.0 * rec.n))
    index = _Index(rec, allowed)
    lattice = frequent_lattice(backend, rec, sigma_w1, allowed) if backend is not None and sigma_w1 >= 2 else None
    w1 = [q for c in (1, 2, 3, 4) for q in generate_queries(rec, c, sigma_w1, queries, rng, allowed, index=index,
                                                            lattice=lattice)]
    w2 = [q for q in (generate_queries(rec, int(c), 1, 1, rng, allowed, index=index)
                      for c in rng.integers(1, 5, queries)) for q in q]
    return w1, w2, sigma_w1


class _Index:
    """Record lists per code and code lists per record (built once per workload)."""

    def __init__(self, rec: Records, allowed: np.ndarray | None) -> None:
        self.by_code = np.argsort(rec.cid, kind="stable")
        self.code_start = np.searchsorted(rec.cid[self.by_code], np.arange(rec.n_codes + 1))
        self.rec_start = np.searchsorted(rec.rid, np.arange(rec.n + 1))
        self.support = np.diff(self.code_start)
        self.ok = np.ones(rec.n_codes, dtype=bool) if allowed is None else allowed


def frequent_lattice(backend: Backend, rec: Records, sigma: int, allowed: np.ndarray,
                     max_size: int = 4) -> dict[tuple[int, ...], np.ndarray]:
    """Every allowed itemset of 1..max_size-1 codes with support >= sigma, mapped to the sorted
    codes that extend it to a frequent itemset (Apriori, level-wise in SQL)."""
    ext: dict[tuple[int, ...], list[int]] = {}
    previous: list[tuple[int, ...]] = []
    for size in range(1, max_size + 1):
        bound: dict[str, object] = {"sigma": sigma}
        if size > 1:
            if not previous:
                break
            bound["allowed"] = sorted({c for s in previous for c in s})
        rows = backend.fetch(f"workload: frequent itemsets of size {size}", render(
            "disassociation/frequent_itemsets.sql.j2", pair=PAIR, size=size, previous=size > 1), bound)
        found = [tuple(int(c) for c in items) for items in rows["items"]]
        found = [s for s in found if allowed[list(s)].all()]
        for s in found if size > 1 else ():
            for b in s:        # Apriori: every (size-1)-subset of a frequent set is frequent
                ext.setdefault(tuple(c for c in s if c != b), []).append(b)
        previous = found
    return {q: np.asarray(sorted(set(b)), dtype=np.int64) for q, b in ext.items()}


def generate_queries(rec: Records, c: int, sigma: int, n: int, rng: np.random.Generator,
                     allowed: np.ndarray | None = None, tries: int = 100, *, index: _Index | None = None,
                     lattice: dict[tuple[int, ...], np.ndarray] | None = None) -> list[tuple[int, ...]]:
    """Digest §5.4 GEN: a c-code query starts from a random allowed code of support >= sigma
    and extends by a random allowed code keeping the support >= sigma; a dead end restarts (at
    most ``tries`` times per query, then the query is skipped). Supports come from the pairs
    in numpy (record lists per code, code lists per record), or from ``lattice``."""
    ix = index if index is not None else _Index(rec, allowed)
    seeds = np.flatnonzero((ix.support >= sigma) & ix.ok)
    out: list[tuple[int, ...]] = []
    if seeds.size == 0:
        return out
    empty = np.zeros(0, dtype=np.int64)
    for _ in range(n):
        for _ in range(tries):
            q = [int(rng.choice(seeds))]
            rows = rec.rid[ix.by_code[ix.code_start[q[0]]:ix.code_start[q[0] + 1]]]
            while len(q) < c:
                if lattice is not None:
                    cand = lattice.get(tuple(sorted(q)), empty)
                else:
                    starts, ends = ix.rec_start[rows], ix.rec_start[rows + 1]
                    idx = np.repeat(ends - (ends - starts).cumsum(), ends - starts) + np.arange((ends - starts).sum())
                    counts = np.bincount(rec.cid[idx], minlength=rec.n_codes)
                    counts[q] = 0
                    cand = np.flatnonzero((counts >= sigma) & ix.ok)
                if cand.size == 0:
                    break
                b = int(rng.choice(cand))
                q.append(b)
                if lattice is None:
                    rows = np.intersect1d(rows, rec.rid[ix.by_code[ix.code_start[b]:ix.code_start[b + 1]]],
                                          assume_unique=True)
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


def kept_codes(backend: Backend, rec: Records, tokens: tuple[str, ...]) -> np.ndarray:
    """Mask over code numbers: the codes a generalized release (its ``tokens`` table) still carries."""
    cid = backend.fetch("workload: codes kept by the baseline", render(
        "disassociation/cba_kept_codes.sql.j2", tokens=tokens, code=CODE))["cid"]
    out = np.zeros(rec.n_codes, dtype=bool)
    out[cid.astype(np.int64)] = True
    return out
