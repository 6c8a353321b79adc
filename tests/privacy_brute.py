"""Privacy models computed by hand, in plain Python, from their papers' definitions: the
reference the SQL verifiers (macros/l_diversity.sql, macros/t_closeness.sql) and the
anonymizers' predicates are tested against. A NULL (None) is a value of its own, as in the
verifiers (docs/verifiers.md); in the ordered EMD it comes after every other value."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping, Sequence


def classes(rows: Iterable[Mapping[str, Any]], qis: Sequence[str], sensitive: str) -> dict[tuple, Counter]:
    """Equivalence class (QI tuple) -> counts of its sensitive values."""
    out: dict[tuple, Counter] = defaultdict(Counter)
    for r in rows:
        out[tuple(r[q] for q in qis)][r[sensitive]] += 1
    return dict(out)


def entropy(counts: Counter) -> float:
    n = sum(counts.values())
    return -sum(c / n * math.log(c / n) for c in counts.values())


def l_violates(counts: Counter, kind: str, l: int, c: float | None = None) -> bool:
    """Machanavajjhala et al. 2007: distinct (Def. 3.1's instantiation by distinct values),
    entropy (Def. 4.1) and recursive (c, l) (Def. 4.2) l-diversity of one class."""
    if kind == "distinct":
        return len(counts) < l
    if kind == "entropy":
        return entropy(counts) < math.log(l) - 1e-9
    r = sorted(counts.values(), reverse=True)
    return not r[0] < c * sum(r[l - 1:])


def _order(value: Any) -> tuple:
    return (value is None, value if value is not None else 0)


def emd(counts: Counter, reference: Counter, ordered: bool) -> float:
    """Li et al. 2007, Section 4.2: equal ground distance = half the L1 distance; ordered
    distance = (1/(m-1)) * sum_i |cumulative difference| over the reference's m values."""
    n, total = sum(counts.values()), sum(reference.values())
    p = {v: counts.get(v, 0) / n for v in set(counts) | set(reference)}
    q = {v: reference.get(v, 0) / total for v in p}
    if not ordered:
        return 0.5 * sum(abs(p[v] - q[v]) for v in p)
    values = sorted(reference, key=_order)
    if len(values) < 2:
        return 0.0
    cum, acc = 0.0, 0.0
    for v in values:
        cum += p[v] - q[v]
        acc += abs(cum)
    return acc / (len(values) - 1)


def t_violates(counts: Counter, reference: Counter, t: float, ordered: bool) -> bool:
    return emd(counts, reference, ordered) > t + 1e-9
