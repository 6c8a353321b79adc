"""l-diversity and t-closeness as constraints of a method that groups records into classes
(fulldomain, mondrian): the job keys, their checking, the predicate on class contents the
search applies, and the verifiers that gate the release.

Job keys (under ``[method]``, docs/fulldomain.md and docs/mondrian.md):

* ``l_diversity = {kind = "distinct" | "entropy" | "recursive", l = <int >= 1>, c = <number > 0>}``
  (``c`` for ``recursive`` only; Machanavajjhala et al. 2007, Definitions 3.1, 4.1, 4.2);
* ``t_closeness = <t in [0, 1]>`` with ``t_distance = "auto" | "equal" | "ordered"``: the EMD
  of Li, Li, Venkatasubramanian (ICDE 2007) between a class's sensitive values and the whole
  input's, with the equal ground distance of categorical values or the ordered distance of
  numeric ones; ``auto`` (the default) is ``ordered`` when the sensitive column is numeric.

Both need ``input.sensitive``. A NULL sensitive value is one value of its own, as in the
verifiers (docs/verifiers.md). The predicate here (numpy, over a frequency set) serves the
lattice search; Mondrian states the same predicates in SQL through the dbt package's macros.
The verifiers (:mod:`anon_duck.verifiers.models`) are what gates the release either way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..backend.base import Backend
from ..errors import JobError
from ..job import Job
from ..verifiers import CheckResult, l_diversity, t_closeness
from ..verifiers.models import L_KINDS, is_numeric_type
from .base import Param

PARAMS = (
    Param("l_diversity", dict, default=None, doc="{kind = distinct|entropy|recursive, l = .., c = ..} on input.sensitive"),
    Param("t_closeness", float, default=None, lo=0.0, hi=1.0, doc="largest EMD of a class's sensitive values to the input's"),
    Param("t_distance", str, default="auto", choices=("auto", "equal", "ordered"),
          doc="EMD ground distance: equal (categorical), ordered (numeric), auto (by the column's type)"),
)
EPS = 1e-9          # the verifiers' slack for rounding (macros/l_diversity.sql, macros/t_closeness.sql)


@dataclass(frozen=True)
class LDiversity:
    kind: str
    l: int
    c: float | None = None


@dataclass(frozen=True)
class Models:
    """The declared constraints beyond k (none declared: both None)."""

    l_diversity: LDiversity | None = None
    t_closeness: float | None = None
    t_distance: str = "auto"

    def __bool__(self) -> bool:
        return self.l_diversity is not None or self.t_closeness is not None

    def facts(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.l_diversity:
            out["l_diversity"] = {k: v for k, v in vars(self.l_diversity).items() if v is not None}
        if self.t_closeness is not None:
            out["t_closeness"] = self.t_closeness
        return out


def parse_models(job: Job, values: Mapping[str, Any]) -> Models:
    """The checked ``l_diversity`` / ``t_closeness`` / ``t_distance`` keys of ``values`` (the
    output of ``parse_params`` over :data:`PARAMS`); JobError naming the key otherwise."""
    ld = values.get("l_diversity")
    t = values.get("t_closeness")
    if (ld is not None or t is not None) and job.dataset.sensitive is None:
        key = "method.l_diversity" if ld is not None else "method.t_closeness"
        raise JobError(f"{key}: needs the sensitive attribute: set input.sensitive")
    model = None
    if ld is not None:
        unknown = set(ld) - {"kind", "l", "c"}
        if unknown:
            raise JobError(f"method.l_diversity: unknown key(s) {', '.join(sorted(unknown))}; allowed: kind, l, c")
        kind = ld.get("kind", "distinct")
        if kind not in L_KINDS:
            raise JobError(f"method.l_diversity.kind = {kind!r}: must be one of {', '.join(L_KINDS)}")
        l = ld.get("l")
        if isinstance(l, bool) or not isinstance(l, int) or l < 1:
            raise JobError(f"method.l_diversity.l = {l!r}: must be an integer >= 1")
        c = ld.get("c")
        if kind == "recursive":
            if isinstance(c, bool) or not isinstance(c, (int, float)) or not c > 0 or not math.isfinite(c):
                raise JobError(f"method.l_diversity.c = {c!r}: recursive (c, l)-diversity needs a number c > 0")
            c = float(c)
        elif c is not None:
            raise JobError(f"method.l_diversity.c = {c!r}: c belongs to kind = 'recursive' only (kind is {kind!r})")
        model = LDiversity(kind, l, c)
    if values.get("t_distance", "auto") != "auto" and t is None:
        raise JobError(f"method.t_distance = {values['t_distance']!r}: set method.t_closeness too (or remove it)")
    return Models(model, t, values.get("t_distance", "auto"))


def ordered_distance(backend: Backend, models: Models, relation: Any, sensitive: str) -> bool:
    """Whether t-closeness measures the ordered distance: declared, or ``auto`` on a numeric
    sensitive column of ``relation``."""
    if models.t_distance != "auto":
        return models.t_distance == "ordered"
    return is_numeric_type(backend.columns("t-closeness: sensitive type", relation).get(sensitive, ""))


def verify_models(backend: Backend, job: Job, models: Models, relation: Any, qis: Sequence[str], *,
                  reference: Any = None) -> list[CheckResult]:
    """The verifiers of the declared models on a release (``reference``: the relation whose
    sensitive distribution t-closeness measures against; default the release itself)."""
    sensitive = job.dataset.sensitive
    out = []
    if models.l_diversity:
        m = models.l_diversity
        out.append(l_diversity(backend, relation=relation, qis=qis, sensitive=sensitive, l=m.l, kind=m.kind, c=m.c))
    if models.t_closeness is not None:
        ordered = None if models.t_distance == "auto" else models.t_distance == "ordered"
        out.append(t_closeness(backend, relation=relation, qis=qis, sensitive=sensitive, t=models.t_closeness,
                               ordered=ordered, reference=reference))
    return out


def class_ok(models: Models, key: np.ndarray, s_code: np.ndarray, cnt: np.ndarray, n_classes: int,
             reference: np.ndarray | None, ordered: bool) -> np.ndarray:
    """Per class (``key`` dense in 0..n_classes-1, one entry per frequency-set row with its
    sensitive value's code ``s_code`` (codes in value order) and count ``cnt``): whether it
    satisfies every declared model. ``reference``: the share of each sensitive code in the
    reference distribution (t-closeness)."""
    n_values = int(s_code.max()) + 1 if s_code.size else 1
    pair, inverse = np.unique(key * n_values + s_code, return_inverse=True)
    counts = np.bincount(inverse, weights=cnt).astype(np.float64)
    pair_class, pair_value = pair // n_values, pair % n_values
    size = np.bincount(pair_class, weights=counts, minlength=n_classes)
    ok = np.ones(n_classes, dtype=bool)
    m = models.l_diversity
    if m is not None:
        if m.kind == "distinct":
            ok &= np.bincount(pair_class, minlength=n_classes) >= m.l
        elif m.kind == "entropy":
            plogp = np.bincount(pair_class, weights=counts * np.log(counts), minlength=n_classes)
            with np.errstate(divide="ignore", invalid="ignore"):
                h = np.log(size) - plogp / size
            ok &= ~(np.nan_to_num(h) < math.log(m.l) - EPS)
        else:
            order = np.lexsort((-counts, pair_class))
            cls, cts = pair_class[order], counts[order]
            first = np.searchsorted(cls, np.arange(n_classes))
            rank = np.arange(cls.size) - first[cls]            # 0-based rank within the class
            top = np.zeros(n_classes)
            np.maximum.at(top, cls, cts)
            tail = np.bincount(cls, weights=cts * (rank >= m.l - 1), minlength=n_classes)
            ok &= ~(top >= m.c * tail)
    if models.t_closeness is not None:
        ok &= emd(pair_class, pair_value, counts, size, reference, ordered, n_classes) <= models.t_closeness + EPS
    return ok


def emd(pair_class: np.ndarray, pair_value: np.ndarray, counts: np.ndarray, size: np.ndarray,
        reference: np.ndarray, ordered: bool, n_classes: int, chunk: int = 4096) -> np.ndarray:
    """EMD of each class's distribution to ``reference`` (Li et al. 2007, Section 4.2)."""
    p = counts / size[pair_class]
    if not ordered:
        q = reference[pair_value]
        l1 = np.bincount(pair_class, weights=np.abs(p - q), minlength=n_classes)
        missing = 1.0 - np.bincount(pair_class, weights=q, minlength=n_classes)
        return 0.5 * (l1 + missing)
    m = reference.size
    out = np.zeros(n_classes)
    if m < 2:
        return out
    for lo in range(0, n_classes, chunk):          # dense (classes x values) a chunk at a time
        hi = min(lo + chunk, n_classes)
        sel = (pair_class >= lo) & (pair_class < hi)
        dense = np.zeros((hi - lo, m))
        np.add.at(dense, (pair_class[sel] - lo, pair_value[sel]), p[sel])
        out[lo:hi] = np.abs(np.cumsum(dense - reference, axis=1)).sum(axis=1) / (m - 1)
    return out
