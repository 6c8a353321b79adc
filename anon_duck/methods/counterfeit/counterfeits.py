"""Counterfeit record insertion (seed 002, Definition 2; Algorithm 1 lines 7-13).

A class with fewer than k rows at an h-feasible node receives exactly ``k - |E|``
counterfeit rows (digest A3): copies of the class's generalized QIs with a sensitive value
chosen by one of two rules (digest §3.3, A4):

* ``random`` (default, the paper's "randomly selected within the domain"): uniform over the
  sorted distinct sensitive values, from ``numpy.random.default_rng([seed, *levels])``,
  classes in ClassID order, so a node's draw does not depend on the traversal;
* ``concealable`` (deterministic; the paper's fixtures): each slot takes the value with the
  most headroom ``Σ_{E'≠E} real_{E'}(s) − (given to E with s)``, ties to the smallest value.

The result is a count matrix ``cf[class, s]``; it never leaves the scratch schema.
"""
from __future__ import annotations

import numpy as np

from .classes import NodeClasses


def insert_counterfeits(classes: NodeClasses, k: int, values: str, seed: int) -> np.ndarray:
    """``cf[c, s]``: counterfeit rows of class c with sensitive value s (Definition 2)."""
    real = classes.real
    m, n_s = real.shape
    need = np.maximum(k - real.sum(axis=1), 0)
    cf = np.zeros((m, n_s), dtype=np.int64)
    if not need.any():
        return cf
    if values == "random":
        rng = np.random.default_rng([seed, *classes.levels])
        draws = rng.integers(0, n_s, size=int(need.sum()))
        owner = np.repeat(np.arange(m), need)
        return np.bincount(owner * n_s + draws, minlength=m * n_s).reshape(m, n_s).astype(np.int64)
    rows = np.flatnonzero(need)
    headroom = real.sum(axis=0)[None, :] - real[rows]          # Σ_{E'≠E} real_{E'}(s)
    given = np.zeros((rows.size, n_s), dtype=np.int64)
    for slot in range(int(need.max())):                        # at most k - 1 slots per class
        open_ = need[rows] > slot
        pick = np.argmax(headroom[open_] - given[open_], axis=1)  # argmax: first (smallest) value on ties
        given[np.flatnonzero(open_), pick] += 1
    cf[rows] = given
    return cf
