"""PAIS, Algorithm 1 of seed 003: LKC-privacy by top-down specialization.

::

    1: Initialize every value in T to the topmost value;
    2: Initialize Cut_i to include the topmost value;
    3: while some x ∈ ∪Cut_i is valid do
    4:   Find the Best specialization from ∪Cut_i;
    5:   Perform Best on T and update ∪Cut_i;
    6:   Update Score(x) and validity for x ∈ ∪Cut_i;
    7: end while;
    8: Output T and ∪Cut_i.

Resolutions of the spec digest (docs/lkc.md lists them): Score is InfoGain alone (Eq. 1,
A1) or the discernibility reduction ΔDC (A2; optionally Eq. 4's literal dc_after); an
invalid candidate leaves the candidate set for good but stays in the cut (A6,
anti-monotonicity), except that with ``numeric_split = 'best_valid'`` a grown interval first
tries its best valid split (A5's option); zero-gain specializations are performed (A12); ties
go by attribute position, then taxonomy pre-order (§3.4); the root is checked before any work
(A9, :func:`.params.check_root`, called by the state builder); ``L' = min(L, |QID|)`` (A10).

Validity (line 6) is exact and incremental. Only QID subsets of size ``min(L', |Active|)``
over the *active* attributes (two or more non-empty cut values) need checking (§4.3.2 and
spec §2.3); after Best on attribute B the only groups that change are those of ``T[Best]``
over subsets containing B, so every candidate is re-checked on those rows alone and its
running (min size, max confidence) merged. This is the paper's "one scan per iteration".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from ..base import Progress
from .infogain import ZERO
from .params import LKCParams
from .state import State, Validity, cut_col


@dataclass(frozen=True)
class Evaluation:
    """A candidate as line 4 saw it: score inputs and validity (spec §4.6 trace columns)."""

    attribute: str
    value: str
    info_gain: float
    valid: bool
    min_n: int
    max_conf: float
    dc_before: int | None = None
    dc_after: int | None = None


@dataclass(frozen=True)
class Specialization:
    """One performed ``Best → child(Best)`` (a row of the published trace)."""

    iteration: int
    attribute: str
    value: str
    children: tuple[str, ...]
    score: float
    info_gain: float
    dc_before: int | None
    dc_after: int | None
    n_valid_candidates: int
    n_records: int


@dataclass
class PAISResult:
    """Line 8: the final cuts (node ids per QID), the trace, and every round's candidates."""

    cuts: list[list[int]]
    trace: list[Specialization] = field(default_factory=list)
    rounds: list[list[Evaluation]] = field(default_factory=list)
    l_effective: int = 0


def pais(state: State, params: LKCParams, progress: Progress) -> PAISResult:
    """Run Algorithm 1 on a built state (lines 1-2 are :meth:`State.build`)."""
    taxes = state.taxonomies
    l_eff = min(params.L, len(taxes))
    result = PAISResult([[t.root] for t in taxes], l_effective=l_eff)
    active: set[int] = set()
    live: dict[int, set[int]] = {t.attr: ({t.root} if t.is_candidate(t.root) else set()) for t in taxes}
    seen: dict[tuple[int, int], Validity] = {}
    if any(live.values()):
        state.count_partitions([a for a in live if live[a]], active)
    _check(state, params, l_eff, active, [(a, live[a], None) for a in live], seen)
    if params.numeric_split == "best_valid":
        _resplit(state, params, l_eff, active, live, seen)
    while True:                                                            # line 3
        valid = sorted((a, x) for a, xs in live.items() for x in xs if seen[(a, x)].valid(params.K))
        dc = _discernibility(state, live, active) if params.score == "discernibility" else {}
        result.rounds.append([_evaluation(state, a, x, seen[(a, x)], params.K, dc)
                              for a, xs in sorted(live.items()) for x in sorted(xs)])
        for a in live:                                                     # A6: drop invalid for good
            live[a] = {x for x in live[a] if seen[(a, x)].valid(params.K)}
        progress("PAIS specializations", len(result.trace), len(result.trace) + len(valid))
        if not valid:
            break
        scores = {(a, x): _score(state, params, a, x, dc) for a, x in valid}
        a, best = find_best(state, scores)                                 # line 4
        _perform(state, result, a, best, scores[(a, best)], dc.get((a, best)), len(valid))   # line 5
        children = taxes[a].nodes[best].children
        if sum(taxes[a].size(c) > 0 for c in result.cuts[a]) >= 2:
            active.add(a)
        live[a].discard(best)
        new = {c for c in children if taxes[a].is_candidate(c)}
        live[a] |= new
        # line 6: one scan of T[Best]; Case 2 re-counts every record (ΔDC of any candidate may change)
        whole = params.score == "discernibility"
        todo = [b for b in live if live[b] and (whole or b == a or a in active)]
        if todo:
            state.count_partitions(todo, active, changed=None if whole else (a, best))
        # line 6: new values on all their subsets; the others on subsets containing a
        _check(state, params, l_eff, active, [(a, new, None)] + [(b, live[b], a) for b in todo if b != a], seen)
        if params.numeric_split == "best_valid":
            _resplit(state, params, l_eff, active, live, seen)
    return result


def find_best(state: State, scores: dict[tuple[int, int], float]) -> tuple[int, int]:
    """Line 4 with the tie order of spec §3.4: highest score (equal within 1e-12), then the
    attribute's position in the QID list, then the value's pre-order position."""
    top = max(scores.values())
    tied = [k for k, v in scores.items() if v >= top - ZERO]
    return min(tied, key=lambda k: (k[0], state.taxonomies[k[0]].nodes[k[1]].r0))


def subsets(l_eff: int, active: set[int], attr: int, must: int | None = None) -> list[tuple[int, ...]]:
    """The other attributes of every QID subset to check for a candidate on ``attr``:
    subsets ``Q`` of ``Active ∪ {attr}`` containing ``attr`` with ``|Q| = min(L', |Active ∪
    {attr}|)`` (spec §2.3), restricted to those also containing ``must`` when given."""
    pool = sorted((active | {attr}) - {attr})
    size = min(l_eff, len(pool) + 1) - 1
    return [q for q in combinations(pool, size) if must is None or must in q]


def _check(state: State, params: LKCParams, l_eff: int, active: set[int],
           requests: list[tuple[int, set[int], int | None]], seen: dict[tuple[int, int], Validity]) -> None:
    """Line 6 for the candidates ``live`` of each request ``(attr, live, must)`` over the records
    of the last partition count, on the subsets containing ``must`` too when given; merged into
    the running ``seen`` (one statement for all attributes)."""
    todo = [(a, subsets(l_eff, active, a, must)) for a, live, must in requests if live]
    todo = [(a, others) for a, others in todo if others]
    if not todo:
        return
    got = state.validity(todo, params)
    for a, live, _ in requests:
        for x in live:
            if (a, x) in got:
                seen[(a, x)] = seen[(a, x)].merge(got[(a, x)]) if (a, x) in seen else got[(a, x)]


def _resplit(state: State, params: LKCParams, l_eff: int, active: set[int], live: dict[int, set[int]],
             seen: dict[tuple[int, int], Validity]) -> None:
    """``numeric_split = 'best_valid'`` (spec A5's option): a grown interval whose split is
    invalid gets the InfoGain-best split that is valid now, if there is one, instead of
    leaving the candidate set. A split only loses validity as the table gets more specific
    (anti-monotonicity), so the split kept while it is valid is always the best valid one.
    A re-split interval is re-checked on all of ``T[x]``; in Case 2 the partition counts are
    then redone on all records, since ΔDC reads them."""
    redo = [(a, x) for a in sorted(live) for x in sorted(live[a])
            if state.taxonomies[a].dynamic and not seen[(a, x)].valid(params.K)]
    changed = False
    for a, x in redo:
        if not state.taxonomies[a].resplit(x, state.valid_thresholds(a, x, subsets(l_eff, active, a), params)):
            continue                                                       # no valid split: dropped (A6)
        state.repoint(a, x)
        state.count_partitions([a], active, changed=(a, x))
        del seen[(a, x)]
        _check(state, params, l_eff, active, [(a, {x}, None)], seen)
        changed = True
    if changed and params.score == "discernibility":
        state.count_partitions([b for b in live if live[b]], active)


def _score(state: State, params: LKCParams, a: int, x: int, dc: dict) -> float:
    """Eq. 1 (InfoGain) or, in Case 2, the discernibility reduction ΔDC (spec A2); with
    ``dc_score = 'paper_after'`` Eq. 4 read literally: ``Σ |T[qid_v]|²`` over the groups
    after the split, maximized (it favours the least discerning split, spec A2)."""
    if params.score == "discernibility":
        before, after = dc[(a, x)]
        return float(after if params.dc_score == "paper_after" else before - after)
    return state.taxonomies[a].info_gain(x)


def _discernibility(state: State, live: dict[int, set[int]], active: set[int]) -> dict[tuple[int, int], tuple[int, int]]:
    """Case 2 (§3.2.2, §4.3.1): for each candidate x on A, ``dc_before = Σ_{P ∈ Link_x} |P|²``
    over the current path partitions and ``dc_after`` the same after x → child(x). Partitions
    are grouped on the active attributes only: a constant attribute splits nothing."""
    p = state.partition_sizes()
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for a, xs in live.items():
        mine = p["attr"].astype(np.int64) == a
        if not xs or not mine.any():
            continue
        keys = np.stack([p[cut_col(j)][mine].astype(np.int64) for j in sorted(active | {a})], axis=1)
        n, cut = p["n"][mine].astype(np.int64), p[cut_col(a)][mine].astype(np.int64)
        before = _squares_by_cut(keys, n, cut)
        after = _squares_by_cut(np.column_stack([keys, p["nxt"][mine].astype(np.int64)]), n, cut)
        for x in xs:
            out[(a, x)] = (before.get(x, 0), after.get(x, 0))
    return out


def _squares_by_cut(keys: np.ndarray, n: np.ndarray, cut: np.ndarray) -> dict[int, int]:
    """Σ |group|² of the groups of ``keys``, summed per cut value of one attribute."""
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    sizes = np.bincount(inverse.ravel(), weights=n).astype(np.int64)
    values, where = np.unique(cut[first], return_inverse=True)
    sums = np.bincount(where.ravel(), weights=sizes.astype(float) ** 2)
    return {int(v): int(round(s)) for v, s in zip(values, sums)}


def _evaluation(state: State, a: int, x: int, v: Validity, k: int, dc: dict) -> Evaluation:
    t = state.taxonomies[a]
    before, after = dc.get((a, x), (None, None))
    return Evaluation(t.column, t.nodes[x].label, t.info_gain(x), v.valid(k), v.min_n, v.max_conf, before, after)


def _perform(state: State, result: PAISResult, a: int, best: int, score: float,
             dc: tuple[int, int] | None, n_valid: int) -> None:
    """Line 5: refine ``T[Best]`` in SQL and replace Best by ``child(Best)`` in ``Cut_a``."""
    t = state.taxonomies[a]
    n_records = t.size(best)
    state.perform(a, best)
    cut = result.cuts[a]
    cut.remove(best)
    cut.extend(t.nodes[best].children)
    result.trace.append(Specialization(
        len(result.trace) + 1, t.column, t.nodes[best].label, tuple(t.nodes[c].label for c in t.nodes[best].children),
        score, t.info_gain(best), None if dc is None else dc[0], None if dc is None else dc[1], n_valid, n_records))
