"""Frequent itemsets of the records, level-wise in SQL (Apriori with each record's list of the
frequent itemsets it holds), for the frequency-based policy "sup x" (digest A15, seed 001 §6.1).

The policy needs every itemset of support >= σ. A level j extends the records' frequent
(j-1)-itemsets by one of their frequent codes (sql/disassociation/frequent_level.sql.j2), so its
cost follows what is frequent, not the C(|record|, j) subsets of every record: on an OMOP-shaped
CDM (~50 codes per person) the 4-subsets alone are 2.3 billion rows at 10,000 persons.
"""
from __future__ import annotations

from ...backend.base import Backend
from ...scratch import drop_scratch, scratch
from ...sqlrender import render
from .encoding import PAIR

GROUP = "dis_frequent_"


def frequent_itemsets(backend: Backend, sigma: int) -> list[list[tuple[tuple[int, ...], int]]]:
    """Every itemset of support >= ``sigma``: ``levels[j - 1]`` lists the j-itemsets (their
    codes sorted, in sorted order) with their supports. The search stops at the first empty
    level."""
    levels: list[list[tuple[tuple[int, ...], int]]] = []
    try:
        while True:
            size = len(levels) + 1
            codes = [f"c{i}" for i in range(1, size + 1)]
            level = scratch(f"{GROUP}{size}")
            backend.run(f"frequent itemsets of size {size}", render(
                "disassociation/frequent_level.sql.j2", target=level, pair=PAIR, codes=codes,
                previous=scratch(f"{GROUP}{size - 1}"), singles=scratch(f"{GROUP}1")), {"sigma": sigma})
            rows = backend.fetch(f"frequent itemsets of size {size}: supports", render(
                "disassociation/frequent_level_sets.sql.j2", level=level, codes=codes))
            if rows["support"].size == 0:
                break
            levels.append([(tuple(int(c) for c in items), int(s)) for items, s in zip(rows["items"], rows["support"])])
    finally:
        drop_scratch(backend, GROUP)
    return levels
