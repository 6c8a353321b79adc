"""Quality measures of a node's release, on class-level aggregates (seed 002 §"Data
utility"; formulas and resolutions in the digest §2.9 and docs/counterfeit.md).

* catalog weight ``w(G, s) = 1 − Count(G, s) / P(G, s)`` (Fig. 4): the probability that a
  published row with value s in group G is real;
* RCE (the selection objective of Algorithm 1 line 15) on discrete domains, ``per_attribute``
  (default) or ``joint``, over all published rows, counterfeits with an original pdf of 0;
* LM = mean D(r) over the published rows (counterfeits included), LM_real over real rows;
* DM = Σ |E|² over published classes.
"""
from __future__ import annotations

import numpy as np

from .classes import NodeClasses
from .grouping import Catalog


def catalog_weight(classes: NodeClasses, cf: np.ndarray, catalog: Catalog) -> np.ndarray:
    """``w[c, s]`` (Fig. 4): 1 where no catalog row covers (group(c), s)."""
    w = np.ones(cf.shape)
    listed = np.flatnonzero(catalog.group >= 0)
    if listed.size == 0:
        return w
    pub = classes.real[listed] + cf[listed]
    group = catalog.group[listed]
    p = np.zeros(catalog.count.shape)
    np.add.at(p, group, pub)
    count = catalog.count[group].astype(float)
    w[listed] = np.where(count > 0, 1.0 - count / np.where(p[group] > 0, p[group], 1.0), 1.0)
    return w


def rce(classes: NodeClasses, cf: np.ndarray, w: np.ndarray, *, mode: str, counterfeit_term: bool) -> float:
    """RCE(AT) of the digest §2.9.2. Per real row of class E with weight w:
    ``per_attribute``: ``Σ_a [1 − (2w − w²)/|B_a(E)|] + (1 − w)²``;
    ``joint``: ``1 − (2w − w²)/Π_a |B_a(E)|``. Per counterfeit row: ``Σ_a w²/|B_a| + w²``
    or ``w²/Π_a |B_a|`` (dropped when ``counterfeit_term`` is false)."""
    fit = 2 * w - w * w
    if mode == "per_attribute":
        inv = (1.0 / classes.box).sum(axis=1)[:, None]
        real_term = classes.box.shape[1] - fit * inv + (1 - w) ** 2
        cf_term = w * w * inv + w * w
    else:
        inv = 1.0 / np.prod(classes.box, axis=1)[:, None]
        real_term = 1 - fit * inv
        cf_term = w * w * inv
    total = float((classes.real * real_term).sum())
    if counterfeit_term:
        total += float((cf * cf_term).sum())
    return total


def rce_lower_bound(classes: NodeClasses, *, mode: str) -> float:
    """A bound no catalog can beat: every real row at w = 1 (its term is smallest there, since
    ``2w − w² ≤ 1`` and ``(1 − w)² ≥ 0``) and every counterfeit at 0 (its term is ≥ 0). Lets
    Algorithm 1 skip counterfeits and grouping at nodes that cannot win (same result)."""
    size = classes.size
    if mode == "per_attribute":
        return float((size * (classes.box.shape[1] - (1.0 / classes.box).sum(axis=1))).sum())
    return float((size * (1 - 1.0 / np.prod(classes.box, axis=1))).sum())


def loss_metric(classes: NodeClasses, cf: np.ndarray) -> tuple[float, float]:
    """(LM over published rows, LM over real rows): the normalized Iyengar LM = mean D(r)."""
    size = classes.size
    pub = size + cf.sum(axis=1)
    d = classes.degree
    return float((pub * d).sum() / pub.sum()), float((size * d).sum() / size.sum())


def discernibility(classes: NodeClasses, cf: np.ndarray) -> int:
    """DM = Σ_E |E|² over published classes (no suppression in this method)."""
    pub = classes.size + cf.sum(axis=1)
    return int((pub * pub).sum())
