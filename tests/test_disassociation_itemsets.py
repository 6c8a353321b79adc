"""The report's query workloads (GEN, digest §5.4) and the "sup" policy's frequent itemsets
(digest A15), each against a brute-force enumeration over Python sets on random dense records:
GEN draws exactly the queries a direct implementation of its definition draws from the same
seed, and the level-wise SQL search finds exactly the itemsets of support >= σ."""
from __future__ import annotations

import itertools

import duckdb
import numpy as np
import pytest

from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.methods.disassociation.encoding import PAIR, Records
from anon_duck.methods.disassociation.frequent import frequent_itemsets
from anon_duck.methods.disassociation.workload import generate_queries
from anon_duck.scratch import scratch_tables


def _records(seed: int, n: int = 120, n_codes: int = 14, per_record: int = 7) -> tuple[Records, list[set[int]]]:
    """Dense random records: each holds up to ``per_record`` codes drawn with Zipf-like weights,
    so that itemsets of size 3 and 4 are frequent, as on an OMOP-shaped CDM."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_codes + 1)
    sets = [set(rng.choice(n_codes, size=rng.integers(1, per_record + 1), replace=False, p=weights / weights.sum())
                .tolist()) for _ in range(n)]
    pairs = sorted((r, c) for r, s in enumerate(sets) for c in s)
    rec = Records(n, np.asarray([f"c{i:02d}" for i in range(n_codes)], dtype=object),
                  np.asarray([r for r, _ in pairs], dtype=np.int64), np.asarray([c for _, c in pairs], dtype=np.int64))
    return rec, sets


def _support(sets: list[set[int]], q: tuple[int, ...]) -> int:
    return sum(1 for s in sets if s.issuperset(q))


def _gen_by_definition(sets: list[set[int]], n_codes: int, c: int, sigma: int, n: int, rng: np.random.Generator,
                       allowed: np.ndarray, tries: int = 100) -> list[tuple[int, ...]]:
    """GEN as the digest states it, supports counted over the record sets."""
    seeds = np.asarray([x for x in range(n_codes) if allowed[x] and _support(sets, (x,)) >= sigma], dtype=np.int64)
    out: list[tuple[int, ...]] = []
    if seeds.size == 0:
        return out
    for _ in range(n):
        for _ in range(tries):
            q = [int(rng.choice(seeds))]
            while len(q) < c:
                cand = np.asarray([b for b in range(n_codes) if b not in q and allowed[b]
                                   and _support(sets, (*q, b)) >= sigma], dtype=np.int64)
                if cand.size == 0:
                    break
                q.append(int(rng.choice(cand)))
            if len(q) == c:
                out.append(tuple(sorted(q)))
                break
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gen_draws_what_its_definition_draws_from_the_same_seed(seed):
    rec, sets = _records(seed)
    allowed = np.ones(rec.n_codes, dtype=bool)
    allowed[seed] = False                       # a code CBA suppressed: never in a query
    for c, sigma in ((1, 9), (2, 9), (3, 6), (4, 4), (4, 1)):
        ours = generate_queries(rec, c, sigma, 25, np.random.default_rng(seed), allowed)
        assert ours == _gen_by_definition(sets, rec.n_codes, c, sigma, 25, np.random.default_rng(seed), allowed)
        assert ours and all(len(q) == c and _support(sets, q) >= sigma and allowed[list(q)].all() for q in ours)


def frequent_search_is_exact(backend, seed: int, sigma: int) -> None:
    """The level-wise search on ``backend`` against brute force; also run on Spark and
    PostgreSQL (tests/test_spark.py, tests/test_postgres.py)."""
    rec, sets = _records(seed)
    backend.write_table(PAIR, {"rid": rec.rid, "cid": rec.cid})
    levels = frequent_itemsets(backend, sigma)
    expected: list[list[tuple[tuple[int, ...], int]]] = []
    for size in itertools.count(1):
        level = [(q, _support(sets, q)) for q in itertools.combinations(range(rec.n_codes), size)]
        level = [(q, s) for q, s in level if s >= sigma]
        if not level:
            break
        expected.append(level)
    assert levels == expected and len(expected) >= 3
    assert scratch_tables(backend, "dis_frequent_") == []          # its working tables are dropped


@pytest.mark.parametrize("seed,sigma", [(4, 3), (5, 6), (6, 15)])
def test_the_level_wise_search_finds_exactly_the_frequent_itemsets(seed, sigma):
    frequent_search_is_exact(DuckDBBackend(duckdb.connect()), seed, sigma)
