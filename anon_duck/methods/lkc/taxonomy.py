"""Taxonomy trees of the QIDs (§3.2 of seed 003) with the cut bookkeeping PAIS needs.

Every record value of a QID gets a *raw code* such that each taxonomy node covers one
contiguous range ``[r0, r1)`` of raw codes:

* categorical QIDs (and numeric QIDs given a static interval tree, like Figure 2's Age):
  the user's tree, leaves numbered in pre-order (siblings ordered by interval bound, then
  name), so a subtree is a range;
* numeric QIDs without a tree: raw codes are the sorted distinct values and each node is an
  interval ``[lo, hi)``; its two children are the optimal binary split on the class, grown
  when the node enters the cut (§3.2.1, rule of spec §2.6 / A5).

With ranges, "the child of ``x`` on a record's path" is a ``searchsorted`` and the class
histogram of ``T[x]`` is a slice sum of one (raw code × class) matrix pulled once from SQL:
recoding is global, so ``T[x]`` depends on ``x`` alone and InfoGain never changes after a
value enters the cut (§4.3.1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .infogain import best_threshold, info_gain

NO_NEXT = -1
"""``nxt`` of a record whose cut value has no child (a leaf); SQL turns it into NULL."""


@dataclass
class Node:
    label: str
    parent: int
    r0: int
    r1: int
    lo: float | None = None
    hi: float | None = None
    children: list[int] = field(default_factory=list)
    expanded: bool = False
    gain: float = 0.0


class Taxonomy:
    """One QID's taxonomy: nodes with raw-code ranges, the (raw × class) counts, InfoGain."""

    def __init__(self, attr: int, column: str, values: list[str], nodes: list[Node], dynamic: bool,
                 numbers: np.ndarray | None = None) -> None:
        self.attr = attr
        self.column = column
        self.values = values              # raw code -> the value as CAST(column AS VARCHAR)
        self.nodes = nodes
        self.dynamic = dynamic
        self.numbers = numbers            # dynamic numeric: raw code -> number
        self.counts = np.zeros((len(values), 1))
        self.root = 0

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_tree(cls, attr: int, column: str, node: list[str], parent: list[str | None], label: list[str],
                  lo: list[float], interval_leaves: bool = False) -> "Taxonomy":
        """A user taxonomy (hier_node rows; ``lo`` = +inf where a node has no bound). Leaves in
        pre-order get raw codes 0..n-1; siblings go by (lo, name), the tie order of spec §3.4.

        ``interval_leaves``: a numeric QID's static interval tree (Figure 2's Age). Its leaves
        are the raw numbers, which are record values, not taxonomy values: the most specific
        released value is the interval just above them (a raw age maps to the leaf interval
        with ``lo <= a < hi``, spec §4.2), so a node whose children are all raw values has no
        child to specialize into."""
        kids: dict[str | None, list[int]] = {}
        for i, p in enumerate(parent):
            kids.setdefault(p, []).append(i)
        for sibs in kids.values():
            sibs.sort(key=lambda i: (lo[i], node[i]))
        (root,) = kids[None]
        out: list[Node] = []
        values: list[str] = []
        # iterative pre-order walk; an entry (~id, -1) closes node id's raw-code range
        stack: list[tuple[int, int]] = [(root, -1)]
        while stack:
            i, p = stack.pop()
            if i < 0:
                out[~i].r1 = len(values)
                continue
            me = len(out)
            out.append(Node(label[i], p, len(values), len(values), expanded=True))
            if p >= 0:
                out[p].children.append(me)
            below = kids.get(node[i], [])
            if not below:
                values.append(node[i])
                out[me].r1 = len(values)
                continue
            stack.append((~me, -1))
            stack.extend((j, me) for j in reversed(below))
        if interval_leaves:
            for n in out:
                if n.children and all(not out[c].children for c in n.children):
                    n.children = []
        return cls(attr, column, values, out, dynamic=False)

    @classmethod
    def from_numbers(cls, attr: int, column: str, values: list[str], numbers: np.ndarray,
                     root: tuple[float, float] | None) -> "Taxonomy":
        """A numeric QID whose intervals are grown at run time. ``values``/``numbers`` are its
        distinct values in increasing order. The root is ``[lo, hi)``: the user's, else
        ``[min, max + 1)`` for whole numbers and ``[min, next float above max)`` otherwise."""
        lo, hi = root if root is not None else (float(numbers[0]), _above(float(numbers[-1])))
        n = Node(interval_label(lo, hi), -1, 0, len(values), lo, hi)
        return cls(attr, column, values, [n], dynamic=True, numbers=numbers)

    def set_counts(self, raw: np.ndarray, cls_code: np.ndarray, cnt: np.ndarray, n_classes: int) -> None:
        """The (raw code × class) histogram of the whole table, from one SQL aggregate."""
        counts = np.zeros((len(self.values), max(n_classes, 1)))
        np.add.at(counts, (raw.astype(np.int64), cls_code.astype(np.int64)), cnt.astype(float))
        self.counts = counts

    # -- queries ---------------------------------------------------------------------------
    def class_counts(self, x: int) -> np.ndarray:
        """``freq(T[x], cls)`` for every class."""
        n = self.nodes[x]
        return self.counts[n.r0:n.r1].sum(axis=0)

    def size(self, x: int) -> int:
        """``|T[x]|``."""
        return int(round(self.class_counts(x).sum()))

    def expand(self, x: int) -> None:
        """Make ``child(x)`` known. For a grown interval this is the optimal binary split,
        fixed once (spec A5) unless :meth:`resplit` replaces it (``best_valid``)."""
        n = self.nodes[x]
        if n.expanded:
            return
        n.expanded = True
        self._split(x, best_threshold(self.counts[n.r0:n.r1]))

    def resplit(self, x: int, allowed: np.ndarray) -> bool:
        """``numeric_split = 'best_valid'``: give the grown interval ``x`` (in the cut, not yet
        specialized) the InfoGain-best split among the thresholds ``allowed`` (bool per raw
        code in ``x``'s range). False, and the split unchanged, when none is allowed. The old
        children were never in a cut; they stay in the node list, unreferenced."""
        n = self.nodes[x]
        split = best_threshold(self.counts[n.r0:n.r1], allowed)
        if split is None:
            return False
        n.children = []
        self._split(x, split)
        return True

    def _split(self, x: int, split: tuple[int, float] | None) -> None:
        """Children ``[lo, t)`` and ``[t, hi)`` of interval ``x`` at row ``t`` of its range."""
        if split is None:
            return
        n = self.nodes[x]
        t, n.gain = split
        cut = float(self.numbers[n.r0 + t])
        for r0, r1, lo, hi in ((n.r0, n.r0 + t, n.lo, cut), (n.r0 + t, n.r1, cut, n.hi)):
            self.nodes.append(Node(interval_label(lo, hi), x, r0, r1, lo, hi))
            n.children.append(len(self.nodes) - 1)

    def is_candidate(self, x: int) -> bool:
        """A cut value can be specialized when it has records and children (§3.2: leaves and
        empty values are never candidates; a one-child relabel is, spec §3.2 note)."""
        self.expand(x)
        return bool(self.nodes[x].children) and self.size(x) > 0

    def info_gain(self, x: int) -> float:
        """Eq. 2 for ``x → child(x)`` (for a grown interval: the gain of its chosen split)."""
        self.expand(x)
        n = self.nodes[x]
        if self.dynamic:
            return n.gain
        return info_gain(np.array([self.class_counts(c) for c in n.children]))

    def child_of(self, x: int, raw: np.ndarray) -> np.ndarray:
        """The child of ``x`` on the path to each raw code (all codes lie in ``x``'s range);
        ``NO_NEXT`` when ``x`` has no child."""
        n = self.nodes[x]
        if not n.children:
            return np.full(raw.shape, NO_NEXT, dtype=np.int64)
        starts = np.array([self.nodes[c].r0 for c in n.children])
        order = np.argsort(starts)
        pos = np.searchsorted(starts[order], raw, side="right") - 1
        return np.array(n.children, dtype=np.int64)[order][pos]

    def refinement(self, best: int) -> tuple[np.ndarray, np.ndarray]:
        """For every raw code under ``best``: the next value after the new cut value, i.e. the
        child of ``child(best)`` on its path (Algorithm 1 line 5 / TIPS refinement, §4.2).
        Expands the children first, so grown intervals get their split now."""
        for c in self.nodes[best].children:
            self.expand(c)
        raw = np.arange(self.nodes[best].r0, self.nodes[best].r1, dtype=np.int64)
        child = self.child_of(best, raw)
        nxt = np.full(raw.shape, NO_NEXT, dtype=np.int64)
        for c in self.nodes[best].children:
            mine = child == c
            nxt[mine] = self.child_of(c, raw[mine])
        return raw, nxt

    def cut_of(self, cut: list[int]) -> np.ndarray:
        """Node id of the cut value above each raw code (a cut covers every raw code once)."""
        out = np.full(len(self.values), NO_NEXT, dtype=np.int64)
        for x in cut:
            out[self.nodes[x].r0:self.nodes[x].r1] = x
        return out


def interval_label(lo: float, hi: float) -> str:
    """``[lo-hi)`` as the paper prints intervals (ASCII hyphen, spec §4 labels)."""
    return f"[{_num(lo)}-{_num(hi)})"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _above(v: float) -> float:
    return v + 1 if float(v).is_integer() else math.nextafter(v, math.inf)
