"""Case 1 score of seed 003 (§3.2.1): entropy and information gain on the class attribute,
and the binary split of a numeric interval that maximizes it. Pure numpy over class-count
vectors; the counts come from one SQL histogram per attribute.
"""
from __future__ import annotations

import numpy as np

ZERO = 1e-12
"""InfoGain below this is floating-point noise and is clamped to 0 (spec §2.5)."""


def entropy(counts: np.ndarray) -> float:
    """Eq. 3: ``E(T[x]) = -Σ_cls p log2 p`` with ``0·log2 0 = 0`` (Example 3 does so)."""
    counts = np.asarray(counts, dtype=float)
    total = counts.sum()
    if total <= 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(-(p * np.log2(p)).sum())


def info_gain(children: np.ndarray) -> float:
    """Eq. 2: ``InfoGain(v) = E(T[v]) - Σ_c |T[c]|/|T[v]| · E(T[c])``.

    ``children`` is a (n_children, n_classes) count matrix; ``T[v]`` is its column sum
    (``|T[v]| = Σ_c |T[c]|``). Empty children contribute nothing.
    """
    children = np.asarray(children, dtype=float)
    total = children.sum()
    if total <= 0:
        return 0.0
    gain = entropy(children.sum(axis=0)) - sum(row.sum() / total * entropy(row) for row in children)
    return 0.0 if abs(gain) < ZERO else float(gain)


def best_threshold(counts: np.ndarray, allowed: np.ndarray | None = None) -> tuple[int, float] | None:
    """The optimal binary split of an interval (§3.2.1, rule of spec §2.6 / A5).

    ``counts`` is (n_values, n_classes) for the interval's distinct raw values in increasing
    order (rows with no record allowed). Candidate thresholds are the present values except
    the smallest; the children are ``[lo, t)`` and ``[t, hi)``. ``allowed`` (bool per row)
    restricts the thresholds further (``numeric_split = 'best_valid'``: the valid ones).
    Returns ``(row index of t, InfoGain)`` for the largest gain, ties to the smallest ``t``;
    ``None`` when fewer than two values are present (the interval is a leaf) or no threshold
    is allowed.
    """
    counts = np.asarray(counts, dtype=float)
    present = np.flatnonzero(counts.sum(axis=1) > 0)
    thresholds = present[1:]
    if allowed is not None:
        thresholds = thresholds[np.asarray(allowed, dtype=bool)[thresholds]]
    if thresholds.size == 0:
        return None
    total = counts.sum(axis=0)
    n = total.sum()
    left = np.cumsum(counts, axis=0)[thresholds - 1]        # records below each threshold
    right = total - left
    n_left, n_right = left.sum(axis=1), right.sum(axis=1)
    gains = entropy(total) - (n_left / n) * _entropies(left) - (n_right / n) * _entropies(right)
    best = int(np.argmax(gains >= gains.max() - ZERO))      # the first (smallest t) within ZERO of the max
    gain = float(gains[best])
    return int(thresholds[best]), (0.0 if abs(gain) < ZERO else gain)


def _entropies(rows: np.ndarray) -> np.ndarray:
    """Row-wise Eq. 3 for a count matrix (vectorized over thresholds)."""
    totals = rows.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(totals > 0, rows / np.where(totals > 0, totals, 1), 0.0)
        terms = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1)), 0.0)
    return -terms.sum(axis=1)
