"""Algorithm 1 of seed 002 (the anonymization algorithm), clarified as in the digest §3.2,
and the paper's comparator: full-domain k-anonymity at the minimum-LM node (§3.6).

The lattice walk is Python over numpy roll-ups of the frequency set (one SQL aggregate):
nodes in bottom-up order (height, then lexicographic level vector), h-ceiling pruning by
monotonicity (line 1: a node with an h-infeasible child is h-infeasible), counterfeits and
the catalog at every surviving node (lines 7-14), the node with the least RCE wins
(lines 15-19; ties within 1e-9 relative go to the first node visited, digest A28). A node
whose RCE lower bound (real rows alone, at catalog weight 1) already reaches the best RCE
cannot win line 16 and is skipped before its counterfeits and catalog are built.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InfeasibleError
from ..base import Progress
from ..lattice import bottom_up, children
from .classes import FrequencySet, NodeClasses, class_sizes, node_classes
from .counterfeits import insert_counterfeits
from .grouping import Catalog, grouping
from .levels import QILevels
from .measures import catalog_weight, discernibility, loss_metric, rce, rce_lower_bound

H_TOLERANCE = 1e-12
"""Float slack on ``D(r) ≤ h``: D is a mean of ratios and must not lose a node to rounding."""


@dataclass(frozen=True)
class Options:
    """The search's settings (the method's parameters plus the release seed for ``random``)."""

    k: int
    h: float
    tight: bool
    counterfeit_values: str
    rce_mode: str
    rce_counterfeit_term: bool
    seed: int


@dataclass(frozen=True)
class NodeResult:
    """One evaluated node: its classes, counterfeits, catalog and measures."""

    classes: NodeClasses
    cf: np.ndarray
    catalog: Catalog
    rce: float
    lm: float
    lm_real: float
    dm: int


@dataclass(frozen=True)
class SearchResult:
    best: NodeResult
    nodes_total: int
    nodes_evaluated: int
    nodes_h_infeasible: int
    nodes_null: int
    nodes_bounded: int


def lattice(qis: list[QILevels]) -> list[tuple[int, ...]]:
    """All level vectors, bottom-up: by height, then lexicographic in QI declaration order."""
    return bottom_up([q.height for q in qis])


def evaluate(freq: FrequencySet, qis: list[QILevels], levels: tuple[int, ...], opt: Options,
             classes: NodeClasses | None = None) -> NodeResult | None:
    """Algorithm 1 lines 5-15 at one node: None when the catalog is NULL (line 15)."""
    if classes is None:
        classes = node_classes(freq, qis, levels, tight=opt.tight)
    cf = insert_counterfeits(classes, opt.k, opt.counterfeit_values, opt.seed)     # lines 7-13
    catalog = grouping(classes.real, cf)                                             # line 14
    if catalog is None:
        return None
    w = catalog_weight(classes, cf, catalog)
    lm, lm_real = loss_metric(classes, cf)
    return NodeResult(classes, cf, catalog, rce(classes, cf, w, mode=opt.rce_mode,
                                                counterfeit_term=opt.rce_counterfeit_term),
                      lm, lm_real, discernibility(classes, cf))


def algorithm1(freq: FrequencySet, qis: list[QILevels], opt: Options, progress: Progress) -> SearchResult:
    """Walk the h-feasible down-set of the lattice and keep the node with the least RCE."""
    nodes = lattice(qis)
    h_infeasible: set[tuple[int, ...]] = set()
    best: NodeResult | None = None
    evaluated = nulls = bounded = 0
    for i, levels in enumerate(nodes):
        if i % 16 == 0:
            progress("counterfeit: lattice", i, len(nodes))
        if any(c in h_infeasible for c in children(levels)):                       # line 1 (pruning)
            h_infeasible.add(levels)
            continue
        if opt.tight:
            classes = node_classes(freq, qis, levels, tight=True)
            dmax, bound = classes.dmax, rce_lower_bound(classes, mode=opt.rce_mode)
        else:
            classes = None
            dmax, bound = _screen(freq, qis, levels, opt.rce_mode)
        if dmax > opt.h + H_TOLERANCE:                                               # Definition 1
            h_infeasible.add(levels)
            continue
        if best is not None and bound >= best.rce - _tie(best.rce):
            bounded += 1                                                             # cannot win line 16
            continue
        evaluated += 1
        result = evaluate(freq, qis, levels, opt, classes)
        if result is None:
            nulls += 1
            continue
        if best is None or result.rce < best.rce - _tie(best.rce):                   # line 16
            best = result
    progress("counterfeit: lattice", len(nodes), len(nodes))
    if best is None:
        raise InfeasibleError(
            f"no lattice node satisfies the {opt.h:g}-ceiling with a safe catalog for k = {opt.k} "
            f"({len(h_infeasible)} of {len(nodes)} nodes exceed h, {nulls} cannot hide their counterfeits "
            "(Lemma 1)); try a larger method.h or a smaller method.k")
    return SearchResult(best, len(nodes), evaluated, len(h_infeasible), nulls, bounded)


def _screen(freq: FrequencySet, qis: list[QILevels], levels: tuple[int, ...], mode: str) -> tuple[float, float]:
    """Dmax and the RCE lower bound of a node in hierarchy mode, straight from the frequency
    set: there a row's DA and |B_a| depend only on its node at each level, so neither needs the
    classes (the same numbers as ``NodeClasses.dmax`` and ``rce_lower_bound``)."""
    dmax = float((sum(q.degree(lvl) for q, lvl in zip(qis, levels)) / len(qis)).max())
    boxes = [q.box(lvl) for q, lvl in zip(qis, levels)]
    if mode == "per_attribute":
        per_row = len(qis) - sum(1.0 / b for b in boxes)
    else:
        per_row = 1 - 1.0 / np.prod(boxes, axis=0)
    return dmax, float((freq.cnt * per_row).sum())


def _tie(value: float) -> float:
    """RCE tolerance (digest A28): nodes within 1e-9 relative tie; the first visited wins."""
    return 1e-9 * max(1.0, abs(value))


def baseline(freq: FrequencySet, qis: list[QILevels], k: int, tight: bool) -> tuple[tuple[int, ...], float]:
    """The paper's comparator (digest §3.6): full-domain k-anonymity, no counterfeits, no
    suppression, the minimal k-anonymous node with the least LM (ties: first visited).
    Returns (levels, LM)."""
    anonymous: set[tuple[int, ...]] = set()
    best: tuple[float, tuple[int, ...]] | None = None
    for levels in lattice(qis):
        if any(c in anonymous for c in children(levels)):   # k-monotone: not minimal
            anonymous.add(levels)
            continue
        if class_sizes(freq, qis, levels).min() >= k:       # sizes only: half the cost of the classes
            anonymous.add(levels)
            classes = node_classes(freq, qis, levels, tight=tight)
            lm = float((classes.size * classes.degree).sum() / classes.size.sum())
            if best is None or lm < best[0] - 1e-12:
                best = (lm, levels)
    assert best is not None, "the top node puts every row in one class, and check_k ensured k <= rows"
    return best[1], best[0]
