"""Mondrian (LeFevre, DeWitt, Ramakrishnan, ICDE 2006, Fig. 4) in plain Python, recursive, one
partition at a time: the reference the set-based SQL of anon_duck/methods/mondrian.py is tested
against. Same documented choices (docs/mondrian.md): the lower median, strict cuts that keep
the median's ties on one side, relaxed cuts by rank (ties ordered by the id as text), the
categorical cut into the children of the lowest common ancestor, the widest normalized range
among the allowable cuts (ties: the lower dimension, numeric QIs first), constraints checked by
tests/privacy_brute.py."""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Sequence

from privacy_brute import l_violates, t_violates


class Tree:
    """A hierarchy as the parent of each node (roots: None) and leaf counts."""

    def __init__(self, rows: Sequence[tuple[str, str | None, int]]) -> None:
        self.parent = {node: parent for node, parent, _ in rows}
        self.n_leaves = {node: n for node, _, n in rows}
        self.root_leaves = sum(n for node, parent, n in rows if parent is None)

    def path(self, leaf: str) -> list[str]:
        out = [leaf]
        while self.parent[out[-1]] is not None:
            out.append(self.parent[out[-1]])
        return out[::-1]                     # root first

    def lca(self, leaves: set[str]) -> str:
        paths = [self.path(v) for v in leaves]
        common = None
        for nodes in zip(*paths):
            if len(set(nodes)) > 1:
                break
            common = nodes[0]
        return common


def mondrian(rows: list[dict[str, Any]], numeric: list[str], categorical: list[tuple[str, Tree]], k: int,
             relaxed: bool = False, ld: dict | None = None, t: float | None = None, ordered: bool = False,
             sensitive: str = "s", id_col: str = "id") -> list[list[dict]]:
    """The final partitions of ``rows``."""
    spans = {}
    for q in numeric:
        values = [r[q] for r in rows]
        spans[q] = float(max(values) - min(values)) if max(values) > min(values) else 1.0
    reference = Counter(r[sensitive] for r in rows)

    def ok(side: list[dict]) -> bool:
        counts = Counter(r[sensitive] for r in side)
        return (len(side) >= k and not (ld and l_violates(counts, ld["kind"], ld["l"], ld.get("c")))
                and not (t is not None and t_violates(counts, reference, t, ordered)))

    def cuts(part: list[dict]):
        for d, q in enumerate(numeric):
            ranked = sorted(part, key=lambda r: (r[q], str(r[id_col])))
            n = len(ranked)
            med, mx, mn = ranked[math.ceil(n / 2) - 1][q], ranked[-1][q], ranked[0][q]
            if relaxed:
                sides = [ranked[:n // 2], ranked[n // 2:]]
            elif med < mx:
                sides = [[r for r in part if r[q] <= med], [r for r in part if r[q] > med]]
            else:
                sides = [[r for r in part if r[q] < med], [r for r in part if r[q] >= med]]
            yield (mx - mn) / spans[q], d, [s for s in sides if s]
        for j, (q, tree) in enumerate(categorical):
            top = tree.lca({r[q] for r in part})
            width = (tree.n_leaves[top] - 1) / (tree.root_leaves - 1) if tree.root_leaves > 1 else 0.0
            groups: dict[str, list] = {}
            for r in part:
                path = tree.path(r[q])
                child = path[path.index(top) + 1] if r[q] != top else r[q]
                groups.setdefault(child, []).append(r)
            yield width, len(numeric) + j, list(groups.values())

    final, todo = [], [rows]
    while todo:
        part = todo.pop()
        allowable = [(-w, d, sides) for w, d, sides in cuts(part) if len(sides) >= 2 and all(map(ok, sides))]
        if not allowable:
            final.append(part)
            continue
        todo.extend(min(allowable, key=lambda c: c[:2])[2])
    return final


def released(parts: list[list[dict]], numeric: list[str], categorical: list[tuple[str, Tree]],
             qi_order: list[str], sensitive: str = "s") -> list[tuple]:
    """The release's rows as (sensitive, then per QI in job order: label (and lo, hi)), sorted."""
    out = []
    for part in parts:
        labels = {}
        for q in numeric:
            lo, hi = min(r[q] for r in part), max(r[q] for r in part)
            labels[q] = (str(lo) if lo == hi else f"[{lo}-{hi}]", float(lo), float(hi))
        for q, tree in categorical:
            labels[q] = (tree.lca({r[q] for r in part}),)
        for r in part:
            out.append((r[sensitive], *(v for q in qi_order for v in labels[q])))
    return sorted(out, key=repr)
